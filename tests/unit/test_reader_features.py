"""Reader features on hand-built logs: variant, timestamp_ntz, type widening, and the feature gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel import DeltaTable
from deltakernel.errors import UnsupportedFeatureError
from deltakernel.kernel.log.segment import LogTail
from deltakernel.kernel.protocol.features import CATALOG_MANAGED_FEATURES, SUPPORTED_READER_FEATURES
from deltakernel.kernel.scan.scan import Scan
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.storage import storage_for_uri


def _field(name: str, typ: Any, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "type": typ, "nullable": True, "metadata": metadata or {}}


def _make(tmp: Path, fields: list[dict[str, Any]], data: pa.Table, reader_features: list[str],
          configuration: dict[str, str] | None = None) -> str:
    log = tmp / "_delta_log"
    log.mkdir(parents=True)
    pq.write_table(data, tmp / "part-0.parquet")
    schema = {"type": "struct", "fields": fields}
    actions = [
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": reader_features,
                      "writerFeatures": reader_features}},
        {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                      "partitionColumns": [], "configuration": configuration or {}}},
        {"add": {"path": "part-0.parquet", "partitionValues": {}, "size": (tmp / "part-0.parquet").stat().st_size,
                 "modificationTime": 0, "dataChange": True,
                 "stats": json.dumps({"numRecords": data.num_rows})}},
    ]
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return str(tmp)


def test_variant_column_reads_as_metadata_value_struct(tmp_path: Path) -> None:
    # Spark writes the variant's physical struct as (value, metadata); readers return both binaries
    phys = pa.array([{"value": b"\x0c\x01", "metadata": b"\x01\x00\x00"}, None],
                    pa.struct([("value", pa.binary()), ("metadata", pa.binary())]))
    path = _make(tmp_path, [_field("id", "long"), _field("v", "variant")],
                 pa.table({"id": [1, 2], "v": phys}), ["variantType"])
    out = DeltaTable(path).to_pyarrow_table()
    v = out.column("v").combine_chunks()
    assert pa.types.is_struct(v.type)
    assert {v.type.field(i).name for i in range(v.type.num_fields)} == {"metadata", "value"}
    assert v.field("value").to_pylist() == [b"\x0c\x01", None]
    assert v.field("metadata").to_pylist()[0] == b"\x01\x00\x00"
    assert v.is_null().to_pylist() == [False, True]


def test_timestamp_ntz_is_not_shifted(tmp_path: Path) -> None:
    ts = pa.array([0, 86_400_000_000], pa.timestamp("us"))
    path = _make(tmp_path, [_field("t", "timestamp_ntz")], pa.table({"t": ts}), ["timestampNtz"])
    out = DeltaTable(path).to_pyarrow_table()
    assert out.schema.field("t").type == pa.timestamp("us")
    assert out.column("t").cast(pa.int64()).to_pylist() == [0, 86_400_000_000]


def test_type_widening_casts_narrow_files(tmp_path: Path) -> None:
    data = pa.table({"a": pa.array([1, -2], pa.int16()), "f": pa.array([1.5, 2.5], pa.float32())})
    hist = {"delta.typeChanges": [{"fromType": "short", "toType": "long"}]}
    path = _make(tmp_path, [_field("a", "long", hist), _field("f", "double")], data, ["typeWidening"])
    out = DeltaTable(path).to_pyarrow_table()
    assert out.schema.field("a").type == pa.int64() and out.schema.field("f").type == pa.float64()
    assert out.column("a").to_pylist() == [1, -2] and out.column("f").to_pylist() == [1.5, 2.5]


@pytest.mark.parametrize("feature", sorted(SUPPORTED_READER_FEATURES - set(CATALOG_MANAGED_FEATURES)))
def test_every_supported_reader_feature_opens(tmp_path: Path, feature: str) -> None:
    path = _make(tmp_path, [_field("id", "long")], pa.table({"id": [1]}), [feature])
    assert DeltaTable(path).to_pyarrow_table().column("id").to_pylist() == [1]


@pytest.mark.parametrize("feature", CATALOG_MANAGED_FEATURES)
def test_catalog_managed_features_open_with_a_log_tail(tmp_path: Path, feature: str) -> None:
    # supported for reads only through the catalog's log tail (or the explicit published-only opt-out)
    path = _make(tmp_path, [_field("id", "long")], pa.table({"id": [1]}), [feature])
    storage = storage_for_uri(path)
    for tail in (LogTail.of([], 0), LogTail.published_only()):
        snap = Snapshot.load(storage, log_tail=tail)
        assert Scan(snap).to_table().column("id").to_pylist() == [1]


@pytest.mark.parametrize("feature", ["catalogManaged", "catalogOwned-preview", "somethingNew"])
def test_unsupported_reader_feature_is_named(tmp_path: Path, feature: str) -> None:
    path = _make(tmp_path, [_field("id", "long")], pa.table({"id": [1]}), [feature])
    with pytest.raises(UnsupportedFeatureError) as e:
        DeltaTable(path)
    assert e.value.feature == feature
    assert feature in str(e.value)


def test_reader_version_4_is_refused(tmp_path: Path) -> None:
    path = _make(tmp_path, [_field("id", "long")], pa.table({"id": [1]}), [])
    log = Path(path) / "_delta_log" / f"{0:020d}.json"
    log.write_text(log.read_text().replace('"minReaderVersion": 3', '"minReaderVersion": 4'))
    with pytest.raises(UnsupportedFeatureError):
        DeltaTable(path)
