"""DML parity with deltalake 1.6.6 (issue 24): the same calls on copies of one table with deltalake and with
deltakernel; rows, schema, commitInfo and exception types compared.

- `update(new_values=...)`: Python values, exclusive with `updates`, deltalake's exception types and messages;
- `merge(...)` / `update` / `delete` / `TableMerger` accept deltalake's keywords (signatures compared);
- MERGE duplicate matches: only a target row that more than one source row is *acted on* for fails;
- commitInfo `operationParameters.predicate` of DELETE / UPDATE in deltalake's form;
- nanosecond timestamps added by MERGE schema evolution;
- column order after `write_deltalake(..., schema_mode="merge")` on partitioned tables.
"""

from __future__ import annotations

import datetime as dt
import inspect
import shutil
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltakernel
from deltakernel.errors import DeltaError, InvalidFilterError, SchemaError
from deltakernel.operations.dml.merge.api import TableMerger
from deltakernel.operations.dml.merge.plan import MergeDuplicateMatchError

deltalake = pytest.importorskip("deltalake")

TABLE = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int64()),
        "n": pa.array([10, 20, 30], pa.int32()),
        "f": pa.array([1.5, 2.5, 3.5]),
        "s": ["a", "b", "c"],
        "b": [True, False, True],
        "ts": pa.array([dt.datetime(2022, 1, 1)] * 3, pa.timestamp("us", "UTC")),
        "dec": pa.array([Decimal("1.50")] * 3, pa.decimal128(10, 2)),
        "d": pa.array([dt.date(2022, 1, 1)] * 3),
        "p": ["x", "x", "y"],
    }
)


def _copies(tmp_path: Path, data: pa.Table = TABLE, **kwargs: Any) -> tuple[str, str]:
    base = tmp_path / "base"
    deltalake.write_deltalake(str(base), data, **kwargs)
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(base, theirs)
    shutil.copytree(base, ours)
    return str(theirs), str(ours)


def _rows(path: str, key: str = "id") -> list[dict]:
    return sorted(deltalake.DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: (r[key] is None, r[key]))


def _fields(path: str) -> list[tuple[str, str]]:
    return [(f.name, str(f.type)) for f in deltalake.DeltaTable(path).schema().fields]


def _params(path: str) -> dict:
    return deltalake.DeltaTable(path).history(1)[0].get("operationParameters", {})


# ----------------------------------------------------------------------------- update(new_values=...)
NEW_VALUES: dict[str, tuple[dict[str, Any], str | None]] = {
    "int": ({"n": 5}, "id = 1"),
    "int_into_double": ({"f": 7}, None),
    "float": ({"f": 0.25}, "p = 'x'"),
    "float_into_decimal": ({"dec": 2.5}, None),
    "str": ({"s": "zz"}, "id > 1"),
    "str_into_int": ({"n": "42"}, None),
    "bool": ({"b": False}, None),
    "bool_into_str": ({"s": True}, "id = 2"),
    "datetime_utc": ({"ts": dt.datetime(2023, 5, 1, 12, tzinfo=dt.timezone.utc)}, None),
    "several": ({"n": 1, "s": "one", "f": 1.0}, "id = 3"),
}


@pytest.mark.parametrize("case", list(NEW_VALUES))
def test_update_new_values_as_deltalake(tmp_path: Path, case: str) -> None:
    values, predicate = NEW_VALUES[case]
    theirs, ours = _copies(tmp_path, partition_by=["p"])
    expected = deltalake.DeltaTable(theirs).update(new_values=values, predicate=predicate)
    got = deltakernel.DeltaTable(ours).update(new_values=values, predicate=predicate)
    assert _rows(ours) == _rows(theirs)
    assert got["num_updated_rows"] == expected["num_updated_rows"]
    assert _params(ours) == _params(theirs) if predicate is not None else True


def test_update_new_values_beyond_deltalake(tmp_path: Path) -> None:
    """None, date and Decimal: deltalake raises TypeError for them; deltakernel stores them (decisions)."""
    theirs, ours = _copies(tmp_path)
    for values in ({"s": None}, {"d": dt.date(2023, 1, 1)}, {"dec": Decimal("3.25")}):
        with pytest.raises(TypeError, match="Invalid datatype provided in new_values"):
            deltalake.DeltaTable(theirs).update(new_values=values)
    dt_ = deltakernel.DeltaTable(ours)
    dt_.update(new_values={"s": None, "d": dt.date(2023, 1, 1), "dec": Decimal("3.25")}, predicate="id = 2")
    row = next(r for r in _rows(ours) if r["id"] == 2)
    assert row["s"] is None and row["d"] == dt.date(2023, 1, 1) and row["dec"] == Decimal("3.25")
    # an unsupported Python type: deltalake's TypeError and message
    with pytest.raises(TypeError, match="Invalid datatype provided in new_values") as e:
        dt_.update(new_values={"s": object()})
    assert isinstance(e.value, SchemaError) and isinstance(e.value, DeltaError)


