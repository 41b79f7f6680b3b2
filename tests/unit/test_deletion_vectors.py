"""Deletion vectors: protocol examples, Z85, RoaringBitmapArray round trips, DV files, paths, corpus."""

from __future__ import annotations

import importlib
import json
import os
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from deltakernel.errors import DeletionVectorError, InvalidPathError, MissingFileError, ObjectNotFoundError
from deltakernel.kernel.deletion_vectors import (
    NATIVE_MAGIC,
    DeletionVectorDescriptor,
    deleted_mask,
    deserialize_roaring_bitmap_array,
    encode_dv_file,
    read_deletion_vector,
    serialize_roaring_bitmap_array,
    z85_decode,
    z85_encode,
)
from deltakernel.storage.base import ObjectMeta, Storage

CORPUS = Path("/work/shared/conformance/tables")
EXAMPLE_UUID = "d2c639aa-8816-431a-aaf6-d3fe2512ff61"


# ----------------------------------------------------------------------------- test storage
class _DirStorage(Storage):
    """Minimal local-directory Storage, used until/unless deltakernel.storage.LocalStorage exists."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root_uri = str(root).rstrip("/")

    def _path(self, key: str) -> str:
        return os.path.join(self.root_uri, *key.split("/"))

    def list_from(self, prefix: str, start_after: str | None = None) -> Iterator[ObjectMeta]:
        raise NotImplementedError

    def read(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        try:
            with open(self._path(key), "rb") as f:
                f.seek(start or 0)
                return f.read() if end is None else f.read(max(0, end - (start or 0)))
        except FileNotFoundError as exc:
            raise ObjectNotFoundError(key) from exc

    def head(self, key: str) -> ObjectMeta:
        raise NotImplementedError

    def put_if_absent(self, key: str, data: bytes) -> None:
        path = self._path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "xb") as f:
            f.write(data)

    def delete(self, key: str) -> None:
        raise NotImplementedError

    def exists(self, key: str) -> bool:
        return os.path.exists(self._path(key))

    def open_input_file(self, key: str) -> Any:
        raise NotImplementedError

    def arrow_filesystem(self) -> tuple[Any, str]:
        raise NotImplementedError

    def child(self, key_prefix: str) -> Storage:
        return _DirStorage(self._path(key_prefix))


def make_storage(root: str | os.PathLike[str]) -> Storage:
    """The project's LocalStorage once it exists, else the in-test stand-in."""
    try:
        local_storage = getattr(importlib.import_module("deltakernel.storage"), "LocalStorage", None)
    except ImportError:
        local_storage = None
    if local_storage is None:
        return _DirStorage(root)
    storage: Storage = local_storage(str(root))
    return storage


def _write(root: Path, key: str, data: bytes) -> None:
    path = root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# ----------------------------------------------------------------------------- Z85
def test_z85_reference_vector() -> None:
    raw = bytes.fromhex("864FD26FB559F75B")
    assert z85_encode(raw) == "HelloWorld"
    assert z85_decode("HelloWorld") == raw


@given(st.binary(max_size=200))
def test_z85_round_trip(data: bytes) -> None:
    encoded = z85_encode(data)
    assert len(encoded) % 5 == 0
    decoded = z85_decode(encoded)
    assert decoded[: len(data)] == data
    assert decoded[len(data) :] == b"\x00" * (len(decoded) - len(data))


@pytest.mark.parametrize("bad", ["Hell", 'Hello"orld', "Hello World", "é0000", "%%%%%"])
def test_z85_rejects_malformed(bad: str) -> None:
    with pytest.raises(ValueError):
        z85_decode(bad)


def test_z85_rust_crate_padded_tail() -> None:
    # '#' leading the last group = bytes missing from the tail ('##093' -> 0x0300 -> b"\x03\x00")
    assert z85_decode("00000##093") == b"\x00\x00\x00\x00\x03\x00"
    assert z85_decode("#0000") == b"\x00\x00\x00"


# ----------------------------------------------------------------------------- protocol examples
def _example(storage_type: str, path: str, offset: int | None = 4) -> dict[str, Any]:
    d: dict[str, Any] = {
        "storageType": storage_type,
        "pathOrInlineDv": path,
        "sizeInBytes": 40,
        "cardinality": 6,
    }
    if offset is not None:
        d["offset"] = offset
    return d


