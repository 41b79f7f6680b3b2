"""`WriterProperties(statistics_truncate_length=n)`: string min/max in the Delta statistics are cut to n
characters (max with a tie-breaker, so it stays an upper bound), on every write path; file skipping, deltalake
and DuckDB still return exactly the matching rows (no false negatives)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from deltakernel import DeltaTable, WriterProperties, write_deltalake
from deltakernel.kernel.stats.collect import (
    DEFAULT_STRING_PREFIX_LENGTH,
    MAX_CHAR,
    TIE_BREAKER,
    truncate_max_string,
    truncate_min_string,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import helpers

deltalake = pytest.importorskip("deltalake")

#: characters around the tie-breakers and outside the BMP, where truncation is easy to get wrong
_ALPHABET = ["a", "b", "z", "~", "\x7f", "é", "中", "\ufffc", TIE_BREAKER, "\ufffe", "\U0001f600", MAX_CHAR]


def _random_string(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(n))


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


def _stats(uri: str | Path, version: int | None = None) -> list[dict[str, Any]]:
    """The stats documents of the live files."""
    dt = DeltaTable(str(uri), version=version)
    return [json.loads(s) for s in dt.snapshot.files.column("stats").to_pylist()]


def _rows_by_file(uri: str | Path) -> dict[str, pa.Table]:
    """Each live file's rows, read straight from Parquet (the oracle for its true min/max)."""
    dt = DeltaTable(str(uri))
    return {p: ds.dataset(str(Path(uri) / p), format="parquet").to_table()
            for p in dt.snapshot.files.column("path").to_pylist()}


def _check_bounds(uri: str | Path, column: str, n: int) -> int:
    """Every file's min/max of `column` is a true bound of its values and cut as the property says; returns the
    number of truncated max values seen."""
    dt = DeltaTable(str(uri))
    truncated = 0
    files = _rows_by_file(uri)
    for path, stats in zip(dt.snapshot.files.column("path").to_pylist(), _stats(uri)):
        values = [v for v in files[path].column(column).to_pylist() if v is not None]
        lo, hi = stats["minValues"][column], stats["maxValues"][column]
        assert lo == min(values)[:n], (path, lo)  # a prefix of the true min: a lower bound
        assert all(_utf8(hi) >= _utf8(v) for v in values), (path, hi)  # byte (= code point) order upper bound
        true_max = max(values)
        if len(true_max) <= n:
            assert hi == true_max
        else:
            truncated += 1
            assert hi.startswith(true_max[:n]) and hi[-1] in (TIE_BREAKER, MAX_CHAR)
            assert len(hi) <= n + 1 or set(hi[n:-1]) == {MAX_CHAR}
    return truncated


# ----------------------------------------------------------------------------- the rule itself
@pytest.mark.parametrize("n", [1, 2, 5, 32])
def test_truncated_bounds_enclose_every_value(n: int) -> None:
    rng = random.Random(n)
    for _ in range(3000):
        values = [_random_string(rng, rng.randint(0, n + 4)) for _ in range(rng.randint(1, 5))]
        lo, hi = truncate_min_string(min(values), n), truncate_max_string(max(values), n)
        for v in values:
            assert lo <= v and _utf8(lo) <= _utf8(v)
            assert v <= hi and _utf8(v) <= _utf8(hi), (v, hi)


def test_property_validation_and_deltalake_objects() -> None:
    assert WriterProperties().stats_string_prefix() == DEFAULT_STRING_PREFIX_LENGTH == 32
    assert WriterProperties(statistics_truncate_length=7).stats_string_prefix() == 7
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="statistics_truncate_length"):
            WriterProperties(statistics_truncate_length=bad)  # type: ignore[arg-type]
    # deltalake's own WriterProperties is read attribute by attribute
    theirs = deltalake.WriterProperties(statistics_truncate_length=4)
    assert WriterProperties.coerce(theirs).stats_string_prefix() == 4


# ----------------------------------------------------------------------------- the write paths
def _long_strings(n_files: int, rows: int, seed: int) -> list[pa.Table]:
    """Files whose strings share long prefixes per file (so skipping needs more than n characters to be exact)."""
    rng = random.Random(seed)
    out = []
    for f in range(n_files):
        prefix = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"][f % 6] + "-" * (f % 3)
        s = [prefix + _random_string(rng, rng.randint(0, 40)) for _ in range(rows)]
        s[rng.randrange(rows)] = None  # type: ignore[call-overload]
        out.append(pa.table({"id": pa.array(range(f * rows, (f + 1) * rows), pa.int64()),
                             "s": pa.array(s, pa.string())}))
    return out


def test_write_truncates_to_the_property_and_the_default_stays_32(tmp_path: Path) -> None:
    parts = _long_strings(6, 50, seed=1)
    short, default = tmp_path / "short", tmp_path / "default"
    for p in parts:
        write_deltalake(short, p, mode="append", writer_properties=WriterProperties(statistics_truncate_length=5))
        write_deltalake(default, p, mode="append")
    assert _check_bounds(short, "s", 5) == 6
    assert _check_bounds(default, "s", 32) > 0  # strings go up to ~47 characters
    assert all(len(st["minValues"]["s"]) <= 5 for st in _stats(short))
    assert any(len(st["minValues"]["s"]) > 5 for st in _stats(default))


