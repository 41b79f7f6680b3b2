"""Deletion vectors: descriptors, Z85, the RoaringBitmapArray format and DV files.

Implements the "Deletion Vectors" and "Deletion Vector Format" sections of the Delta protocol.
A deletion vector (DV) is the set of physical row indexes (0-based, per data file) that are
logically deleted. Readers get them as a sorted ``numpy.uint64`` array so a scan can mask record
batches by physical row index with ``numpy.searchsorted`` instead of per-row Python work.

Byte layouts (the protocol mixes endianness on purpose):

* RoaringBitmapArray (little endian): ``int32 magic`` then, for the *portable* magic 1681511377,
  ``uint64 numBuckets`` and per bucket ``uint32 key`` (the high 32 bits) + a standard portable
  32-bit Roaring bitmap (the low 32 bits). Delta Spark can also read a legacy *native* magic
  1681511376: ``int32 numBitmaps`` and per bitmap ``int32 size`` + bitmap, the key being its index.
* DV file (big endian): ``byte version == 1``, then per DV ``int32 dataSize``,
  ``dataSize`` bytes of RoaringBitmapArray, ``uint32 CRC-32(data)``. A descriptor's ``offset``
  points at the ``dataSize`` field.
* Inline DVs (``storageType='i'``): Z85 of the RoaringBitmapArray bytes, zero padded to a multiple
  of 4 before encoding; ``sizeInBytes`` is the unpadded length. The decoder also accepts the
  '#'-padded tail written by the Rust ``z85`` crate (delta-rs / delta-kernel-rs).
"""

from __future__ import annotations

import posixpath
import re
import struct
import uuid
import zlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from deltakernel.errors import DeletionVectorError, InvalidPathError, ObjectNotFoundError
from deltakernel.storage.base import Storage

from .paths import resolve_file

__all__ = [
    "NATIVE_MAGIC",
    "PORTABLE_MAGIC",
    "DeletionVectorDescriptor",
    "deleted_mask",
    "deserialize_roaring_bitmap_array",
    "encode_dv_file",
    "read_deletion_vector",
    "serialize_roaring_bitmap_array",
    "z85_decode",
    "z85_encode",
]

PORTABLE_MAGIC = 1681511377
NATIVE_MAGIC = 1681511376
DV_FILE_FORMAT_VERSION = 1

#: up to this offset the version byte and the DV are fetched in one ranged read
_SINGLE_READ_MAX_OFFSET = 1 << 16
_UUID_Z85_LEN = 20
_MAX_ROW_INDEX = (1 << 63) - 1  # keys must have a 0 most significant bit

# ----------------------------------------------------------------------------- Z85
_Z85_ALPHABET = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_ENC = np.frombuffer(_Z85_ALPHABET, dtype=np.uint8)
_Z85_DEC = np.full(256, 255, dtype=np.uint8)
_Z85_DEC[_Z85_ENC] = np.arange(85, dtype=np.uint8)
_POW85 = np.array([85**4, 85**3, 85**2, 85, 1], dtype=np.uint64)