UPDATE_ERRORS: dict[str, dict[str, Any]] = {
    "both": {"updates": {"s": "'a'"}, "new_values": {"s": "a"}},
    "neither": {},
    "neither_with_predicate": {"predicate": "id = 1"},
    "updates_not_sql": {"updates": {"s": 1}},
}


@pytest.mark.parametrize("case", list(UPDATE_ERRORS))
def test_update_argument_errors_as_deltalake(tmp_path: Path, case: str) -> None:
    kwargs = UPDATE_ERRORS[case]
    theirs, ours = _copies(tmp_path)
    with pytest.raises(Exception) as expected:
        deltalake.DeltaTable(theirs).update(**kwargs)
    with pytest.raises(type(expected.value)) as got:  # TypeError / ValueError as deltalake
        deltakernel.DeltaTable(ours).update(**kwargs)
    assert str(got.value) == str(expected.value)
    assert isinstance(got.value, DeltaError)
    assert deltakernel.DeltaTable(ours).version() == 0


def test_update_errors_keep_their_former_types(tmp_path: Path) -> None:
    """The deltalake exception types are added, ours kept: `except InvalidFilterError` still catches them."""
    _, ours = _copies(tmp_path)
    with pytest.raises(InvalidFilterError):
        deltakernel.DeltaTable(ours).update(updates={"s": 1})
    with pytest.raises(InvalidFilterError, match="pick one"):
        deltakernel.DeltaTable(ours).update(updates={"s": "'a'"}, new_values={"s": "a"})


# ----------------------------------------------------------------------------- signatures
def _parameters(fn: Callable[..., Any]) -> list[tuple[str, Any]]:
    """Named parameters and defaults (deltalake's `*args` for legacy positional commit options left out)."""
    return [
        (p.name, p.default)
        for p in inspect.signature(fn).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


@pytest.mark.parametrize("method", ["merge", "update", "delete"])
def test_dml_signatures_accept_deltalake_keywords(method: str) -> None:
    assert _parameters(getattr(deltakernel.DeltaTable, method)) == _parameters(getattr(deltalake.DeltaTable, method))


@pytest.mark.parametrize(
    "method",
    [n for n, _ in inspect.getmembers(deltalake.table.TableMerger, inspect.isfunction) if not n.startswith("_")],
)
def test_table_merger_signatures(method: str) -> None:
    assert _parameters(getattr(TableMerger, method)) == _parameters(getattr(deltalake.table.TableMerger, method))


def test_merge_memory_keywords_accepted(tmp_path: Path) -> None:
    theirs, ours = _copies(tmp_path)
    src = pa.table({"id": pa.array([1, 9], pa.int64()), "n": pa.array([5, 9], pa.int32())})
    for mod, path in ((deltalake, theirs), (deltakernel, ours)):
        mod.DeltaTable(path).merge(
            src,
            "t.id = s.id",
            source_alias="s",
            target_alias="t",
            streamed_exec=False,
            max_spill_size=64 * 1024 * 1024,
            max_temp_directory_size=1024**3,
        ).when_matched_update({"n": "s.n"}).when_not_matched_insert({"id": "s.id", "n": "s.n"}).execute()
    assert _rows(ours) == _rows(theirs)


# ----------------------------------------------------------------------------- MERGE duplicate matches
DUP_TARGET = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array([10, 20, 30], pa.int64())})
DUP_SOURCE = pa.table({"id": pa.array([1, 1, 4, 4], pa.int64()), "v": pa.array([100, -1, 40, 41], pa.int64())})
Clauses = Callable[[Any], Any]
DUP_PASS: dict[str, Clauses] = {
    "condition_rejects_one": lambda m: m.when_matched_update_all("s.v > 0"),
    "condition_rejects_all": lambda m: m.when_matched_update_all("s.v > 1000"),
    "conditional_delete_takes_one": lambda m: m.when_matched_delete("s.v < 0"),
    "unconditional_delete": lambda m: m.when_matched_delete(),
    "insert_only": lambda m: m.when_not_matched_insert_all(),
    "update_one_and_insert": lambda m: m.when_matched_update_all("s.v > 0").when_not_matched_insert_all(),
    "delete_and_insert": lambda m: m.when_matched_delete().when_not_matched_insert_all(),
    "rejected_and_insert": lambda m: m.when_matched_update_all("s.v > 1000").when_not_matched_insert_all(),
    "update_one_and_by_source_delete": lambda m: m.when_matched_update(
        {"v": "s.v + t.v"}, "s.v > 0"
    ).when_not_matched_by_source_delete(),
}
DUP_FAIL: dict[str, Clauses] = {
    "update_all": lambda m: m.when_matched_update_all(),
    "two_clauses_act": lambda m: m.when_matched_update_all("s.v > 0").when_matched_delete("s.v < 0"),
    "conditional_delete_takes_both": lambda m: m.when_matched_delete("s.v < 1000"),
    "update_and_insert": lambda m: m.when_matched_update_all().when_not_matched_insert_all(),
}
DUP_MODES = {"cow": None, "dv": {"delta.enableDeletionVectors": "true"}}


