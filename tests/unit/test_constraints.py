"""operations/constraints.py: the Enforcer, directly on batches, differential against deltalake's writer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

deltalake = pytest.importorskip("deltalake")
from deltalake import DeltaTable as DL
from deltalake import write_deltalake
from deltalake.schema import Field, PrimitiveType, Schema

import deltakernel
from deltakernel.errors import ConstraintViolationError
from deltakernel.kernel.log.actions import Metadata, Protocol
from deltakernel.operations.write.enforcement import Enforcer


def _md(fields: list[dict[str, Any]], conf: dict[str, str] | None = None) -> Metadata:
    return Metadata("id", json.dumps({"type": "struct", "fields": fields}), (), conf or {})


ALL = Protocol(3, 7, frozenset(), frozenset({"identityColumns", "invariants", "generatedColumns",
                                             "allowColumnDefaults", "checkConstraints"}))


def _f(name: str, typ: Any, nullable: bool = True, **meta: Any) -> dict[str, Any]:
    return {"name": name, "type": typ, "nullable": nullable, "metadata": meta}


def _enforcer_for(path: Path) -> Enforcer:
    t = deltakernel.DeltaTable(str(path))
    return Enforcer(t.metadata(), t.protocol())


def _deltalake_accepts(path: Path, data: pa.Table) -> bool:
    try:
        write_deltalake(str(path), data, mode="append")
        return True
    except Exception as e:  # deltalake raises its own DeltaError for violations
        assert "validation" in str(e) or "Invariant" in str(e) or "violat" in str(e).lower(), e
        return False


def _we_accept(enforcer: Enforcer, data: pa.Table) -> bool:
    try:
        enforcer.prepare(data)
        return True
    except ConstraintViolationError:
        return False


CHECK_CASES = [
    pa.table({"x": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}),
    pa.table({"x": pa.array([0], pa.int64()), "s": ["a"]}),
    pa.table({"x": pa.array([None], pa.int64()), "s": ["a"]}),  # NULL result: violation in both
    pa.table({"x": pa.array([5, 500], pa.int64()), "s": ["a", "b"]}),
    pa.table({"x": pa.array([5], pa.int64()), "s": ["zzz"]}),
    pa.table({"x": pa.array([5], pa.int64()), "s": [None]}),
]


@pytest.mark.parametrize("case", range(len(CHECK_CASES)))
def test_check_constraints_differential(tmp_path: Path, case: int) -> None:
    p = tmp_path / "t"
    write_deltalake(str(p), pa.table({"x": pa.array([1], pa.int64()), "s": ["a"]}))
    for name, expr in {"pos": "x > 0", "small": "x < 100", "nz": "s <> 'zzz'"}.items():
        DL(str(p)).alter.add_constraint({name: expr})
    ours = _we_accept(_enforcer_for(p), CHECK_CASES[case])
    assert ours == _deltalake_accepts(p, CHECK_CASES[case])


GEN_CASES = [
    pa.table({"a": pa.array([1, 2], pa.int64())}),
    pa.table({"a": pa.array([1, 2], pa.int64()), "g": pa.array([2, 4], pa.int64())}),
    pa.table({"a": pa.array([1, 2], pa.int64()), "g": pa.array([2, 5], pa.int64())}),
    pa.table({"a": pa.array([1, None], pa.int64()), "g": pa.array([2, None], pa.int64())}),
    pa.table({"a": pa.array([None], pa.int64()), "g": pa.array([0], pa.int64())}),
    pa.table({"a": pa.array([3], pa.int64()), "g": pa.array([None], pa.int64())}),
]


@pytest.mark.parametrize("case", range(len(GEN_CASES)))
def test_generated_columns_differential(tmp_path: Path, case: int) -> None:
    p = tmp_path / "t"
    sch = Schema([Field("a", PrimitiveType("long")),
                  Field("g", PrimitiveType("long"), metadata={"delta.generationExpression": "a * 2"})])
    DL.create(str(p), sch)
    enforcer = _enforcer_for(p)
    data = GEN_CASES[case]
    ours = _we_accept(enforcer, data)
    assert ours == _deltalake_accepts(p, data)
    if ours:
        out = enforcer.prepare(data)
        assert out.column("g").to_pylist() == [None if a is None else a * 2 for a in data.column("a").to_pylist()]


def test_computed_generated_matches_deltalake(tmp_path: Path) -> None:
    p = tmp_path / "t"
    sch = Schema([Field("ts", PrimitiveType("timestamp")), Field("name", PrimitiveType("string")),
                  Field("d", PrimitiveType("date"), metadata={"delta.generationExpression": "CAST(ts AS DATE)"}),
                  Field("u", PrimitiveType("string"), metadata={"delta.generationExpression": "upper(name)"})])
    DL.create(str(p), sch)
    import datetime as dt
    data = pa.table({"ts": pa.array([dt.datetime(2023, 12, 31, 23, 59, tzinfo=dt.timezone.utc), None],
                                    pa.timestamp("us", tz="UTC")), "name": ["ab", None]})
    ours = _enforcer_for(p).prepare(data)
    write_deltalake(str(p), data, mode="append")
    theirs = DL(str(p)).to_pyarrow_table()
    for col in ("d", "u"):
        assert ours.column(col).to_pylist() == theirs.column(col).to_pylist()


def test_not_null_nested_and_top_level() -> None:
    st = {"type": "struct", "fields": [_f("q", "integer", False)]}
    e = Enforcer(_md([_f("a", "integer", False), _f("s", st, True)]), ALL)
    good = pa.table({"a": pa.array([1, 2], pa.int32()),
                     "s": pa.array([{"q": 1}, None], pa.struct([("q", pa.int32())]))})
    assert e.prepare(good).num_rows == 2  # a NULL parent struct does not violate its NOT NULL child
    with pytest.raises(ConstraintViolationError, match=r"'a'.*'a': None"):
        e.prepare(pa.table({"a": pa.array([1, None], pa.int32())}))
    with pytest.raises(ConstraintViolationError, match=r"'s\.q'"):
        e.prepare(pa.table({"a": pa.array([1], pa.int32()), "s": pa.array([{"q": None}], pa.struct([("q", pa.int32())]))}))
    with pytest.raises(ConstraintViolationError):  # absent non-nullable column becomes NULL
        e.prepare(pa.table({"s": pa.array([None], pa.struct([("q", pa.int32())]))}))


def test_invariants_null_is_violation_and_nested() -> None:
    inv = json.dumps({"expression": {"expression": "a > 3"}})
    nested_inv = json.dumps({"expression": {"expression": "s.q < 10"}})
    st = {"type": "struct", "fields": [_f("q", "integer", True, **{"delta.invariants": nested_inv})]}
    e = Enforcer(_md([_f("a", "integer", True, **{"delta.invariants": inv}), _f("s", st)]), ALL)
    e.prepare(pa.table({"a": pa.array([4], pa.int32()), "s": pa.array([{"q": 1}], pa.struct([("q", pa.int32())]))}))
    with pytest.raises(ConstraintViolationError, match=r"invariant on column 'a' \(a > 3\).*\{'a': 3"):
        e.prepare(pa.table({"a": pa.array([4, 3], pa.int32())}))
    with pytest.raises(ConstraintViolationError):
        e.prepare(pa.table({"a": pa.array([None], pa.int32())}))
    with pytest.raises(ConstraintViolationError, match="s.q"):
        e.prepare(pa.table({"a": pa.array([4], pa.int32()), "s": pa.array([{"q": 11}], pa.struct([("q", pa.int32())]))}))


def test_invariants_differential(tmp_path: Path) -> None:
    p = tmp_path / "t"
    inv = json.dumps({"expression": {"expression": "x > 3"}})
    DL.create(str(p), Schema([Field("x", PrimitiveType("integer"), metadata={"delta.invariants": inv})]))
    e = _enforcer_for(p)
    for xs in ([4, 5], [3], [None], [10, 2]):
        data = pa.table({"x": pa.array(xs, pa.int32())})
        assert _we_accept(e, data) == _deltalake_accepts(p, data), xs


def test_identity_generation_and_high_water_mark() -> None:
    ident = {"delta.identity.start": 10, "delta.identity.step": 5, "delta.identity.allowExplicitInsert": False}
    e = Enforcer(_md([_f("id", "long", False, **ident), _f("a", "integer")]), ALL)
    b = pa.record_batch({"a": pa.array([1, 2], pa.int32())})
    out = e.prepare(b)
    assert isinstance(out, pa.RecordBatch)
    assert out.column(0).to_pylist() == [10, 15] and e.identity_updates() == {"id": 15}
    assert e.prepare(b).column(0).to_pylist() == [20, 25] and e.identity_updates() == {"id": 25}
    with pytest.raises(ConstraintViolationError, match="IDENTITY"):
        e.prepare(pa.table({"a": pa.array([1], pa.int32()), "id": pa.array([1], pa.int64())}))
    assert e.updated_metadata().schema.field("id").metadata["delta.identity.highWaterMark"] == 25
    # continuing from a stored high-water mark, negative step
    e2 = Enforcer(_md([_f("id", "long", False, **{"delta.identity.start": 0, "delta.identity.step": -2,
                                                  "delta.identity.highWaterMark": -6})]), ALL)
    assert e2.prepare(pa.table({"x": [1, 2]})).column("id").to_pylist() == [-8, -10]


def test_identity_hwm_not_advanced_by_failed_batch() -> None:
    ident = {"delta.identity.start": 1, "delta.identity.step": 1}
    e = Enforcer(_md([_f("id", "long", False, **ident), _f("a", "integer")], {"delta.constraints.c": "a > 0"}), ALL)
    with pytest.raises(ConstraintViolationError):
        e.prepare(pa.table({"a": pa.array([0], pa.int32())}))
    assert e.identity_updates() == {}
    assert e.prepare(pa.table({"a": pa.array([1], pa.int32())})).column("id").to_pylist() == [1]


def test_explicit_identity_allowed() -> None:
    ident = {"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": True}
    e = Enforcer(_md([_f("id", "long", False, **ident)]), ALL)
    assert e.prepare(pa.table({"id": pa.array([42], pa.int64())})).column("id").to_pylist() == [42]
    assert e.identity_updates() == {}


def test_defaults_only_with_feature() -> None:
    fields = [_f("a", "integer"), _f("d", "string", True, CURRENT_DEFAULT="'dflt'"),
              _f("n", "long", True, CURRENT_DEFAULT="40 + 2")]
    out = Enforcer(_md(fields), ALL).prepare(pa.table({"a": pa.array([1], pa.int32())}))
    assert out.to_pylist() == [{"a": 1, "d": "dflt", "n": 42}]
    assert out.schema.field("n").type == pa.int64()
    off = Enforcer(_md(fields), Protocol(1, 2)).prepare(pa.table({"a": pa.array([1], pa.int32())}))
    assert off.to_pylist() == [{"a": 1, "d": None, "n": None}]
    given = Enforcer(_md(fields), ALL).prepare(pa.table({"a": pa.array([1], pa.int32()), "d": ["mine"]}))
    assert given.column("d").to_pylist() == ["mine"]


def test_features_gate_enforcement() -> None:
    fields = [_f("a", "long"), _f("g", "long", True, **{"delta.generationExpression": "a + 1"})]
    md = _md(fields, {"delta.constraints.c": "a > 0"})
    lenient = Enforcer(md, Protocol(1, 2))  # no checkConstraints / generatedColumns in the protocol
    assert lenient.prepare(pa.table({"a": [-1], "g": [7]})).num_rows == 1
    with pytest.raises(ConstraintViolationError, match="CHECK constraint c"):
        Enforcer(md, Protocol(1, 4)).prepare(pa.table({"a": [-1], "g": [0]}))


def test_error_message_names_everything() -> None:
    e = Enforcer(_md([_f("x", "long"), _f("s", "string")], {"delta.constraints.positive": "x > 0"}), ALL)
    with pytest.raises(ConstraintViolationError) as info:
        e.prepare(pa.table({"x": [5, -1, -2], "s": ["a", "b", "c"]}))
    msg = str(info.value)
    assert "positive" in msg and "x > 0" in msg and "{'x': -1, 's': 'b'}" in msg and "2 row" in msg


def test_output_keeps_schema_order_and_extras() -> None:
    e = Enforcer(_md([_f("a", "long"), _f("b", "string")]), ALL)
    out = e.prepare(pa.table({"extra": [1], "b": ["x"], "a": [2]}))
    assert out.schema.names == ["a", "b", "extra"]
    assert e.prepare(pa.table({"a": pa.array([], pa.int64())})).num_rows == 0