def z85_encode(data: bytes) -> str:
    """ZeroMQ Z85 (RFC 32) of `data`, zero padded to a multiple of 4 bytes like Delta's codec.

    The padding mirrors Delta Spark's Base85Codec so inline DVs of any size can be encoded;
    decoders recover the true length from ``sizeInBytes``.
    """
    if len(data) % 4:
        data = data + b"\x00" * (4 - len(data) % 4)
    if not data:
        return ""
    words = np.frombuffer(data, dtype=">u4").astype(np.uint64)
    digits = (words[:, None] // _POW85[None, :]) % np.uint64(85)
    encoded: bytes = _Z85_ENC[digits.astype(np.intp)].tobytes()
    return encoded.decode("ascii")


def z85_decode(text: str) -> bytes:
    """Bytes of a Z85 string; raises ValueError on a bad length, character or overflowing group.

    Also accepts the padded tail of the Rust ``z85`` crate (used by delta-rs / delta-kernel-rs):
    a last group starting with k '#' (impossible in plain Z85, as it overflows 32 bits) holds
    4 - k bytes encoded big endian in the remaining 5 - k characters.
    """
    raw = text.encode("ascii")  # UnicodeEncodeError is a ValueError
    if len(raw) % 5:
        raise ValueError(f"Z85 input length {len(raw)} is not a multiple of 5")
    if not raw:
        return b""
    tail = b""
    pad = len(raw[-5:]) - len(raw[-5:].lstrip(b"#"))
    if 0 < pad < 4:
        tail_value = _z85_values(raw[-5 + pad :], 5 - pad)
        if tail_value >> (8 * (4 - pad)):
            raise ValueError("Z85 padded tail group overflows")
        tail = tail_value.to_bytes(4 - pad, "big")
        raw = raw[:-5]
    digits = _z85_digits(raw)
    values = (digits.reshape(-1, 5).astype(np.uint64) * _POW85[None, :]).sum(axis=1, dtype=np.uint64)
    if (values > np.uint64(0xFFFFFFFF)).any():
        raise ValueError("Z85 group exceeds 32 bits")
    decoded: bytes = values.astype(">u4").tobytes()
    return decoded + tail


def _z85_digits(raw: bytes) -> npt.NDArray[np.uint8]:
    digits = _Z85_DEC[np.frombuffer(raw, dtype=np.uint8)]
    if (digits == 255).any():
        bad = raw[int(np.argmax(digits == 255))]
        raise ValueError(f"invalid Z85 character {chr(bad)!r}")
    return digits


def _z85_values(raw: bytes, width: int) -> int:
    value = 0
    for digit in _z85_digits(raw[:width]).tolist():
        value = value * 85 + digit
    return value


# ----------------------------------------------------------------------------- paths
_URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_WINDOWS_DRIVE_RE = re.compile(r"^[A-Za-z]:[\\/]")
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "abfs": "abfss", "wasb": "wasbs", "gcs": "gs"}


def _split_location(location: str) -> tuple[str, str, str]:
    """(scheme, authority, decoded path) so a URI and a local path naming one place compare equal."""
    if _URI_RE.match(location) and not _WINDOWS_DRIVE_RE.match(location):
        parts = urlsplit(location)
        scheme = parts.scheme.lower()
        scheme = _SCHEME_ALIASES.get(scheme, scheme)
        netloc = parts.netloc
        if scheme == "file" and netloc.lower() == "localhost":
            netloc = ""
        return scheme, netloc, unquote(parts.path)
    return "file", "", location.replace("\\", "/") if _WINDOWS_DRIVE_RE.match(location) else location


def _is_absolute(path: str) -> bool:
    return bool(_URI_RE.match(path)) or path.startswith(("/", "\\"))


def _check_relative_key(key: str, what: str) -> str:
    """Refuse keys that could leave the table root; keys are never allowed to climb with '..'."""
    segments = re.split(r"[\\/]", key)
    if not key or key.startswith(("/", "\\")) or ".." in segments or _URI_RE.match(key):
        raise InvalidPathError(f"{what} {key!r} escapes the table root")
    return key


def _key_inside_root(location: str, root_uri: str, what: str) -> str:
    """Key of an absolute `location` relative to `root_uri`, or InvalidPathError if outside it."""
    scheme, netloc, path = _split_location(location)
    r_scheme, r_netloc, r_path = _split_location(root_uri.rstrip("/"))
    r_path = r_path.rstrip("/")
    if scheme != r_scheme or netloc != r_netloc or not path.startswith(r_path + "/"):
        raise InvalidPathError(f"{what} {location!r} is outside the table root {root_uri!r}")
    key = path[len(r_path) + 1 :]
    _check_relative_key(key, what)
    return posixpath.normpath(key)  # drop '.' segments and '//'; '..' was refused above