def test_example_relative_path_with_prefix() -> None:
    dv = DeletionVectorDescriptor.from_dict(_example("u", "ab^-aqEH.-t@S}K{vb[*k^"))
    assert dv.uuid() == uuid.UUID(EXAMPLE_UUID)
    assert dv.relative_key() == f"ab/deletion_vector_{EXAMPLE_UUID}.bin"
    assert dv.absolute_path("s3://mytable/") == f"s3://mytable/ab/deletion_vector_{EXAMPLE_UUID}.bin"
    assert dv.unique_id == "uab^-aqEH.-t@S}K{vb[*k^@4"


def test_example_relative_path_without_prefix() -> None:
    dv = DeletionVectorDescriptor.for_uuid(uuid.UUID(EXAMPLE_UUID), 1, 40, 6)
    assert dv.path_or_inline_dv == "^-aqEH.-t@S}K{vb[*k^"
    assert dv.relative_key() == f"deletion_vector_{EXAMPLE_UUID}.bin"
    assert DeletionVectorDescriptor.for_uuid(
        uuid.UUID(EXAMPLE_UUID), 1, 40, 6, prefix="ab"
    ).path_or_inline_dv == ("ab^-aqEH.-t@S}K{vb[*k^")


def test_example_absolute_path() -> None:
    path = f"s3://mytable/deletion_vector_{EXAMPLE_UUID}.bin"
    dv = DeletionVectorDescriptor.from_dict(_example("p", path))
    assert dv.absolute_path("s3://mytable") == path
    assert dv.relative_key("s3://mytable") == f"deletion_vector_{EXAMPLE_UUID}.bin"
    assert dv.relative_key("s3a://mytable/") == f"deletion_vector_{EXAMPLE_UUID}.bin"
    assert dv.unique_id == f"p{path}@4"


def test_example_inline() -> None:
    dv = DeletionVectorDescriptor.from_dict(
        _example("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", None)
    )
    assert dv.unique_id == "iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"
    assert dv.to_dict() == _example("i", dv.path_or_inline_dv, None)
    rows = read_deletion_vector(_DirStorage("/nonexistent"), dv)
    assert rows.dtype == np.uint64
    assert rows.tolist() == [3, 4, 7, 11, 18, 29]
    with pytest.raises(DeletionVectorError):
        dv.relative_key()


@pytest.mark.parametrize("rows", [[1], [1, 2], [1, 2, 3], [1, 2, 3, 70000, 5 << 32]])
def test_inline_round_trip_any_size(rows: list[int]) -> None:
    data = serialize_roaring_bitmap_array(rows)  # lengths 34, 36, 38, ...: padding exercised
    dv = DeletionVectorDescriptor.inline(data, len(rows))
    assert dv.size_in_bytes == len(data)
    assert DeletionVectorDescriptor.from_dict(dv.to_dict()) == dv
    assert read_deletion_vector(_DirStorage("/nonexistent"), dv).tolist() == rows


@pytest.mark.parametrize(
    "d",
    [
        {"storageType": "x", "pathOrInlineDv": "a", "sizeInBytes": 1, "cardinality": 1},
        {"storageType": "u", "pathOrInlineDv": "a", "sizeInBytes": 1},
        {"storageType": "u", "pathOrInlineDv": "a", "sizeInBytes": True, "cardinality": 1},
        {"storageType": "u", "pathOrInlineDv": "a", "sizeInBytes": 1.5, "cardinality": 1},
        {"storageType": "u", "pathOrInlineDv": "a", "sizeInBytes": -1, "cardinality": 1},
        {"storageType": "u", "pathOrInlineDv": None, "sizeInBytes": 1, "cardinality": 1},
    ],
)
def test_from_dict_rejects_malformed(d: dict[str, Any]) -> None:
    with pytest.raises(DeletionVectorError):
        DeletionVectorDescriptor.from_dict(d)


def test_from_dict_accepts_numpy_ints() -> None:
    d = {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": np.int32(1),
        "sizeInBytes": np.int32(40),
        "cardinality": np.int64(6),
    }
    dv = DeletionVectorDescriptor.from_dict(d)
    assert (dv.offset, dv.size_in_bytes, dv.cardinality) == (1, 40, 6)
    assert type(dv.offset) is int


