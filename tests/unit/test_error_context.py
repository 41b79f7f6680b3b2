"""Read errors name where the bad data is: the data file (and column) whose Parquet column cannot be read as
the table's type, and the column, value and data file of a partition value that does not parse."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel import DeltaTable
from deltakernel.errors import SchemaError
from deltakernel.kernel.scan.partition_values import parse_partition_array, parse_partition_value
from deltakernel.kernel.schema.types import PrimitiveType
from deltakernel.operations.write.api import write_deltalake


def _adds(root: Path, version: int = 0) -> list[dict[str, object]]:
    lines = (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return [json.loads(x)["add"] for x in lines if "add" in json.loads(x)]


def test_uncastable_file_column_names_the_data_file_and_column(tmp_path: Path) -> None:
    write_deltalake(str(tmp_path), pa.table({"id": pa.array([1, 2], pa.int64()), "n": pa.array([3, 4], pa.int64())}))
    (add,) = _adds(tmp_path)
    path = str(add["path"])
    # the file now holds strings where the table says long (a file no correct writer would produce)
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "n": ["three", "four"]}), tmp_path / path)
    with pytest.raises(SchemaError) as ei:
        DeltaTable(str(tmp_path)).to_pyarrow_table()
    msg = str(ei.value)
    assert path in msg and "'n'" in msg, msg


def _partitioned_with_bad_value(root: Path) -> str:
    write_deltalake(str(root), pa.table({"a": pa.array([1, 2], pa.int64()), "p": pa.array([1, 2], pa.int32())}),
                    partition_by=["p"])
    log = root / "_delta_log" / f"{0:020d}.json"
    text = log.read_text()
    assert text.count('"p":"1"') == 1
    log.write_text(text.replace('"p":"1"', '"p":"one"'))
    (bad,) = [a for a in _adds(root) if a["partitionValues"] == {"p": "one"}]
    return str(bad["path"])


@pytest.mark.parametrize("filtered", [False, True], ids=["read", "partition-pruning"])
def test_unparsable_partition_value_names_column_value_and_file(tmp_path: Path, filtered: bool) -> None:
    path = _partitioned_with_bad_value(tmp_path)
    dt = DeltaTable(str(tmp_path))
    with pytest.raises(SchemaError) as ei:
        dt.to_pyarrow_table(filters=[("p", "=", 2)]) if filtered else dt.to_pyarrow_table()
    msg = str(ei.value)
    assert "'one'" in msg and "'p'" in msg and path in msg, msg


def test_parse_partition_functions_name_their_context() -> None:
    with pytest.raises(SchemaError, match=r"'x' of column 'c' in data file f\.parquet for type integer"):
        parse_partition_value("x", PrimitiveType("integer"), column="c", path="f.parquet")
    raw = pa.array(["1", None, "2", "zz"])
    paths = pa.chunked_array([["a.parquet", "b.parquet"], ["c.parquet", "d.parquet"]])
    with pytest.raises(SchemaError, match=r"'zz' of column 'c' in data file d\.parquet"):
        parse_partition_array(raw, PrimitiveType("integer"), column="c", paths=paths)
    assert parse_partition_array(raw.slice(0, 3), PrimitiveType("integer"), column="c", paths=paths).to_pylist() \
        == [1, None, 2]


def test_wrongly_typed_action_field_names_the_commit_file(tmp_path: Path) -> None:
    """Valid JSON of the wrong shape (`"size": "big"`) fails the bulk parse; the error names the commit."""
    from deltakernel.errors import CorruptLogError

    write_deltalake(str(tmp_path), pa.table({"a": [1]}))
    write_deltalake(str(tmp_path), pa.table({"a": [2]}), mode="append")
    log = tmp_path / "_delta_log" / f"{1:020d}.json"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for a in lines:
        if "add" in a:
            a["add"]["size"] = "big"
    log.write_text("".join(json.dumps(a) + "\n" for a in lines))
    with pytest.raises(CorruptLogError) as ei:
        DeltaTable(str(tmp_path))
    assert f"{1:020d}.json" in str(ei.value)
