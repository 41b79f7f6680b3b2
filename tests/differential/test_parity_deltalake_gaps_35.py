"""deltalake 1.6.6 and deltakernel side by side on the inputs where they still differed (issue 35 item 5).

Each case runs the same call on both libraries and asserts what deltalake's users rely on:
- error texts users match on: deltalake's sentence (without its Rust wrapper such as "Generic DeltaTable
  error:") is in deltakernel's message, and deltakernel's exception is an instance of the builtin type deltalake
  raises (ValueError / TypeError) where deltalake raises one;
- inputs deltalake refuses are refused by deltakernel too, before anything is committed;
- `delta.minReaderVersion` / `delta.minWriterVersion` through `alter.set_table_properties` upgrade the protocol as
  deltalake's (never downgrade; out-of-range values refused with deltalake's sentence);
- `delta.enableIcebergCompatV1`: refused by both with deltalake's "Error parsing property" sentence;
- return types: the Arrow objects deltalake returns (arro3 where it does) and deltakernel's (pyarrow) hold the same
  data through the Arrow PyCapsule interface (`pa.table(x)`);
- `to_pandas(filesystem=, types_mapper=)`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltakernel
from deltakernel.errors import DeltaError

deltalake = pytest.importorskip("deltalake")
pd = pytest.importorskip("pandas")

LIBS = {"deltalake": deltalake, "deltakernel": deltakernel}
DATA = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "p": ["x", "y", "x"]})
CDF = {"delta.enableChangeDataFeed": "true"}


def _run(lib: Any, path: Path, call: Callable[[Any, Any, str], Any], partitioned: bool,
         configuration: dict[str, str] | None) -> tuple[BaseException | None, int]:
    """`call(lib, table, path)` on a fresh 3-row table; (the exception raised or None, the version after)."""
    lib.write_deltalake(str(path), DATA, partition_by=["p"] if partitioned else None, configuration=configuration)
    table = lib.DeltaTable(str(path))
    try:
        call(lib, table, str(path))
    except Exception as exc:  # both libraries' exceptions are compared by the tests
        return exc, lib.DeltaTable(str(path)).version()
    return None, lib.DeltaTable(str(path)).version()


def _field(lib: Any, name: str, typ: str, nullable: bool = True) -> Any:
    return lib.schema.Field(name, typ, nullable=nullable)


# (id, call, deltalake's sentence that deltakernel's message must contain, builtin type both raise, partitioned, conf)
MESSAGES: list[tuple[str, Callable[[Any, Any, str], Any], str, type | None, bool, dict[str, str] | None]] = [
    ("write mode error", lambda lib, t, p: lib.write_deltalake(p, DATA), "A table already exists at", None, False, None),
    ("write bad mode", lambda lib, t, p: lib.write_deltalake(p, DATA, mode="bogus"),
     "Invalid save mode provided: bogus, only these are supported: ['append', 'overwrite', 'error', 'ignore']",
     None, False, None),
    ("write bad schema_mode", lambda lib, t, p: lib.write_deltalake(p, DATA, mode="append", schema_mode="bogus"),
     "Invalid schema write mode provided: bogus, only these are supported: ['overwrite', 'merge']", None, False,
     None),
    ("write partitioning mismatch", lambda lib, t, p: lib.write_deltalake(p, DATA, mode="append", partition_by=["p"]),
     "Specified table partitioning does not match table partitioning: expected: [], got:", None, False, None),
    ("write replaceWhere violated", lambda lib, t, p: lib.write_deltalake(p, DATA, mode="overwrite", predicate="a > 1"),
     "Invalid data found: 1 rows failed validation check", None, False, None),
    ("create missing partition column", lambda lib, t, p: lib.write_deltalake(p + "_n", DATA, partition_by=["zz"]),
     "Partition column 'zz' not found in schema", None, False, None),
    ("delete non-boolean", lambda lib, t, p: t.delete("a + 1"), "Cannot create filter with non-boolean predicate",
     None, False, None),
    ("z-order unknown column", lambda lib, t, p: t.optimize.z_order(["zz"]),
     'Z-order column "zz": field "zz" not found in schema', None, False, None),
    ("z-order no column", lambda lib, t, p: t.optimize.z_order([]), "Z-order requires at least one column", None,
     False, None),
    ("z-order partition column", lambda lib, t, p: t.optimize.z_order(["p"]),
     'Z-order columns cannot be partition columns. Found: ["p"]', None, True, None),
    ("optimize target size 0", lambda lib, t, p: t.optimize.compact(target_size=0),
     "target_file_size must be between 1 and 9223372036854775807", ValueError, False, None),
    ("restore current version", lambda lib, t, p: t.restore(0),
     "Version to restore 0 should be less then last available version 0", None, False, None),
    ("restore future timestamp", lambda lib, t, p: t.restore(dt.datetime(2100, 1, 1, tzinfo=dt.timezone.utc)),
     "Version to restore 0 should be less then last available version 0", None, False, None),
    ("add_constraint violated", lambda lib, t, p: t.alter.add_constraint({"c": "a > 1"}),
     "Invalid data found: 1 rows failed validation check", None, False, None),
    ("add_constraint none", lambda lib, t, p: t.alter.add_constraint({}),
     "No check constraint (Name and Expression) provided", None, False, None),
    ("write violates constraint", lambda lib, t, p: (
        t.alter.add_constraint({"c": "a > 0"}),
        lib.write_deltalake(p, pa.table({"a": pa.array([-1], pa.int64()), "p": ["x"]}), mode="append")),
     "Invalid data found: 1 rows failed validation check", None, False, None),
    ("drop missing constraint", lambda lib, t, p: t.alter.drop_constraint("nope"),
     "Constraint with name 'nope' does not exist.", None, False, None),
    ("set unknown delta property", lambda lib, t, p: t.alter.set_table_properties({"delta.bogus": "1"}),
     "Error parsing property 'delta.bogus':'1'", None, False, None),
    ("minWriterVersion not a number", lambda lib, t, p: t.alter.set_table_properties({"delta.minWriterVersion": "abc"}),
     "delta.minWriterVersion = 'abc' is invalid, valid values are ['2','3','4','5','6','7']", None, False, None),
    ("minWriterVersion too high", lambda lib, t, p: t.alter.set_table_properties({"delta.minWriterVersion": "9"}),
     "delta.minWriterVersion = '9' is invalid, valid values are ['2','3','4','5','6','7']", None, False, None),
    ("set_column_metadata unknown column", lambda lib, t, p: t.alter.set_column_metadata("zz", {"k": "v"}),
     "No field with the provided name in the schema", None, False, None),
    ("add_feature without upgrade", lambda lib, t, p: t.alter.add_feature(lib.TableFeatures.ChangeDataFeed),
     "Table feature enables writer feature, but min_writer is not v7. Set allow_protocol_versions_increase or "
     "increase version explicitly through set_tbl_properties", None, False, None),
    ("load_cdf not enabled", lambda lib, t, p: t.load_cdf(),
     "Reading a table version: 0 that does not have change data enabled", None, False, None),
    ("load_cdf start after end", lambda lib, t, p: t.load_cdf(starting_version=2, ending_version=1),
     "Invalid table version: 2", None, False, CDF),
    ("load_cdf start after latest", lambda lib, t, p: t.load_cdf(starting_version=5), "Invalid table version: 5",
     None, False, CDF),
    ("filter operator", lambda lib, t, p: t.to_pyarrow_table(filters=[("a", "~", 1)]),
     '"~" is not a valid operator in predicates.', ValueError, False, None),
    ("partitions unknown column", lambda lib, t, p: t.partitions([("zz", "=", "1")]),
     'Filters include columns that are not in table schema: ["zz"]', ValueError, True, None),
    ("load_as_version bad text", lambda lib, t, p: t.load_as_version("notatime"), "Failed to parse datetime string",
     ValueError, False, None),
    ("vacuum negative retention", lambda lib, t, p: t.vacuum(retention_hours=-1, enforce_retention_duration=False),
     "The retention periods should be positive.", ValueError, False, None),
    ("update without values", lambda lib, t, p: t.update(), "Either updates or new_values need to be passed",
     ValueError, False, None),
]


@pytest.mark.parametrize("call,sentence,builtin,partitioned,conf", [m[1:] for m in MESSAGES],
                         ids=[m[0] for m in MESSAGES])
def test_error_text_has_deltalakes_sentence(tmp_path: Path, call: Callable[[Any, Any, str], Any], sentence: str,
                                            builtin: type | None, partitioned: bool,
                                            conf: dict[str, str] | None) -> None:
    errors, versions = {}, {}
    for name, lib in LIBS.items():
        errors[name], versions[name] = _run(lib, tmp_path / name, call, partitioned, conf)
        assert errors[name] is not None, f"{name} accepted it"
    assert versions["deltakernel"] == versions["deltalake"]  # the failing call committed nothing
    assert sentence in str(errors["deltalake"])  # the sentence is deltalake's own
    assert sentence in str(errors["deltakernel"])
    assert isinstance(errors["deltakernel"], DeltaError)
    if builtin is not None:
        assert isinstance(errors["deltalake"], builtin) and isinstance(errors["deltakernel"], builtin)


# (id, call, builtin type deltalake raises, or None for its DeltaError)
REFUSED: list[tuple[str, Callable[[Any, Any, str], Any], type | None]] = [
    ("write without columns", lambda lib, t, p: lib.write_deltalake(p + "_n", pa.table({})), None),
    ("write target_file_size 0", lambda lib, t, p: lib.write_deltalake(p, DATA, mode="append", target_file_size=0),
     ValueError),
    ("write unknown delta property", lambda lib, t, p: lib.write_deltalake(p + "_n", DATA,
                                                                      configuration={"delta.bogus": "1"}), None),
    ("write icebergCompatV1", lambda lib, t, p: lib.write_deltalake(
        p + "_n", DATA, configuration={"delta.enableIcebergCompatV1": "true"}), None),
    ("write icebergCompatV2", lambda lib, t, p: lib.write_deltalake(
        p + "_n", DATA, configuration={"delta.enableIcebergCompatV2": "true"}), None),
    ("write storage option not a string", lambda lib, t, p: lib.write_deltalake(p, DATA, mode="append",
                                                                           storage_options={"a": 1}), TypeError),
    ("history negative limit", lambda lib, t, p: t.history(-1), None),
    ("transaction_version of an int", lambda lib, t, p: t.transaction_version(1), TypeError),
    ("negative max_commit_retries", lambda lib, t, p: t.delete(
        "a = 1", commit_properties=lib.CommitProperties(max_commit_retries=-1)), None),
    ("negative min_commit_interval", lambda lib, t, p: t.optimize.compact(min_commit_interval=-1), None),
    ("delete predicate not a string", lambda lib, t, p: t.delete(1), TypeError),
    ("update predicate not a string", lambda lib, t, p: t.update({"a": "1"}, predicate=5), TypeError),
    ("create icebergCompatV1", lambda lib, t, p: lib.DeltaTable.create(
        p + "_n", DATA.schema, configuration={"delta.enableIcebergCompatV1": "true"}), None),
]


@pytest.mark.parametrize("call,builtin", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_inputs_deltalake_refuses_are_refused(tmp_path: Path, call: Callable[[Any, Any, str], Any],
                                              builtin: type | None) -> None:
    for name, lib in LIBS.items():
        error, version = _run(lib, tmp_path / name, call, False, None)
        assert error is not None, f"{name} accepted it"
        if name == "deltakernel":  # nothing committed, no new table left behind
            assert version == 0 and not (tmp_path / f"{name}_n" / "_delta_log").exists()
        if builtin is not None:
            assert isinstance(error, builtin), (name, error)
        if name == "deltakernel":
            assert isinstance(error, DeltaError)


def test_icebergcompat_refused_with_deltalakes_sentence(tmp_path: Path) -> None:
    for name, lib in LIBS.items():
        lib.write_deltalake(str(tmp_path / name), DATA)
        with pytest.raises(Exception, match=r"Error parsing property 'delta\.enableIcebergCompatV1':'true'"):
            lib.DeltaTable(str(tmp_path / name)).alter.set_table_properties({"delta.enableIcebergCompatV1": "true"})
        with pytest.raises(Exception, match=r"Error parsing property 'delta\.enableIcebergCompatV1':'true'"):
            lib.write_deltalake(str(tmp_path / f"{name}_c"), DATA, configuration={"delta.enableIcebergCompatV1":
                                                                                   "true"})
        assert lib.DeltaTable(str(tmp_path / name)).version() == 0


@pytest.mark.parametrize("steps,expected", [
    ([{"delta.minReaderVersion": "2", "delta.minWriterVersion": "5"}], (2, 5)),
    ([{"delta.minWriterVersion": "4"}], (1, 4)),
    ([{"delta.minWriterVersion": "5"}, {"delta.minWriterVersion": "3"}], (1, 5)),  # never downgraded
    ([{"delta.minReaderVersion": "2"}, {"delta.minReaderVersion": "1"}], (2, 2)),
])
def test_protocol_versions_through_set_table_properties(tmp_path: Path, steps: list[dict[str, str]],
                                                        expected: tuple[int, int]) -> None:
    got = {}
    for name, lib in LIBS.items():
        lib.write_deltalake(str(tmp_path / name), DATA)
        for props in steps:
            lib.DeltaTable(str(tmp_path / name)).alter.set_table_properties(props)
        p = lib.DeltaTable(str(tmp_path / name)).protocol()
        got[name] = (p.min_reader_version, p.min_writer_version)
    assert got["deltakernel"] == got["deltalake"]
    assert got["deltakernel"][0] >= expected[0] and got["deltakernel"][1] >= expected[1]


def test_returned_arrow_objects_hold_the_same_data(tmp_path: Path) -> None:
    """deltalake returns arro3 objects from get_add_actions / schema().to_arrow() / load_cdf (arro3 is installed
    with it); deltakernel returns pyarrow's: the same data through the Arrow PyCapsule interface."""
    out: dict[str, dict[str, Any]] = {}
    for name, lib in LIBS.items():
        lib.write_deltalake(str(tmp_path / name), DATA, configuration=CDF)
        t = lib.DeltaTable(str(tmp_path / name))
        out[name] = {
            "to_pyarrow_table": t.to_pyarrow_table(),
            "add_actions": pa.table(t.get_add_actions(flatten=True)),
            "schema": pa.schema(t.schema().to_arrow()),
            "cdf": pa.table(t.load_cdf()),
        }
    ours, theirs = out["deltakernel"], out["deltalake"]
    assert isinstance(theirs["to_pyarrow_table"], pa.Table) and isinstance(ours["to_pyarrow_table"], pa.Table)
    assert ours["to_pyarrow_table"].equals(theirs["to_pyarrow_table"])
    assert ours["schema"].equals(theirs["schema"])
    assert ours["add_actions"].num_rows == theirs["add_actions"].num_rows
    assert {"path", "size_bytes", "num_records"} <= set(ours["add_actions"].column_names) & set(
        theirs["add_actions"].column_names)
    assert ours["add_actions"].column("num_records").to_pylist() == theirs["add_actions"].column(
        "num_records").to_pylist()
    cols = ["a", "p", "_change_type", "_commit_version"]
    rows = {k: sorted(tuple(r.values()) for r in v["cdf"].select(cols).to_pylist()) for k, v in out.items()}
    assert rows["deltakernel"] == rows["deltalake"]


def test_to_pandas_keywords(tmp_path: Path) -> None:
    import pyarrow.fs as pafs

    frames = {}
    for name, lib in LIBS.items():
        lib.write_deltalake(str(tmp_path / name), DATA)
        t = lib.DeltaTable(str(tmp_path / name))
        fs = pafs.SubTreeFileSystem(str(tmp_path / name), pafs.LocalFileSystem())
        frames[name] = (
            t.to_pandas(types_mapper=pd.ArrowDtype),
            t.to_pandas(columns=["a"], filesystem=fs, filters=[("a", ">", 1)]),
        )
    for ours, theirs in zip(frames["deltakernel"], frames["deltalake"]):
        pd.testing.assert_frame_equal(ours.sort_values("a", ignore_index=True), theirs.sort_values(
            "a", ignore_index=True))
    assert all(isinstance(d, pd.ArrowDtype) for d in frames["deltakernel"][0].dtypes)