# ----------------------------------------------------------------------------- descriptor
def _as_int(name: str, value: object) -> int:
    """Integers from JSON, Arrow or numpy; bools and floats are malformed descriptors."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise DeletionVectorError(f"deletion vector {name} must be an integer, got {value!r}")


@dataclass(frozen=True)
class DeletionVectorDescriptor:
    """The ``deletionVector`` struct of an add/remove action (protocol field names in comments)."""

    storage_type: str  # storageType: 'u' (relative UUID path), 'p' (absolute path), 'i' (inline)
    path_or_inline_dv: str  # pathOrInlineDv
    offset: int | None  # offset of the DV's size field in its file; None when inline
    size_in_bytes: int  # sizeInBytes: RoaringBitmapArray length (before Z85 if inline)
    cardinality: int  # number of deleted rows

    def __post_init__(self) -> None:
        if self.storage_type not in ("u", "p", "i"):
            raise DeletionVectorError(f"unknown deletion vector storageType {self.storage_type!r}")
        if self.size_in_bytes < 0 or self.cardinality < 0:
            raise DeletionVectorError("deletion vector sizeInBytes and cardinality must be >= 0")
        if self.offset is not None and self.offset < 0:
            raise DeletionVectorError(f"negative deletion vector offset {self.offset}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DeletionVectorDescriptor:
        """Build from the JSON/Arrow struct form (camelCase keys); malformed -> DeletionVectorError."""
        try:
            storage_type = d["storageType"]
            path = d["pathOrInlineDv"]
            size = d["sizeInBytes"]
            cardinality = d["cardinality"]
        except (KeyError, TypeError) as exc:
            raise DeletionVectorError(f"deletion vector descriptor lacks {exc}: {d!r}") from exc
        offset = d.get("offset")
        if not isinstance(storage_type, str) or not isinstance(path, str):
            raise DeletionVectorError(f"malformed deletion vector descriptor: {d!r}")
        if size is None or cardinality is None:
            raise DeletionVectorError(f"deletion vector descriptor has null fields: {d!r}")
        return cls(
            storage_type,
            path,
            None if offset is None else _as_int("offset", offset),
            _as_int("sizeInBytes", size),
            _as_int("cardinality", cardinality),
        )

    @classmethod
    def for_uuid(
        cls, dv_uuid: uuid.UUID, offset: int, size_in_bytes: int, cardinality: int, prefix: str = ""
    ) -> DeletionVectorDescriptor:
        """A 'u' descriptor for a DV written to ``[prefix/]deletion_vector_<uuid>.bin`` (writers)."""
        return cls("u", prefix + z85_encode(dv_uuid.bytes), offset, size_in_bytes, cardinality)

    @classmethod
    def inline(cls, data: bytes, cardinality: int) -> DeletionVectorDescriptor:
        """An 'i' descriptor holding serialized RoaringBitmapArray `data` in the log (writers)."""
        return cls("i", z85_encode(data), None, len(data), cardinality)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; ``offset`` is omitted when None, as the protocol requires for inline DVs."""
        out: dict[str, Any] = {"storageType": self.storage_type, "pathOrInlineDv": self.path_or_inline_dv}
        if self.offset is not None:
            out["offset"] = self.offset
        out["sizeInBytes"] = self.size_in_bytes
        out["cardinality"] = self.cardinality
        return out

    @property
    def unique_id(self) -> str:
        """``<storageType><pathOrInlineDv>[@<offset>]``: the DV half of the replay reconciliation key."""
        base = self.storage_type + self.path_or_inline_dv
        return base if self.offset is None else f"{base}@{self.offset}"

    @property
    def is_inline(self) -> bool:
        return self.storage_type == "i"

    def uuid(self) -> uuid.UUID:
        """The UUID a 'u' descriptor encodes in its last 20 characters."""
        if self.storage_type != "u":
            raise DeletionVectorError(f"storageType {self.storage_type!r} has no UUID")
        encoded = self.path_or_inline_dv[-_UUID_Z85_LEN:]
        if len(self.path_or_inline_dv) < _UUID_Z85_LEN:
            raise DeletionVectorError(f"deletion vector path {self.path_or_inline_dv!r} is too short")
        try:
            return uuid.UUID(bytes=z85_decode(encoded))
        except ValueError as exc:
            raise DeletionVectorError(f"bad deletion vector UUID {encoded!r}: {exc}") from exc

    def relative_key(self, table_root_uri: str | None = None) -> str:
        """Storage key of the DV file relative to the table root.

        'u' needs no root; 'p' is accepted only when it lies inside `table_root_uri` (a DV outside
        the table's storage is refused); a scheme-less relative 'p' path is taken as relative.
        """
        if self.storage_type == "u":
            prefix = self.path_or_inline_dv[:-_UUID_Z85_LEN]
            name = f"deletion_vector_{self.uuid()}.bin"
            return _check_relative_key(f"{prefix}/{name}" if prefix else name, "deletion vector path")
        if self.storage_type == "p":
            path = self.path_or_inline_dv
            if _URI_RE.match(path) or path.startswith(("/", "\\")):
                if table_root_uri is None:
                    raise InvalidPathError(f"absolute deletion vector path {path!r} needs the table root")
                return _key_inside_root(path, table_root_uri, "deletion vector path")
            return _check_relative_key(unquote(path), "deletion vector path")
        raise DeletionVectorError("an inline deletion vector has no file")

    def absolute_path(self, table_root_uri: str) -> str:
        """Absolute location of the DV file (protocol "absolutePath"); not defined for inline DVs."""
        if self.storage_type == "p":
            return self.path_or_inline_dv
        return f"{table_root_uri.rstrip('/')}/{self.relative_key()}"

    def inline_data(self) -> bytes:
        """The RoaringBitmapArray bytes of an inline DV (Z85 decoded, padding dropped)."""
        if self.storage_type != "i":
            raise DeletionVectorError(f"storageType {self.storage_type!r} is not inline")
        try:
            data = z85_decode(self.path_or_inline_dv)
        except ValueError as exc:
            raise DeletionVectorError(f"inline deletion vector is not valid Z85: {exc}") from exc
        if len(data) < self.size_in_bytes or len(data) - self.size_in_bytes >= 4:
            raise DeletionVectorError(
                f"inline deletion vector decodes to {len(data)} bytes, descriptor says {self.size_in_bytes}"
            )
        return data[: self.size_in_bytes]


