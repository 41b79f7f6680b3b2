"""DataFusion tests need the optional `datafusion` extra. The tables several test files query are made here once
(the listing path, the dataset provider's native reader and the pyarrow / kernel path are compared on them)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("datafusion")

import pyarrow as pa

from deltakernel import write_deltalake


@pytest.fixture(scope="session")
def ranges(tmp_path_factory: pytest.TempPathFactory) -> str:
    """6 unpartitioned files (one commit each), disjoint id ranges of 1,000, with NULLs in `x` and `s`.
    Read-only: tests that change a table make their own."""
    path = str(tmp_path_factory.mktemp("df-shared") / "ranges")
    for k in range(6):
        ids = list(range(k * 1000, (k + 1) * 1000))
        write_deltalake(path, pa.table({
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([None if i % 7 == 0 else i % 5 for i in ids], pa.int32()),
            "s": pa.array([None if i % 11 == 0 else f"s{i % 13}" for i in ids]),
            "ts": pa.array([i * 1_000_000 for i in ids], pa.timestamp("us", tz="UTC")),
            "d": pa.array([f"{i}.125" for i in ids]).cast(pa.decimal128(10, 3)),
        }), mode="append")
    return path


def write_parts(path: str) -> str:
    """12 rows partitioned by a string `p` and an int `q`, NULL partition values in both (one file per pair)."""
    write_deltalake(path, pa.table({
        "v": pa.array(range(12), pa.int64()),
        "p": pa.array(["a", "b", None] * 4),
        "q": pa.array([1, 2, 3, None] * 3, pa.int32()),
    }), partition_by=["p", "q"])
    return path


@pytest.fixture
def parts_table() -> Callable[[str], str]:
    return write_parts