def _expressions(values: list[str]) -> list[tuple[str, Any]]:
    """Predicates on `s` as (DNF filter) tuples, around real values and their prefixes."""
    out: list[tuple[str, Any]] = []
    for v in values:
        for op in ("=", "<", "<=", ">", ">="):
            out.append((op, v))
        out.append((">=", v[:3]))
        out.append(("<", v[:6] + TIE_BREAKER))
    out.append(("in", values[:3]))
    return out


def _oracle(table: pa.Table, op: str, value: Any) -> pa.Table:
    col = table.column("s")
    fn = {"=": pc.equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}
    mask = pc.is_in(col, value_set=pa.array(value, pa.string())) if op == "in" else fn[op](col, value)
    return table.filter(mask)


def test_skipping_with_truncated_stats_has_no_false_negatives(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    parts = _long_strings(12, 40, seed=2)
    props = WriterProperties(statistics_truncate_length=3)
    for p in parts:
        write_deltalake(uri, p, mode="append", writer_properties=props)
    full = pa.concat_tables(parts)
    rng = random.Random(3)
    sample = [v for v in rng.sample(full.column("s").drop_null().to_pylist(), 6)]
    dt = DeltaTable(str(uri))
    theirs = deltalake.DeltaTable(str(uri))
    pruned_somewhere = False
    for op, value in _expressions(sample):
        expected = _oracle(full, op, value)
        filters = [("s", op, value)]
        helpers.assert_same_rows(dt.to_pyarrow_table(filters=filters), expected, f"ours {op} {value!r}")
        helpers.assert_same_rows(pa.table(theirs.to_pyarrow_table(filters=filters)), expected,
                                 f"deltalake {op} {value!r}")
        # the pyarrow dataset's fragment guarantees come from the same bounds (pyarrow and DuckDB skip on them)
        expr = ds.field("s").isin(value) if op == "in" else {
            "=": ds.field("s") == value, "<": ds.field("s") < value, "<=": ds.field("s") <= value,
            ">": ds.field("s") > value, ">=": ds.field("s") >= value}[op]
        helpers.assert_same_rows(dt.to_pyarrow_dataset().to_table(filter=expr), expected, f"dataset {op} {value!r}")
        planned = dt.scan(filters=filters).plan().num_rows
        pruned_somewhere = pruned_somewhere or planned < len(parts)
    assert pruned_somewhere, "3-character bounds still separate files with different prefixes"
    # DataFusion inside deltalake (delta-kernel-rs skipping on our stats) and DuckDB's delta extension
    v = sample[0]
    qb = deltalake.QueryBuilder().register("t", theirs)
    got = qb.execute(f"SELECT id, s FROM t WHERE s = '{v}'").read_all()
    helpers.assert_same_rows(pa.table(got), _oracle(full, "=", v), "deltalake QueryBuilder")
    helpers.assert_same_rows(helpers.duckdb_table(uri), full, "DuckDB")
    con = helpers.duckdb_connection()
    rows = con.execute("SELECT id FROM delta_scan(?) WHERE s = ?", [str(uri), v]).fetchall()
    assert sorted(r[0] for r in rows) == sorted(_oracle(full, "=", v).column("id").to_pylist())


def test_optimize_and_dml_follow_the_property(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    for p in _long_strings(4, 30, seed=4):
        write_deltalake(uri, p, mode="append")
    props = WriterProperties(statistics_truncate_length=4)
    dt = DeltaTable(str(uri))
    metrics = dt.optimize.compact(writer_properties=props)
    assert metrics["numFilesRemoved"] == 4 and metrics["numFilesAdded"] == 1
    assert _check_bounds(uri, "s", 4) == 1
    dt = DeltaTable(str(uri))
    dt.update(updates={"s": "concat(s, '-updated-with-a-long-suffix')"}, predicate="id < 10",
              writer_properties=WriterProperties(statistics_truncate_length=2))
    stats = _stats(uri)
    assert min(len(st["minValues"]["s"]) for st in stats) <= 2  # the rewritten file
    _check_bounds_any(uri)
    helpers.assert_same_rows(helpers.deltalake_table(uri), DeltaTable(str(uri)).to_pyarrow_table(), "deltalake")


def _check_bounds_any(uri: Path) -> None:
    """Every file's bounds enclose its values, whatever its truncation length."""
    dt = DeltaTable(str(uri))
    files = _rows_by_file(uri)
    for path, stats in zip(dt.snapshot.files.column("path").to_pylist(), _stats(uri)):
        values = [v for v in files[path].column("s").to_pylist() if v is not None]
        lo, hi = stats["minValues"]["s"], stats["maxValues"]["s"]
        assert all(_utf8(lo) <= _utf8(v) <= _utf8(hi) for v in values), path
