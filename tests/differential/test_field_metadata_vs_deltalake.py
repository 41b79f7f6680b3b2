"""Arrow field metadata in the Delta `schemaString`, beside deltalake 1.6.6 (issue 22 §6).

Arrow metadata values are text. Text that looks like JSON ("true", "1.5", "-3", "null", '{"x": 1}') used to
be stored as a JSON boolean / number / object; it is stored as the string it is, as deltalake stores it, on
create and on schema merge. Only the keys the protocol types (column-mapping ids, identity columns, type
changes) are JSON values: `tests/unit/test_schema_arrow.py`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

deltalake = pytest.importorskip("deltalake")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import assert_same_rows, deltalake_table, read_actions

from deltakernel import DeltaTable, write_deltalake

LOOKS_LIKE_JSON = {"flag": "true", "off": "false", "ratio": "1.5", "delta": "-3", "big": "12345678901234567890",
                   "nothing": "null", "obj": '{"x": 1}', "list": "[1,2]", "quoted": '"q"', "padded": " 7 ",
                   "empty": "", "comment": "10", "plain": "abc"}

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), metadata=LOOKS_LIKE_JSON),
    pa.field("s", pa.struct([pa.field("x", pa.float64(), metadata={"unit": "2.5", "exact": "true"})])),
    pa.field("v", pa.string()),
])
# schema merge: a new top-level column and a new nested field with such metadata; existing columns as they are
MERGED = pa.schema([
    SCHEMA.field("id"),
    pa.field("s", pa.struct([SCHEMA.field("s").type.field("x"),
                             pa.field("y", pa.int32(), metadata={"scale": "-1", "on": "true"})])),
    SCHEMA.field("v"),
    pa.field("c", pa.int32(), metadata={"weight": "0.25", "nullable_hint": "false", "note": "x"}),
])


def _schema_string(table: Path, version: int) -> dict[str, Any]:
    meta = next(a["metaData"] for a in read_actions(table, version) if "metaData" in a)
    parsed: dict[str, Any] = json.loads(meta["schemaString"])
    return parsed


def _data(schema: pa.Schema, n: int) -> pa.Table:
    cols: dict[str, Any] = {"id": list(range(n)), "v": [str(i) for i in range(n)]}
    s_fields = {f.name for f in schema.field("s").type}
    cols["s"] = [{"x": i / 2, **({"y": i} if "y" in s_fields else {})} for i in range(n)]
    if "c" in schema.names:
        cols["c"] = list(range(n))
    return pa.Table.from_pydict({k: cols[k] for k in schema.names}, schema=schema)


def test_create_and_merge_store_metadata_text_as_deltalake_does(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    write_deltalake(ours, _data(SCHEMA, 3))
    deltalake.write_deltalake(theirs, _data(SCHEMA, 3))
    created = _schema_string(ours, 0)
    assert created == _schema_string(theirs, 0)
    assert created["fields"][0]["metadata"] == LOOKS_LIKE_JSON  # every value the string it was given as
    assert created["fields"][1]["type"]["fields"][0]["metadata"] == {"unit": "2.5", "exact": "true"}

    write_deltalake(ours, _data(MERGED, 2), mode="append", schema_mode="merge")
    deltalake.write_deltalake(theirs, _data(MERGED, 2), mode="append", schema_mode="merge")
    merged = _schema_string(ours, 1)
    assert merged == _schema_string(theirs, 1)
    assert merged["fields"][3]["metadata"] == {"weight": "0.25", "nullable_hint": "false", "note": "x"}
    assert merged["fields"][1]["type"]["fields"][1]["metadata"] == {"scale": "-1", "on": "true"}
    # both read each other's table and their own the same way
    assert_same_rows(DeltaTable(str(ours)).to_pyarrow_table(), deltalake_table(theirs))
    assert_same_rows(deltalake_table(ours), DeltaTable(str(theirs)).to_pyarrow_table())
    assert DeltaTable(str(ours)).schema().field("id").metadata == LOOKS_LIKE_JSON


def test_create_table_from_an_arrow_schema_matches_deltalake(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    DeltaTable.create(str(ours), SCHEMA)
    deltalake.DeltaTable.create(str(theirs), SCHEMA)
    assert _schema_string(ours, 0) == _schema_string(theirs, 0)


def test_a_delta_schema_keeps_its_typed_metadata_on_create(tmp_path: Path) -> None:
    """A Delta schema (not Arrow) keeps the JSON types it has: `create` does not round-trip it through Arrow
    metadata (text), so numbers, booleans and strings that look like them all stay as given. (deltalake
    1.6.6 keeps the number but stores the boolean and the object as text here.)"""
    from deltakernel.schema import Field, Schema

    meta = {"n": 5, "b": True, "s": "true", "o": {"k": [1]}, "delta.identity.start": 1}
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    DeltaTable.create(str(ours), Schema([Field("id", "long", metadata=meta), Field("v", "string")]))
    deltalake.DeltaTable.create(str(theirs), deltalake.Schema([deltalake.Field("id", "long", metadata=meta),
                                                                deltalake.Field("v", "string")]))
    assert _schema_string(ours, 0)["fields"][0]["metadata"] == meta
    theirs_meta = _schema_string(theirs, 0)["fields"][0]["metadata"]
    assert {k: theirs_meta[k] for k in ("n", "s", "delta.identity.start")} == {"n": 5, "s": "true",
                                                                                "delta.identity.start": 1}