# ----------------------------------------------------------------------------- RoaringBitmapArray
_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX_CARDINALITY = 4096
_BITMAP_CONTAINER_BYTES = 8192


def _need(buf: bytes, end: int) -> None:
    if end > len(buf):
        raise DeletionVectorError(f"truncated roaring bitmap: needs {end} bytes, has {len(buf)}")


def _roaring32_size(buf: bytes, pos: int) -> int:
    """Length of the portable 32-bit Roaring bitmap serialized at `pos` (RoaringFormatSpec).

    pyroaring needs the bitmap's own byte range, and the 64-bit format does not record it, so the
    header is parsed: cookie, container count, run flags, (key, cardinality-1) pairs, offsets.
    """
    _need(buf, pos + 4)
    cookie = int.from_bytes(buf[pos : pos + 4], "little")
    p = pos + 4
    run_flags: npt.NDArray[np.bool_] | None = None
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        n = (cookie >> 16) + 1
        flag_bytes = (n + 7) // 8
        _need(buf, p + flag_bytes)
        bits = np.unpackbits(np.frombuffer(buf, np.uint8, flag_bytes, p), bitorder="little")
        run_flags = bits[:n].astype(bool)
        p += flag_bytes
        has_offsets = n >= _NO_OFFSET_THRESHOLD
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        _need(buf, p + 4)
        n = int.from_bytes(buf[p : p + 4], "little")
        p += 4
        has_offsets = True
    else:
        raise DeletionVectorError(f"bad roaring bitmap cookie {cookie}")
    if n > 1 << 16:
        raise DeletionVectorError(f"roaring bitmap claims {n} containers")
    _need(buf, p + 4 * n)
    cards = np.frombuffer(buf, "<u2", 2 * n, p)[1::2].astype(np.int64) + 1
    p += 4 * n
    if n == 0:
        return p - pos

    def container_size(i: int, cpos: int) -> int:
        if run_flags is not None and run_flags[i]:
            _need(buf, cpos + 2)
            return 2 + 4 * int.from_bytes(buf[cpos : cpos + 2], "little")
        card = int(cards[i])
        return 2 * card if card <= _ARRAY_MAX_CARDINALITY else _BITMAP_CONTAINER_BYTES

    if has_offsets:
        _need(buf, p + 4 * n)
        last_offset = int(np.frombuffer(buf, "<u4", 1, p + 4 * (n - 1))[0])
        cpos = pos + last_offset
        end = cpos + container_size(n - 1, cpos)
    else:
        end = p
        for i in range(n):
            end += container_size(i, end)
    _need(buf, end)
    return end - pos