# ----------------------------------------------------------------------------- RoaringBitmapArray
_row = st.one_of(
    st.integers(0, 2**16),
    st.integers(0, 2**32 + 2**17),
    st.integers(2**32 - 100, 2**32 + 100),
    st.integers(0, 2**63 - 1),
)


@st.composite
def _row_sets(draw: st.DrawFn) -> list[int]:
    rows = draw(st.lists(_row, max_size=300))
    for _ in range(draw(st.integers(0, 3))):  # runs and dense chunks -> run / bitmap containers
        start = draw(st.integers(0, 2**34))
        length = draw(st.integers(1, 20000))
        step = draw(st.sampled_from([1, 1, 2, 3]))
        rows.extend(range(start, start + length * step, step))
    return rows


@settings(max_examples=150, deadline=None)
@given(_row_sets())
def test_roaring_round_trip(rows: list[int]) -> None:
    data = serialize_roaring_bitmap_array(rows)
    decoded = deserialize_roaring_bitmap_array(data)
    assert decoded.dtype == np.uint64
    np.testing.assert_array_equal(decoded, np.unique(np.array(rows, dtype=np.uint64)))


def test_roaring_round_trip_numpy_and_empty() -> None:
    assert deserialize_roaring_bitmap_array(serialize_roaring_bitmap_array([])).size == 0
    arr = np.array([2**40, 5, 5, 2**33 + 1], dtype=np.int64)
    assert deserialize_roaring_bitmap_array(serialize_roaring_bitmap_array(arr)).tolist() == [
        5,
        2**33 + 1,
        2**40,
    ]
    with pytest.raises(ValueError):
        serialize_roaring_bitmap_array([-1])
    with pytest.raises(ValueError):
        serialize_roaring_bitmap_array([2**63])


def _bitmap32(values: list[int], optimize: bool = True) -> bytes:
    bm = BitMap(values)
    if optimize:
        bm.run_optimize()
    data: bytes = bm.serialize()
    return data


@pytest.mark.parametrize("order", ["<", ">"])
def test_native_format(order: str) -> None:
    bitmaps = [_bitmap32([1, 5]), _bitmap32([]), _bitmap32(list(range(100, 5000)))]
    parts = [struct.pack(order + "ii", NATIVE_MAGIC, len(bitmaps))]
    for b in bitmaps:
        parts += [struct.pack(order + "i", len(b)), b]
    rows = deserialize_roaring_bitmap_array(b"".join(parts))
    expected = [1, 5] + [(2 << 32) + v for v in range(100, 5000)]
    assert rows.tolist() == expected


def test_portable_with_empty_bucket_and_many_containers() -> None:
    # Delta Spark writes every bucket up to the last, empty ones included
    dense = _bitmap32(list(range(0, 10 * 65536, 7)), optimize=False)  # >= 4 containers, no runs
    runs = _bitmap32([c * 65536 + i for c in range(6) for i in range(10, 300)])  # runs, offsets header
    few_runs = _bitmap32(list(range(10, 300)))  # run cookie with < 4 containers: no offset header
    buckets = [(0, dense), (1, _bitmap32([])), (2, runs), (3, few_runs)]
    data = struct.pack("<iQ", 1681511377, len(buckets)) + b"".join(
        struct.pack("<I", k) + b for k, b in buckets
    )
    rows = deserialize_roaring_bitmap_array(data)
    expected = sorted(
        list(range(0, 10 * 65536, 7))
        + [(2 << 32) + c * 65536 + i for c in range(6) for i in range(10, 300)]
        + [(3 << 32) + i for i in range(10, 300)]
    )
    assert rows.tolist() == expected


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x01\x02",
        struct.pack("<i", 12345) + b"\x00" * 8,
        struct.pack("<iQ", 1681511377, 1),
        struct.pack("<iQ", 1681511377, 2**40) + b"\x00" * 16,
        struct.pack("<iQI", 1681511377, 1, 2**31) + _bitmap32([1]),
        struct.pack("<iQ", 1681511377, 2)
        + struct.pack("<I", 3)
        + _bitmap32([1])
        + struct.pack("<I", 2)
        + _bitmap32([1]),
        struct.pack("<iQI", 1681511377, 1, 0) + _bitmap32([1, 2, 3])[:-2],
        struct.pack("<iQI", 1681511377, 1, 0) + b"\xff" * 12,
        struct.pack("<ii", NATIVE_MAGIC, -1),
    ],
)
def test_deserialize_rejects_corrupt(data: bytes) -> None:
    with pytest.raises(DeletionVectorError):
        deserialize_roaring_bitmap_array(data)


