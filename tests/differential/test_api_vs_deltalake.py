"""deltalake's introspection API on the conformance corpus: schema(), protocol(), metadata(), partitions(),
get_add_actions(flatten=True), deletion_vectors() and to_pyarrow_dataset() fragment guarantees, ours vs
deltalake 1.6.6 on the same real tables (Spark, delta-rs, kernel-rs and DAT writers)."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from deltakernel import DeltaTable
from deltakernel.errors import DeltaError

deltalake = pytest.importorskip("deltalake")

# as tests/conftest.py (importing `conftest` is ambiguous in a full run: tests/datafusion has one too)
CONFORMANCE = Path(os.environ.get("DELTAKERNEL_SHARED", Path(__file__).resolve().parents[2].parent / "shared")) \
    / "conformance"


def _cases() -> list[str]:
    manifest = CONFORMANCE / "manifest.json"
    if not manifest.exists():
        return []
    cases = json.loads(manifest.read_text())["cases"]
    return [c["table"] for c in cases if not c.get("expect_error") and c.get("data_files_shipped", True)]


def _open(rel: str) -> tuple[DeltaTable, Any]:
    path = str(CONFORMANCE / rel)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = deltalake.DeltaTable(path)
    except Exception as e:  # deltalake cannot open it: nothing to compare with
        pytest.skip(f"deltalake cannot load {rel}: {type(e).__name__}")
    try:
        ours = DeltaTable(path)
    except DeltaError as e:
        pytest.skip(f"deltakernel refuses {rel}: {e}")
    return ours, theirs


def _sorted_rows(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


@pytest.mark.parametrize("rel", _cases())
def test_introspection_matches(rel: str) -> None:
    ours, theirs = _open(rel)
    assert json.loads(ours.schema().to_json()) == json.loads(theirs.schema().to_json())
    po, pt = ours.protocol(), theirs.protocol()
    assert (po.min_reader_version, po.min_writer_version) == (pt.min_reader_version, pt.min_writer_version)
    assert sorted(po.reader_features or []) == sorted(pt.reader_features or [])
    assert sorted(po.writer_features or []) == sorted(pt.writer_features or [])
    mo, mt = ours.metadata(), theirs.metadata()
    assert (mo.id, mo.name, mo.description, mo.partition_columns, mo.configuration) == \
        (mt.id, mt.name, mt.description, mt.partition_columns, mt.configuration)
    assert _sorted_rows(ours.partitions()) == _sorted_rows(theirs.partitions())


@pytest.mark.parametrize("rel", _cases())
def test_add_actions_columns_and_values_match(rel: str) -> None:
    ours, theirs = _open(rel)
    if ours.snapshot.column_mapping_mode != "none":
        pytest.skip("deltalake names stats columns by physical name under column mapping; ours by logical name")
    mine = ours.get_add_actions(flatten=True)
    other = pa.table(theirs.get_add_actions(flatten=True))
    shared = [c for c in other.column_names if c in mine.column_names]
    # same columns, except deltalake's null_count of all-null (void) columns and our deletion_vector
    assert set(other.column_names) - set(mine.column_names) <= {c for c in other.column_names
                                                                 if c.startswith("null_count.")}, rel
    assert set(mine.column_names) - set(other.column_names) <= {"deletion_vector"}, rel
    key = {r["path"]: r for r in other.select(shared).to_pylist()}
    for row in mine.select(shared).to_pylist():
        theirs_row = _norm(key[row["path"]])
        # deltalake leaves checkpoint-only (stats_parsed) statistics null; where it knows a value, ours agrees
        assert {k: v for k, v in _norm(row).items() if theirs_row.get(k) is not None} == \
            {k: v for k, v in theirs_row.items() if v is not None}, row["path"]


def _norm(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items() if k != "modification_time"}


@pytest.mark.parametrize("rel", _cases())
def test_deletion_vectors_match(rel: str) -> None:
    ours, theirs = _open(rel)
    try:
        other = pa.table(theirs.deletion_vectors())
    except Exception:
        pytest.skip("deltalake cannot list deletion vectors here (unsupported feature)")
    mine = pa.table(ours.deletion_vectors())
    assert _sorted_rows(mine.to_pylist()) == _sorted_rows(other.to_pylist())


@pytest.mark.parametrize("rel", _cases())
def test_dataset_fragments_skip_as_deltalake(rel: str) -> None:
    ours, theirs = _open(rel)
    try:
        mine = ours.to_pyarrow_dataset()
    except DeltaError:
        pytest.skip("not readable as a plain pyarrow dataset (deletion vectors, column mapping, ...)")
    try:
        other = theirs.to_pyarrow_dataset()
    except Exception:
        pytest.skip("deltalake refuses a pyarrow dataset here")
    full = ours.to_pyarrow_table()
    for field in mine.schema:
        t = field.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t)
                or pa.types.is_date(t) or pa.types.is_timestamp(t)):
            continue
        col = full.column(field.name).drop_null()
        if len(col) == 0:
            continue
        pivot = col.sort()[len(col) // 2]
        for flt in (ds.field(field.name) > pivot, ds.field(field.name) == pivot, ds.field(field.name).is_null()):
            # (fragment counts are compared on controlled tables in tests/unit/test_deltalake_api.py: here
            # deltalake turns missing stats into `col >= null` guarantees, which skip files it cannot prove empty)
            # never skip a file holding a matching row
            try:
                got = mine.to_table(filter=flt).num_rows
            except pa.ArrowInvalid:  # a plain dataset cannot cast out-of-range nanosecond files; nor can deltalake's
                with pytest.raises(pa.ArrowInvalid):
                    other.to_table(filter=flt)
                continue
            assert got == full.filter(flt).num_rows, (rel, str(flt))


def test_corpus_is_used() -> None:
    if not (CONFORMANCE / "manifest.json").exists():
        pytest.skip("conformance corpus absent")
    assert len(_cases()) > 50
    assert Path(CONFORMANCE / _cases()[0]).exists()
