"""Cold start: a process that opens, reads and appends to a small table never imports pandas (pyarrow imports
it, 0.1-0.9 s, on its first conversion of a Python list; the kernel's paths build Arrow arrays without)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from deltakernel import write_deltalake


def test_open_read_append_do_not_import_pandas(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    batch = tmp_path / "batch.arrow"  # the child's input (building arrays from Python objects imports pandas)
    with pa.OSFile(str(batch), "wb") as sink, pa.ipc.new_file(sink, pa.schema([("id", pa.int64())])) as w:
        w.write_table(pa.table({"id": pa.array(range(4, 104), pa.int64())}))
    code = (
        "import sys\nimport pyarrow as pa\nfrom deltakernel import DeltaTable, write_deltalake\n"
        f"dt = DeltaTable({uri!r})\n"
        "assert dt.to_pyarrow_table().num_rows == 3\n"
        f"write_deltalake(dt, pa.ipc.open_file({str(batch)!r}).read_all(), mode='append')\n"
        "assert dt.version() == 1 and dt.to_pyarrow_table().num_rows == 103\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