def _dv_rows(path: str) -> list[tuple[int, int]]:
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
    return sorted((r["id"], r["v"]) for r in pa.table(qb.execute("select * from t").read_all()).to_pylist())


def _dup_merger(table: Any) -> Any:
    return table.merge(DUP_SOURCE, "t.id = s.id", source_alias="s", target_alias="t")


@pytest.mark.parametrize("mode", list(DUP_MODES))
@pytest.mark.parametrize("case", list(DUP_PASS))
def test_merge_duplicates_pass_as_deltalake(tmp_path: Path, case: str, mode: str) -> None:
    theirs, ours = _copies(tmp_path, DUP_TARGET, configuration=DUP_MODES[mode])
    expected = DUP_PASS[case](_dup_merger(deltalake.DeltaTable(theirs))).execute()
    got = DUP_PASS[case](_dup_merger(deltakernel.DeltaTable(ours))).execute()
    assert _dv_rows(ours) == _dv_rows(theirs)
    for key in ("num_target_rows_inserted", "num_target_rows_updated", "num_target_rows_deleted"):
        assert got[key] == expected[key], key


@pytest.mark.parametrize("mode", list(DUP_MODES))
@pytest.mark.parametrize("case", list(DUP_FAIL))
def test_merge_duplicates_acted_on_twice_fail_as_deltalake(tmp_path: Path, case: str, mode: str) -> None:
    theirs, ours = _copies(tmp_path, DUP_TARGET, configuration=DUP_MODES[mode])
    with pytest.raises(deltalake.exceptions.DeltaError, match="multiple source rows"):
        DUP_FAIL[case](_dup_merger(deltalake.DeltaTable(theirs))).execute()
    with pytest.raises(MergeDuplicateMatchError, match="multiple source rows matched .*the same target row"):
        DUP_FAIL[case](_dup_merger(deltakernel.DeltaTable(ours))).execute()
    assert deltakernel.DeltaTable(ours).version() == 0 and _dv_rows(ours) == _dv_rows(theirs)


def test_merge_by_source_only_with_duplicates_keeps_each_row_once(tmp_path: Path) -> None:
    """deltalake 1.6.6 writes target row 1 twice here (two source rows match it, no matched clause); deltakernel
    and delta-spark keep it once (decisions: a deltalake bug not reproduced)."""
    theirs, ours = _copies(tmp_path, DUP_TARGET)
    _dup_merger(deltalake.DeltaTable(theirs)).when_not_matched_by_source_delete().execute()
    _dup_merger(deltakernel.DeltaTable(ours)).when_not_matched_by_source_delete().execute()
    assert _dv_rows(theirs) == [(1, 10), (1, 10)]
    assert _dv_rows(ours) == [(1, 10)]


# ----------------------------------------------------------------------------- commitInfo predicate
PREDICATES = ["p = 'x'", "p = 'x' AND id = 1", "id > 1"]


@pytest.mark.parametrize("predicate", PREDICATES)
def test_delete_commit_predicate_as_deltalake(tmp_path: Path, predicate: str) -> None:
    theirs, ours = _copies(tmp_path, partition_by=["p"])
    deltalake.DeltaTable(theirs).delete(predicate)
    deltakernel.DeltaTable(ours).delete(predicate)
    assert _params(ours) == _params(theirs) == {"predicate": predicate}
    assert _rows(ours) == _rows(theirs)