def _bitmap_values(chunk: bytes) -> npt.NDArray[np.uint32]:
    try:
        bitmap = BitMap.deserialize(chunk)
    except (ValueError, IndexError, OverflowError) as exc:
        raise DeletionVectorError(f"corrupt roaring bitmap: {exc}") from exc
    values: npt.NDArray[np.uint32] = np.frombuffer(bitmap.to_array(), dtype=np.uint32)
    return values


def _combine(key: int, lows: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint64]:
    combined: npt.NDArray[np.uint64] = (np.uint64(key) << np.uint64(32)) | lows.astype(np.uint64)
    return combined


def deserialize_roaring_bitmap_array(data: bytes) -> npt.NDArray[np.uint64]:
    """Sorted deleted row indexes of a RoaringBitmapArray (portable or legacy native magic).

    The header integers are little endian per the protocol; a header written big endian (as in the
    protocol's own inline example, a native-format DV) is accepted too. The embedded 32-bit
    bitmaps are always little endian. Bytes after the last bitmap are ignored, as Delta Spark does;
    files are bounded by their size field and CRC, and the reader checks the cardinality.
    """
    data = bytes(data)
    _need(data, 4)
    order = "<"
    (magic,) = struct.unpack_from("<i", data, 0)
    if magic not in (PORTABLE_MAGIC, NATIVE_MAGIC):
        (big_magic,) = struct.unpack_from(">i", data, 0)
        if big_magic not in (PORTABLE_MAGIC, NATIVE_MAGIC):
            raise DeletionVectorError(f"unexpected RoaringBitmapArray magic number {magic}")
        magic, order = big_magic, ">"
    parts: list[npt.NDArray[np.uint64]] = []
    if magic == PORTABLE_MAGIC:
        _need(data, 12)
        (count,) = struct.unpack_from(order + "Q", data, 4)
        if count * 12 > len(data) - 12:  # each bucket is >= 4 key + 8 empty-bitmap bytes
            raise DeletionVectorError(f"RoaringBitmapArray claims {count} buckets in {len(data)} bytes")
        pos = 12
        previous = -1
        for _ in range(count):
            _need(data, pos + 4)
            (key,) = struct.unpack_from(order + "I", data, pos)
            if key > 0x7FFFFFFF or key <= previous:
                raise DeletionVectorError(f"RoaringBitmapArray bucket key {key} is negative or unsorted")
            previous = key
            pos += 4
            size = _roaring32_size(data, pos)
            parts.append(_combine(key, _bitmap_values(data[pos : pos + size])))
            pos += size
    else:
        _need(data, 8)
        (count,) = struct.unpack_from(order + "i", data, 4)
        if count < 0 or count * 12 > len(data) - 8:
            raise DeletionVectorError(f"RoaringBitmapArray claims {count} bitmaps in {len(data)} bytes")
        pos = 8
        for key in range(count):
            _need(data, pos + 4)
            (size,) = struct.unpack_from(order + "i", data, pos)
            pos += 4
            if size < 0:
                raise DeletionVectorError(f"negative bitmap size {size}")
            _need(data, pos + size)
            parts.append(_combine(key, _bitmap_values(data[pos : pos + size])))
            pos += size
    if not parts:
        return np.empty(0, dtype=np.uint64)
    return np.concatenate(parts)