# ----------------------------------------------------------------------------- DV files
def _dv_table(
    tmp_path: Path, rows_list: list[list[int]], prefix: str = ""
) -> tuple[Storage, list[DeletionVectorDescriptor], Path]:
    blobs = [serialize_roaring_bitmap_array(rows) for rows in rows_list]
    file_bytes, offsets = encode_dv_file(blobs)
    dv_uuid = uuid.uuid4()
    descriptors = [
        DeletionVectorDescriptor.for_uuid(dv_uuid, off, len(b), len(set(r)), prefix=prefix)
        for off, b, r in zip(offsets, blobs, rows_list)
    ]
    key = descriptors[0].relative_key()
    _write(tmp_path, key, file_bytes)
    return make_storage(tmp_path), descriptors, tmp_path / key


def test_read_dv_file_several_dvs(tmp_path: Path) -> None:
    rows_list = [[0, 9], [3, 2**32 + 7, 2**40], list(range(0, 100000, 3))]
    storage, dvs, _ = _dv_table(tmp_path, rows_list, prefix="xy")
    for dv, rows in zip(dvs, rows_list):
        assert read_deletion_vector(storage, dv).tolist() == sorted(set(rows))


def test_read_dv_absent_offset_means_first(tmp_path: Path) -> None:
    storage, dvs, _ = _dv_table(tmp_path, [[4, 2]])
    dv = DeletionVectorDescriptor("u", dvs[0].path_or_inline_dv, None, dvs[0].size_in_bytes, 2)
    assert read_deletion_vector(storage, dv).tolist() == [2, 4]


def test_read_dv_large_offset(tmp_path: Path) -> None:
    big = list(range(0, 2_000_000, 2))  # > 64 KiB serialized so the second DV is read in two requests
    storage, dvs, _ = _dv_table(tmp_path, [big, [1, 2, 3]])
    assert dvs[1].offset is not None and dvs[1].offset > 1 << 16
    assert read_deletion_vector(storage, dvs[1]).tolist() == [1, 2, 3]


def _corrupt(path: Path, pos: int) -> None:
    data = bytearray(path.read_bytes())
    data[pos] ^= 0xFF
    path.write_bytes(bytes(data))


def test_checksum_mismatch(tmp_path: Path) -> None:
    storage, dvs, path = _dv_table(tmp_path, [[1, 2, 3]])
    _corrupt(path, path.stat().st_size - 1)  # the CRC itself
    with pytest.raises(DeletionVectorError, match="checksum"):
        read_deletion_vector(storage, dvs[0])


def test_corrupt_data_detected_by_checksum(tmp_path: Path) -> None:
    storage, dvs, path = _dv_table(tmp_path, [[1, 2, 3]])
    _corrupt(path, path.stat().st_size - 6)  # a bitmap byte
    with pytest.raises(DeletionVectorError, match="checksum"):
        read_deletion_vector(storage, dvs[0])


def test_size_mismatch(tmp_path: Path) -> None:
    storage, dvs, _ = _dv_table(tmp_path, [[1, 2, 3]])
    dv = dvs[0]
    wrong = DeletionVectorDescriptor("u", dv.path_or_inline_dv, dv.offset, dv.size_in_bytes + 1, 3)
    with pytest.raises(DeletionVectorError, match="size"):
        read_deletion_vector(storage, wrong)


def test_truncated_file(tmp_path: Path) -> None:
    storage, dvs, path = _dv_table(tmp_path, [[1, 2, 3]])
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(DeletionVectorError, match="truncated"):
        read_deletion_vector(storage, dvs[0])


def test_offset_past_end(tmp_path: Path) -> None:
    storage, dvs, _ = _dv_table(tmp_path, [[1]])
    dv = dvs[0]
    with pytest.raises(DeletionVectorError):
        read_deletion_vector(storage, DeletionVectorDescriptor("u", dv.path_or_inline_dv, 500, 10, 1))
    with pytest.raises(DeletionVectorError):
        read_deletion_vector(storage, DeletionVectorDescriptor("u", dv.path_or_inline_dv, 0, 10, 1))