@pytest.mark.parametrize("predicate", PREDICATES)
def test_update_commit_predicate_as_deltalake(tmp_path: Path, predicate: str) -> None:
    theirs, ours = _copies(tmp_path, partition_by=["p"])
    deltalake.DeltaTable(theirs).update(updates={"s": "'q'"}, predicate=predicate)
    deltakernel.DeltaTable(ours).update(updates={"s": "'q'"}, predicate=predicate)
    assert _params(ours) == _params(theirs) == {"predicate": predicate}
    assert _rows(ours) == _rows(theirs)


def test_delete_everything_records_no_predicate_as_deltalake(tmp_path: Path) -> None:
    theirs, ours = _copies(tmp_path, partition_by=["p"])
    deltalake.DeltaTable(theirs).delete()
    deltakernel.DeltaTable(ours).delete()
    assert _params(ours) == _params(theirs) == {}


# ----------------------------------------------------------------------------- nanosecond timestamps in MERGE
@pytest.mark.parametrize("tz", ["UTC", "America/New_York", None])
@pytest.mark.parametrize("strict", [True, False])
def test_merge_schema_evolution_nanosecond_timestamps(tmp_path: Path, tz: str | None, strict: bool) -> None:
    theirs, ours = _copies(tmp_path, DUP_TARGET)
    if tz is None:  # deltalake adds timestamp_ntz without its table feature; enable it first on both copies
        for path in (theirs, ours):
            deltalake.DeltaTable(path).alter.add_feature(
                deltalake.TableFeatures.TimestampWithoutTimezone, allow_protocol_versions_increase=True
            )
    nanos = pa.array([1_640_995_200_123_456_789, 1_672_531_200_000_000_001], pa.int64())
    src = pa.table(
        {"id": pa.array([1, 7], pa.int64()), "v": pa.array([5, 7], pa.int64()), "t": nanos.cast(pa.timestamp("ns", tz))}
    )
    for mod, path in ((deltalake, theirs), (deltakernel, ours)):
        mod.DeltaTable(path).merge(
            src, "t.id = s.id", source_alias="s", target_alias="t", merge_schema=True, error_on_type_mismatch=strict
        ).when_matched_update_all().when_not_matched_insert_all().execute()
    assert _fields(ours) == _fields(theirs)
    assert _rows(ours) == _rows(theirs)
    assert next(r for r in _rows(ours) if r["id"] == 1)["t"].microsecond == 123456  # truncated to microseconds


# ----------------------------------------------------------------------------- schema_mode="merge" column order
ORDER_CASES = [
    (["p", "id", "v"], ["p"], ["x", "v", "p", "id", "y"]),
    (["p", "id", "q", "v"], ["q", "p"], ["id", "x", "q", "p", "v"]),
    (["id", "p", "v"], ["p"], ["id", "p", "v", "x"]),
    (["p", "id", "v"], ["p"], ["p", "id", "v"]),  # nothing new: the schema stays as it is
]


def _columns(names: list[str]) -> pa.Table:
    return pa.table({c: (["a"] if c in ("p", "q") else pa.array([1], pa.int64())) for c in names})


@pytest.mark.parametrize("mode", ["append", "overwrite"])
@pytest.mark.parametrize("case", range(len(ORDER_CASES)))
def test_schema_merge_column_order_on_partitioned_tables(tmp_path: Path, case: int, mode: str) -> None:
    cols, parts, new = ORDER_CASES[case]
    theirs, ours = _copies(tmp_path, _columns(cols), partition_by=parts)
    deltalake.write_deltalake(theirs, _columns(new), mode=mode, schema_mode="merge")
    deltakernel.write_deltalake(ours, _columns(new), mode=mode, schema_mode="merge")
    assert _fields(ours) == _fields(theirs)
    assert deltalake.DeltaTable(ours).metadata().partition_columns == parts
    assert _rows(ours) == _rows(theirs)


@pytest.mark.parametrize("op", ["delete", "update"])
def test_commit_predicate_keeps_the_double_quoted_spelling(tmp_path: Path, op: str) -> None:
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "fooBar": pa.array([10, 20], pa.int64()), "p": ["x", "y"]})
    theirs, ours = _copies(tmp_path, data, partition_by=["p"])
    predicate = '"fooBar" = 10'
    for mod, path in ((deltalake, theirs), (deltakernel, ours)):
        table = mod.DeltaTable(path)
        table.delete(predicate) if op == "delete" else table.update(updates={"id": "id + 1"}, predicate=predicate)
    assert _params(ours) == _params(theirs) == {"predicate": predicate}
    assert _rows(ours) == _rows(theirs)