def _as_row_index_array(row_indexes: Iterable[int] | npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    arr = np.asarray(row_indexes if isinstance(row_indexes, np.ndarray) else list(row_indexes))
    if arr.size == 0:
        return np.empty(0, dtype=np.uint64)
    if arr.dtype.kind == "O":
        values = [int(v) for v in arr.ravel()]
        if min(values) < 0 or max(values) > _MAX_ROW_INDEX:
            raise ValueError("row indexes must be in [0, 2**63)")
        return np.array(values, dtype=np.uint64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"row indexes must be integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "i" and int(arr.min()) < 0:
        raise ValueError("row indexes must be non-negative")
    out = arr.astype(np.uint64).ravel()
    if int(out.max()) > _MAX_ROW_INDEX:
        raise ValueError("row indexes must be below 2**63")
    return out


def _sorted_unique(rows: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """Sort + dedupe; avoids numpy 2's hash-based ``np.unique``, which is slow on large uint64."""
    if rows.size > 1 and not bool(np.all(rows[1:] >= rows[:-1])):
        rows = np.sort(rows)
    if rows.size > 1:
        rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
    return rows


def serialize_roaring_bitmap_array(row_indexes: Iterable[int] | npt.NDArray[Any]) -> bytes:
    """Portable RoaringBitmapArray bytes (magic + 64-bit bitmap) of a set of row indexes.

    Duplicates are dropped and order does not matter; empty buckets are not written.
    """
    rows = _sorted_unique(_as_row_index_array(row_indexes))
    highs = (rows >> np.uint64(32)).astype(np.uint32)
    lows = (rows & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    starts = np.flatnonzero(highs[1:] != highs[:-1]) + 1 if rows.size else np.empty(0, np.intp)
    bounds = [0, *starts.tolist(), int(rows.size)] if rows.size else [0]
    keys = highs[bounds[:-1]].tolist()
    out = [struct.pack("<iQ", PORTABLE_MAGIC, len(keys))]
    for i, key in enumerate(keys):
        low_values = array("I")
        low_values.frombytes(lows[bounds[i] : bounds[i + 1]].tobytes())
        bitmap = BitMap(low_values)
        bitmap.run_optimize()
        out.append(struct.pack("<I", key))
        out.append(bitmap.serialize())
    return b"".join(out)


# ----------------------------------------------------------------------------- DV files
def encode_dv_file(bitmaps: Sequence[bytes]) -> tuple[bytes, list[int]]:
    """A version-1 DV file holding the serialized `bitmaps`, and the descriptor offset of each."""
    out = [bytes([DV_FILE_FORMAT_VERSION])]
    offsets: list[int] = []
    pos = 1
    for data in bitmaps:
        offsets.append(pos)
        out.append(struct.pack(">i", len(data)))
        out.append(bytes(data))
        out.append(struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF))
        pos += 8 + len(data)
    return b"".join(out), offsets


def _read_dv_file(storage: Storage, key: str, descriptor: DeletionVectorDescriptor) -> bytes:
    """The checked RoaringBitmapArray bytes of one on-disk DV (version, size and CRC verified)."""
    # An absent offset means the first DV, right after the version byte (as delta-kernel-rs reads it).
    offset = 1 if descriptor.offset is None else descriptor.offset
    size = descriptor.size_in_bytes
    where = storage.full_uri(key)
    if offset < 1:
        raise DeletionVectorError(f"deletion vector offset {offset} overlaps the header of {where}")
    end = offset + 4 + size + 4
    try:
        if offset <= _SINGLE_READ_MAX_OFFSET:
            buf = storage.read(key, 0, end)
            header, region = buf[:1], buf[offset:end]
        else:
            header = storage.read(key, 0, 1)
            region = storage.read(key, offset, end)
    except ObjectNotFoundError as exc:
        raise ObjectNotFoundError(f"deletion vector file not found: {where}") from exc
    if len(header) < 1 or header[0] != DV_FILE_FORMAT_VERSION:
        got = header[0] if header else None
        raise DeletionVectorError(f"unsupported deletion vector file version {got} in {where}")
    if len(region) < 4:
        raise DeletionVectorError(f"deletion vector at offset {offset} is past the end of {where}")
    (data_size,) = struct.unpack_from(">i", region, 0)
    if data_size != size:
        raise DeletionVectorError(
            f"deletion vector size mismatch in {where}@{offset}: file says {data_size}, log says {size}"
        )
    if len(region) < 8 + size:
        raise DeletionVectorError(f"deletion vector in {where}@{offset} is truncated")
    data = region[4 : 4 + size]
    (stored_crc,) = struct.unpack_from(">I", region, 4 + size)
    actual_crc = zlib.crc32(data) & 0xFFFFFFFF
    if stored_crc != actual_crc:
        raise DeletionVectorError(
            f"deletion vector checksum mismatch in {where}@{offset}: {stored_crc:#010x} != {actual_crc:#010x}"
        )
    return bytes(data)


def read_deletion_vector(
    storage: Storage, descriptor: DeletionVectorDescriptor, table_root_uri: str | None = None
) -> npt.NDArray[np.uint64]:
    """Sorted uint64 physical row indexes the DV deletes, verified against the descriptor.

    `table_root_uri` (default ``storage.root_uri``) is what absolute 'p' paths are checked against;
    it must name the same place as the storage root, since keys are passed to `storage` as is.
    """
    if descriptor.is_inline:
        data = descriptor.inline_data()
        where = "inline deletion vector"
    elif descriptor.storage_type == "p" and table_root_uri is None and _is_absolute(descriptor.path_or_inline_dv):
        # an absolute 'p' path may lie anywhere in the table's store (shallow clones): kernel/paths.py decides
        target, key = resolve_file(storage, descriptor.path_or_inline_dv)
        data = _read_dv_file(target, key, descriptor)
        where = f"deletion vector {target.full_uri(key)}"
    else:
        root = storage.root_uri if table_root_uri is None else table_root_uri
        key = descriptor.relative_key(root)
        data = _read_dv_file(storage, key, descriptor)
        where = f"deletion vector {storage.full_uri(key)}"
    try:
        rows = deserialize_roaring_bitmap_array(data)
    except DeletionVectorError as exc:
        raise DeletionVectorError(f"{where}: {exc}") from exc
    if rows.size != descriptor.cardinality:
        raise DeletionVectorError(
            f"{where} holds {rows.size} rows but its descriptor says cardinality {descriptor.cardinality}"
        )
    return rows


def deleted_mask(deleted: npt.NDArray[np.uint64], start_row: int, num_rows: int) -> npt.NDArray[np.bool_]:
    """Keep-mask (True = row survives) for physical rows ``[start_row, start_row + num_rows)``.

    `deleted` must be sorted (as `read_deletion_vector` returns it); a batch is masked with two
    binary searches plus one scatter, independent of the DV's total size.
    """
    if start_row < 0 or num_rows < 0:
        raise ValueError("start_row and num_rows must be non-negative")
    mask = np.ones(num_rows, dtype=np.bool_)
    deleted = np.asarray(deleted, dtype=np.uint64)
    if deleted.size == 0 or num_rows == 0:
        return mask
    bounds = np.array([start_row, start_row + num_rows], dtype=np.uint64)
    lo, hi = np.searchsorted(deleted, bounds, side="left").tolist()
    if hi > lo:
        mask[(deleted[lo:hi] - np.uint64(start_row)).astype(np.intp)] = False
    return mask
