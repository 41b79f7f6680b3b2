"""Stats of written files take min/max from the Parquet footers: they must equal a full pass over the data.

`collect_stats` (the collector folding every batch itself) is the oracle; the writer's stats come from
`StatsCollector(footer_min_max=True)` + the footer of each file. Files are split into several row groups
and several files so that footer folding across row groups and files is exercised.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.kernel.schema.arrow import from_arrow_schema
from deltakernel.kernel.stats.collect import collect_stats
from deltakernel.operations.files.parquet_writer import WriterProperties

_STRUCT = pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.struct([("d", pa.float64())]))])


def _table(seed: int, n: int) -> pa.Table:
    rnd = random.Random(seed)

    def maybe(v: object, p: float = 0.15) -> object:
        return None if rnd.random() < p else v

    floats = [maybe(rnd.choice([rnd.uniform(-1e6, 1e6), 0.0, -0.0, float("inf"), float("-inf"), float("nan")]))
              for _ in range(n)]
    return pa.table({
        "i8": pa.array([maybe(rnd.randint(-128, 127)) for _ in range(n)], pa.int8()),
        "i16": pa.array([maybe(rnd.randint(-(2**15), 2**15 - 1)) for _ in range(n)], pa.int16()),
        "i32": pa.array([maybe(rnd.randint(-(2**31), 2**31 - 1)) for _ in range(n)], pa.int32()),
        "i64": pa.array([maybe(rnd.randint(-(2**63), 2**63 - 1)) for _ in range(n)], pa.int64()),
        "f32": pa.array([maybe(rnd.uniform(-10, 10)) for _ in range(n)], pa.float32()),
        "f64": pa.array(floats, pa.float64()),
        "dec": pa.array([maybe(decimal.Decimal(rnd.randint(-10**9, 10**9)) / 1000) for _ in range(n)],
                        pa.decimal128(18, 3)),
        "day": pa.array([maybe(dt.date(1900, 1, 1) + dt.timedelta(days=rnd.randint(0, 80000))) for _ in range(n)],
                        pa.date32()),
        "ts": pa.array([maybe(rnd.randint(-(10**15), 10**16)) for _ in range(n)], pa.timestamp("us", "UTC")),
        "ntz": pa.array([maybe(rnd.randint(0, 10**16)) for _ in range(n)], pa.timestamp("us")),
        "s": pa.array([maybe("".join(rnd.choice("aé😀z\u00ff ~") for _ in range(rnd.randint(0, 60))))
                       for _ in range(n)], pa.string()),
        "st": pa.array([maybe({"a": maybe(rnd.randint(0, 9)), "b": maybe(str(rnd.random())),
                               "c": maybe({"d": maybe(rnd.random())})}) for _ in range(n)], _STRUCT),
        "flag": pa.array([maybe(rnd.random() < 0.5) for _ in range(n)], pa.bool_()),
        "lst": pa.array([maybe([rnd.randint(0, 3)]) for _ in range(n)], pa.list_(pa.int64())),
    })


def _stats_by_file(path: Path) -> list[tuple[str, dict[str, object]]]:
    files = DeltaTable(path)._snapshot.files
    return [(p, json.loads(s)) for p, s in zip(files.column("path").to_pylist(), files.column("stats").to_pylist())]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_footer_min_max_equals_a_full_pass(tmp_path: Path, seed: int) -> None:
    data = _table(seed, 3000)
    path = tmp_path / "t"
    # small row groups and files: several row groups per file, several files
    write_deltalake(path, data, writer_properties=WriterProperties(max_row_group_size=400),
                    target_file_size=120_000)
    per_file = _stats_by_file(path)
    assert len(per_file) > 1
    schema = from_arrow_schema(data.schema)
    total = 0
    for rel, stats in per_file:
        pf = pq.ParquetFile(path / rel)
        assert pf.metadata.num_row_groups >= 1
        content = pf.read()
        total += content.num_rows
        assert stats == json.loads(collect_stats(content, schema)), rel
    assert total == data.num_rows
    assert any(pq.ParquetFile(path / rel).metadata.num_row_groups > 1 for rel, _ in per_file)


def test_all_nan_and_all_null_row_groups(tmp_path: Path) -> None:
    data = pa.table({
        "x": pa.array([float("nan")] * 5 + [None] * 5 + [1.5, -2.0, float("nan"), None, 3.0], pa.float64()),
        "y": pa.array([None] * 10 + [1, 2, 3, 4, 5], pa.int64()),
    })
    path = tmp_path / "t"
    write_deltalake(path, data, writer_properties=WriterProperties(max_row_group_size=5))
    [(rel, stats)] = _stats_by_file(path)
    assert pq.ParquetFile(path / rel).metadata.num_row_groups == 3
    assert stats == json.loads(collect_stats(data, from_arrow_schema(data.schema)))
    assert stats["minValues"] == {"x": -2.0, "y": 1} and stats["maxValues"] == {"y": 5}  # NaN drops x's max


def test_long_strings_leave_the_column_unbounded_never_too_narrow(tmp_path: Path) -> None:
    """Arrow omits a chunk's min/max when the min or max exceeds 4 KiB: that file gets no bounds for the column."""
    data = pa.table({"s": ["z" * 5000, "a", "m"], "n": [1, 2, 3]})
    path = tmp_path / "t"
    write_deltalake(path, data)
    [(_, stats)] = _stats_by_file(path)
    assert "s" not in stats["minValues"] and "s" not in stats["maxValues"]
    assert stats["nullCount"]["s"] == 0 and stats["minValues"]["n"] == 1
    # a long value that is neither min nor max keeps exact footer bounds
    write_deltalake(tmp_path / "u", pa.table({"s": ["m" * 5000, "a", "z"]}))
    [(_, stats)] = _stats_by_file(tmp_path / "u")
    assert stats["minValues"] == {"s": "a"} and stats["maxValues"] == {"s": "z"}
    dt_ = DeltaTable(path)
    for value in ("a", "m", "z" * 5000):
        assert dt_.to_pyarrow_table(filters=[("s", "=", value)]).num_rows == 1


def test_statistics_disabled_still_writes_delta_stats(tmp_path: Path) -> None:
    data = pa.table({"n": pa.array([5, 1, 9], pa.int64()), "s": ["b", "a", "c"]})
    path = tmp_path / "t"
    write_deltalake(path, data, writer_properties=WriterProperties(statistics_enabled=False))
    [(rel, stats)] = _stats_by_file(path)
    assert not pq.ParquetFile(path / rel).metadata.row_group(0).column(0).is_stats_set
    assert stats["minValues"] == {"n": 1, "s": "a"} and stats["maxValues"] == {"n": 9, "s": "c"}


def test_dotted_field_names_fall_back_to_the_full_pass(tmp_path: Path) -> None:
    data = pa.table({"a.b": pa.array([3, 1], pa.int64()),
                     "a": pa.array([{"b": 7}, {"b": 8}], pa.struct([("b", pa.int64())]))})
    path = tmp_path / "t"
    write_deltalake(path, data)
    [(_, stats)] = _stats_by_file(path)
    assert stats["minValues"] == {"a.b": 1, "a": {"b": 7}}
    assert stats["maxValues"] == {"a.b": 3, "a": {"b": 8}}