def test_bad_version(tmp_path: Path) -> None:
    storage, dvs, path = _dv_table(tmp_path, [[1, 2, 3]])
    data = bytearray(path.read_bytes())
    data[0] = 2
    path.write_bytes(bytes(data))
    with pytest.raises(DeletionVectorError, match="version"):
        read_deletion_vector(storage, dvs[0])


def test_bad_magic_with_valid_checksum(tmp_path: Path) -> None:
    blob = struct.pack("<iQ", 1234567, 0)
    file_bytes, offsets = encode_dv_file([blob])
    dv = DeletionVectorDescriptor.for_uuid(uuid.uuid4(), offsets[0], len(blob), 0)
    _write(tmp_path, dv.relative_key(), file_bytes)
    with pytest.raises(DeletionVectorError, match="magic"):
        read_deletion_vector(make_storage(tmp_path), dv)


def test_cardinality_mismatch(tmp_path: Path) -> None:
    storage, dvs, _ = _dv_table(tmp_path, [[1, 2, 3]])
    dv = dvs[0]
    wrong = DeletionVectorDescriptor("u", dv.path_or_inline_dv, dv.offset, dv.size_in_bytes, 4)
    with pytest.raises(DeletionVectorError, match="cardinality"):
        read_deletion_vector(storage, wrong)


def test_inline_cardinality_and_size_mismatch() -> None:
    data = serialize_roaring_bitmap_array([1, 2])
    storage = _DirStorage("/nonexistent")
    good = DeletionVectorDescriptor.inline(data, 2)
    with pytest.raises(DeletionVectorError, match="cardinality"):
        read_deletion_vector(
            storage, DeletionVectorDescriptor("i", good.path_or_inline_dv, None, len(data), 3)
        )
    with pytest.raises(DeletionVectorError):
        read_deletion_vector(
            storage, DeletionVectorDescriptor("i", good.path_or_inline_dv, None, len(data) + 9, 2)
        )
    with pytest.raises(DeletionVectorError):
        read_deletion_vector(storage, DeletionVectorDescriptor("i", "not~z85!", None, 4, 2))


def test_missing_file_names_the_dv(tmp_path: Path) -> None:
    dv = DeletionVectorDescriptor.for_uuid(uuid.UUID(EXAMPLE_UUID), 1, 40, 6)
    with pytest.raises(ObjectNotFoundError, match=EXAMPLE_UUID) as info:
        read_deletion_vector(make_storage(tmp_path), dv)
    assert isinstance(info.value, MissingFileError)


# ----------------------------------------------------------------------------- paths
def test_absolute_path_inside_root(tmp_path: Path) -> None:
    root = tmp_path / "my table"
    blob = serialize_roaring_bitmap_array([7])
    file_bytes, offsets = encode_dv_file([blob])
    _write(root, "sub dir/dv.bin", file_bytes)
    storage = make_storage(root)
    for path in (
        f"file://{root}/sub%20dir/dv.bin".replace(" table", "%20table"),
        f"file:{root}/sub dir/dv.bin",
        f"{root}/sub dir/dv.bin",
        "sub%20dir/dv.bin",
    ):
        dv = DeletionVectorDescriptor("p", path, offsets[0], len(blob), 1)
        assert read_deletion_vector(storage, dv).tolist() == [7], path


@pytest.mark.parametrize(
    "path",
    [
        "s3://other-bucket/table/dv.bin",
        "s3://bucket/table-other/dv.bin",
        "s3://bucket/table/../x/dv.bin",
        "gs://bucket/table/dv.bin",
        "/etc/passwd",
        "../dv.bin",
        "a/../../dv.bin",
    ],
)
def test_path_escape_refused(path: str) -> None:
    dv = DeletionVectorDescriptor("p", path, 1, 10, 1)
    with pytest.raises(InvalidPathError):
        dv.relative_key("s3://bucket/table")


def test_path_escape_refused_on_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.bin"
    blob = serialize_roaring_bitmap_array([1])
    outside.write_bytes(encode_dv_file([blob])[0])
    (tmp_path / "table").mkdir()
    storage = make_storage(tmp_path / "table")
    # relative '..' and absolute paths into another store stay refused
    for path in ("../outside.bin", "s3://bucket/outside.bin"):
        with pytest.raises(InvalidPathError):
            read_deletion_vector(storage, DeletionVectorDescriptor("p", path, 1, len(blob), 1))
    # absolute paths elsewhere on the table's own filesystem are read (shallow clones; docs/decisions.md)
    for path in (str(outside), f"file://{outside}"):
        rows = read_deletion_vector(storage, DeletionVectorDescriptor("p", path, 1, len(blob), 1))
        assert rows.tolist() == [1]
    prefix_escape = DeletionVectorDescriptor("u", ".." + z85_encode(uuid.uuid4().bytes), 1, len(blob), 1)
    with pytest.raises(InvalidPathError):
        read_deletion_vector(storage, prefix_escape)


