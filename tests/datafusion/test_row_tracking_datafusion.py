"""Row ids on DataFusion: `register(..., row_tracking=True)` exposes `_row_id` / `_row_commit_version` with
exactly the kernel's values, after rewrites and deletion vectors, in projections and filters."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import DeltaError

datafusion = pytest.importorskip("datafusion")
import deltakernel.datafusion as dkdf


def _table(tmp_path: Path) -> str:
    p = str(tmp_path / "rt")
    write_deltalake(p, pa.table({"p": ["a", "a", "b"], "v": pa.array([1, 2, 3], pa.int64())}), partition_by=["p"],
                    configuration={"delta.enableRowTracking": "true"})
    write_deltalake(p, pa.table({"p": ["b"], "v": pa.array([4], pa.int64())}), mode="append")
    # a partial rewrite: rows 1 and 3 keep their ids through materialized columns
    write_deltalake(p, pa.table({"p": ["a"], "v": pa.array([20], pa.int64())}), mode="overwrite",
                    predicate="v >= 2 AND v <= 20 AND p = 'a'")
    return p


def test_row_ids_match_the_kernel(tmp_path: Path) -> None:
    p = _table(tmp_path)
    ours = DeltaTable(p).to_pyarrow_table(row_tracking=True)
    expected = sorted((r["v"], r["_row_id"], r["_row_commit_version"]) for r in ours.to_pylist())
    ctx = datafusion.SessionContext()
    dkdf.register(ctx, "t", p, row_tracking=True)
    got = ctx.sql("SELECT v, _row_id, _row_commit_version FROM t").to_arrow_table().to_pylist()
    assert sorted((r["v"], r["_row_id"], r["_row_commit_version"]) for r in got) == expected
    one = ctx.sql(f"SELECT v FROM t WHERE _row_id = {expected[0][1]}").to_arrow_table().column("v").to_pylist()
    assert one == [expected[0][0]]
    # the hidden materialized columns never show
    assert set(ctx.sql("SELECT * FROM t").to_arrow_table().column_names) == {"p", "v", "_row_id",
                                                                           "_row_commit_version"}


def test_row_tracking_option_refused_without_row_tracking(tmp_path: Path) -> None:
    p = str(tmp_path / "plain")
    write_deltalake(p, pa.table({"v": [1]}))
    with pytest.raises(DeltaError):
        dkdf.register(datafusion.SessionContext(), "t", p, row_tracking=True)
