"""The embedded engine's round trip on one interpreter: `test_pythons.py` runs it with the python of a venv that
installed deltakernel from a wheel or sdist of the tree (never the tree itself: the script checks where deltakernel
was imported from, with `--installed`). Write, append, read with a filter and time travel, DELETE, UPDATE, MERGE, OPTIMIZE (compact and
Z-order), VACUUM, the SQL front end; each step asserts its rows and prints `ok <step>`.
Usage: `python _pythons_smoke.py <scratch dir> [--installed]`.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    root = Path(sys.argv[1])
    import pyarrow as pa

    import deltakernel
    from deltakernel import DeltaTable, QueryBuilder, write_deltalake

    where = Path(deltakernel.__file__).resolve()
    if "--installed" in sys.argv:
        assert "site-packages" in where.parts, f"deltakernel imported from {where}, not from the venv"
    print(f"python {sys.version.split()[0]} deltakernel {where.parent}", flush=True)

    def ok(step: str) -> None:
        print(f"ok {step}", flush=True)

    def ids(t: pa.Table) -> list[int]:
        return sorted(t.column("id").to_pylist())

    path = str(root / "t")
    write_deltalake(path, pa.table({"id": list(range(50)), "s": [str(i) for i in range(50)]}))
    write_deltalake(path, pa.table({"id": list(range(100, 150)), "s": [str(i) for i in range(100, 150)]}),
                    mode="append")
    ok("write+append")

    dt = DeltaTable(path)
    assert dt.version() == 1 and dt.to_pyarrow_table().num_rows == 100
    assert ids(dt.to_pyarrow_table(filters=[("id", ">=", 140)])) == list(range(140, 150))
    assert dt.scan(filters=[("id", ">=", 140)]).metrics is not None
    assert ids(DeltaTable(path, version=0).to_pyarrow_table()) == list(range(50))
    ok("read+time travel")

    metrics = dt.delete("id % 10 = 0")
    assert metrics["num_deleted_rows"] == 10, metrics
    dt.update(updates={"s": "'u'"}, predicate="id = 1")
    got = dict(zip(*DeltaTable(path).to_pyarrow_table().to_pydict().values()))
    assert len(got) == 90 and got[1] == "u", got
    ok("delete+update")

    source = pa.table({"id": [2, 3, 500], "s": ["m2", "m3", "m500"]})
    (DeltaTable(path).merge(source, "t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())
    got = dict(zip(*DeltaTable(path).to_pyarrow_table().to_pydict().values()))
    assert len(got) == 91 and got[2] == "m2" and got[500] == "m500", got
    ok("merge")

    dt = DeltaTable(path)
    dt.optimize.compact()
    dt = DeltaTable(path)
    dt.optimize.z_order(["id"])
    dt = DeltaTable(path)
    assert len(dt.files()) == 1 and dt.to_pyarrow_table().num_rows == 91
    ok("optimize")

    removed = dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert removed, "vacuum removed nothing after OPTIMIZE"
    assert DeltaTable(path).to_pyarrow_table().num_rows == 91
    ok("vacuum")

    n = QueryBuilder().register("t", DeltaTable(path)).execute("SELECT count(*) AS n FROM t WHERE id < 10").read_all()
    assert n.column(0).to_pylist() == [9], n  # 0 was deleted
    ok("sql")
    print("smoke passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