# ----------------------------------------------------------------------------- deleted_mask
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 3000), max_size=200),
    st.integers(0, 3000),
    st.integers(0, 1000),
)
def test_deleted_mask_matches_brute_force(deleted: list[int], start: int, num: int) -> None:
    arr = np.unique(np.array(deleted, dtype=np.uint64))
    mask = deleted_mask(arr, start, num)
    expected = np.array([r not in set(deleted) for r in range(start, start + num)], dtype=bool)
    np.testing.assert_array_equal(mask, expected)


def test_deleted_mask_large_indexes() -> None:
    deleted = np.array([5, 2**33, 2**33 + 2], dtype=np.uint64)
    assert deleted_mask(deleted, 2**33, 4).tolist() == [False, True, False, True]
    assert deleted_mask(deleted, 0, 0).size == 0
    assert deleted_mask(np.array([], dtype=np.uint64), 10, 3).all()


# ----------------------------------------------------------------------------- conformance corpus
def _corpus_dvs() -> list[tuple[str, dict[str, Any], int | None]]:
    found: dict[tuple[str, str], tuple[str, dict[str, Any], int | None]] = {}
    if not CORPUS.is_dir():
        return []
    for log in sorted(CORPUS.glob("**/_delta_log/*.json")):
        root = str(log.parent.parent)
        for line in log.read_bytes().decode("utf-8", errors="replace").splitlines():
            try:
                action = json.loads(line)
            except ValueError:
                continue  # empty lines and the corpus's deliberately broken logs
            if not isinstance(action, dict):
                continue
            for kind in ("add", "remove"):
                body = action.get(kind)
                if not body or not body.get("deletionVector"):
                    continue
                dv = body["deletionVector"]
                stats = json.loads(body["stats"]) if body.get("stats") else {}
                found[(root, json.dumps(dv, sort_keys=True))] = (root, dv, stats.get("numRecords"))
    return sorted(found.values(), key=lambda t: (t[0], json.dumps(t[1], sort_keys=True)))


_CORPUS_DVS = _corpus_dvs()


@pytest.mark.conformance
@pytest.mark.skipif(not _CORPUS_DVS, reason="conformance corpus not available")
@pytest.mark.parametrize(
    "root,dv_dict,num_records",
    _CORPUS_DVS,
    ids=[f"{Path(r).relative_to(CORPUS)}:{d['pathOrInlineDv']}@{d.get('offset')}" for r, d, _ in _CORPUS_DVS],
)
def test_corpus_deletion_vectors(root: str, dv_dict: dict[str, Any], num_records: int | None) -> None:
    dv = DeletionVectorDescriptor.from_dict(dv_dict)
    rows = read_deletion_vector(make_storage(root), dv)  # checks size, CRC and cardinality
    assert rows.size == dv_dict["cardinality"]
    assert np.all(np.diff(rows.astype(np.int64)) > 0)
    if num_records is not None:
        assert int(rows.max()) < num_records


@pytest.mark.conformance
@pytest.mark.skipif(not (CORPUS / "delta-rs/table-with-dv-small").is_dir(), reason="corpus not available")
def test_corpus_known_rows() -> None:
    storage = make_storage(CORPUS / "delta-rs/table-with-dv-small")
    dv = DeletionVectorDescriptor.from_dict(
        {
            "storageType": "u",
            "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA",
            "offset": 1,
            "sizeInBytes": 36,
            "cardinality": 2,
        }
    )
    assert dv.relative_key() == "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"
    assert read_deletion_vector(storage, dv).tolist() == [0, 9]
    inline = DeletionVectorDescriptor.from_dict(
        {
            "storageType": "i",
            "pathOrInlineDv": "^Bg9^0rr910000000000iXQKl0rr91000005c8Xg##093",
            "offset": None,
            "sizeInBytes": 34,
            "cardinality": 1,
        }
    )
    assert read_deletion_vector(storage, inline).tolist() == [3]  # z85-crate padded tail
