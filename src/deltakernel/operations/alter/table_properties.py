"""Validation of `delta.*` table properties, which protocol features each one turns on, and feature names.

Why validate: a typo such as `delta.enableChangeDatafeed` would otherwise be stored silently and the
feature never enabled, and a bad value (`delta.checkpointInterval=abc`) breaks every later writer.
Keys outside the `delta.` namespace are user properties and are stored as given (as in Spark).
`delta.feature.<name> = supported` and `delta.minReaderVersion/minWriterVersion` are protocol
requests, never stored in the configuration (Spark strips them the same way).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...errors import DeltaError
from ...kernel.protocol.features import LEGACY_FEATURES, SUPPORTED_WRITER_FEATURES

_BOOL = ("true", "false")
_INTERVAL = re.compile(r"^\s*interval\s+\d+\s+(nanosecond|microsecond|millisecond|second|minute|hour|day|week)s?"
                       r"\s*$", re.IGNORECASE)


def _is_bool(v: str) -> bool:
    return v.strip().lower() in _BOOL


def _is_int(lo: int) -> Callable[[str], bool]:
    def check(v: str) -> bool:
        try:
            return int(v.strip()) >= lo
        except ValueError:
            return False

    return check


def _one_of(*choices: str) -> Callable[[str], bool]:
    return lambda v: v.strip().lower() in {c.lower() for c in choices}


def _is_interval(v: str) -> bool:
    return bool(_INTERVAL.match(v))


def _any(v: str) -> bool:
    return True


#: known writable delta.* properties and their value checks
KNOWN_PROPERTIES: dict[str, Callable[[str], bool]] = {
    "delta.appendOnly": _is_bool,
    "delta.enableChangeDataFeed": _is_bool,
    "delta.enableDeletionVectors": _is_bool,
    "delta.enableRowTracking": _is_bool,
    "delta.enableInCommitTimestamps": _is_bool,
    "delta.enableTypeWidening": _is_bool,
    "delta.enableVariantShredding": _is_bool,
    "delta.enableExpiredLogCleanup": _is_bool,
    "delta.columnMapping.mode": _one_of("none", "name", "id"),
    "delta.checkpointInterval": _is_int(1),
    "delta.checkpoint.writeStatsAsJson": _is_bool,
    "delta.checkpoint.writeStatsAsStruct": _is_bool,
    "delta.checkpointPolicy": _one_of("classic", "v2"),
    "delta.deletedFileRetentionDuration": _is_interval,
    "delta.logRetentionDuration": _is_interval,
    "delta.setTransactionRetentionDuration": _is_interval,
    "delta.dataSkippingNumIndexedCols": _is_int(-1),
    "delta.dataSkippingStatsColumns": _any,
    "delta.isolationLevel": _one_of("Serializable", "WriteSerializable"),
    "delta.randomizeFilePrefixes": _is_bool,
    "delta.randomPrefixLength": _is_int(1),
    "delta.targetFileSize": _any,
    "delta.tuneFileSizesForRewrites": _is_bool,
    "delta.autoOptimize.optimizeWrite": _is_bool,
    "delta.autoOptimize.autoCompact": _any,
    "delta.compatibility.symlinkFormatManifest.enabled": _is_bool,
    "delta.parquet.compression.codec": _any,
    "delta.minReaderVersion": _is_int(1),
    "delta.minWriterVersion": _is_int(1),
}

#: properties that Delta manages itself; users may not set them
PROTECTED = ("delta.columnMapping.maxColumnId", "delta.inCommitTimestampEnablementVersion",
             "delta.inCommitTimestampEnablementTimestamp", "delta.rowTracking.", "delta.constraints.")

#: property -> (feature it needs, whether the value turns it on)
PROPERTY_FEATURES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "delta.appendOnly": ("appendOnly", lambda v: v.lower() == "true"),
    "delta.enableChangeDataFeed": ("changeDataFeed", lambda v: v.lower() == "true"),
    "delta.enableDeletionVectors": ("deletionVectors", lambda v: v.lower() == "true"),
    "delta.enableRowTracking": ("rowTracking", lambda v: v.lower() == "true"),
    "delta.enableInCommitTimestamps": ("inCommitTimestamp", lambda v: v.lower() == "true"),
    "delta.enableTypeWidening": ("typeWidening", lambda v: v.lower() == "true"),
    # the stable name; a table that has the -preview feature keeps it (`plan.protocol_for`, the alterer)
    "delta.enableVariantShredding": ("variantShredding", lambda v: v.lower() == "true"),
    "delta.columnMapping.mode": ("columnMapping", lambda v: v.lower() in ("name", "id")),
    "delta.checkpointPolicy": ("v2Checkpoint", lambda v: v.lower() == "v2"),
}


#: feature names as deltalake's `TableFeatures` enum spells them -> protocol names
_FEATURE_NAMES = {n.lower(): n for n in SUPPORTED_WRITER_FEATURES | set(LEGACY_FEATURES)}
_FEATURE_NAMES.update({"timestampwithouttimezone": "timestampNtz", "varianttypepreview": "variantType-preview",
                       "typewideningpreview": "typeWidening-preview",
                       "variantshreddingpreview": "variantShredding-preview", "icebergcompatv1": "icebergCompatV1",
                       "timestampnanos": "timestampNanos"})


def feature_name(feature: Any) -> str:
    """A protocol feature name from a string or a deltalake `TableFeatures` member."""
    text = str(getattr(feature, "name", None) or feature).rsplit(".", 1)[-1]
    key = text.replace("_", "").replace("-", "").lower()
    for cand in (text.lower(), key):
        if cand in _FEATURE_NAMES:
            return _FEATURE_NAMES[cand]
    raise DeltaError(f"unknown table feature {feature!r}")


def validate_properties(
    props: dict[str, str], current: dict[str, str], raise_if_not_exists: bool = True
) -> tuple[dict[str, str], set[str], tuple[int, int] | None]:
    """(properties to store, features requested by `delta.feature.*`, requested (reader, writer) or None)."""
    stored: dict[str, str] = {}
    explicit: set[str] = set()
    reader = writer = 0
    for key, value in props.items():
        if key.startswith("delta.feature."):
            if value.strip().lower() not in ("supported", "enabled"):
                raise DeltaError(f"{key} must be 'supported' (feature removal is DROP FEATURE), got {value!r}")
            explicit.add(feature_name(key[len("delta.feature."):]))
            continue
        if any(key == p or (p.endswith(".") and key.startswith(p)) for p in PROTECTED):
            if key.startswith("delta.constraints."):
                raise DeltaError(f"{key}: add CHECK constraints with add_constraint(), not as a table property")
            raise DeltaError(f"{key} is managed by Delta and cannot be set")
        canonical = next((k for k in KNOWN_PROPERTIES if k.lower() == key.lower()), None)
        if canonical is None:
            if key.lower().startswith("delta.") and raise_if_not_exists:
                raise DeltaError(f"{parse_error(key, value)}: unknown table property {key!r} (known delta.* "
                                 f"properties: {sorted(KNOWN_PROPERTIES)})")
            stored[key] = value
            continue
        if canonical in ("delta.minReaderVersion", "delta.minWriterVersion") and (
                not _is_int(1)(value) or int(value) > (3 if canonical == "delta.minReaderVersion" else 7)):
            valid = "['1','2','3']" if canonical == "delta.minReaderVersion" else "['2','3','4','5','6','7']"
            raise DeltaError(f"{canonical} = {value!r} is invalid, valid values are {valid}")
        if not KNOWN_PROPERTIES[canonical](value):
            raise DeltaError(f"invalid value {value!r} for table property {canonical}")
        if canonical == "delta.minReaderVersion":
            reader = int(value)
        elif canonical == "delta.minWriterVersion":
            writer = int(value)
        else:
            stored[canonical] = value.strip().lower() if KNOWN_PROPERTIES[canonical] is _is_bool else value
    if reader > 3 or writer > 7:
        raise DeltaError(f"unsupported protocol versions reader {reader}, writer {writer} (max 3, 7)")
    return stored, explicit, ((max(reader, 1), max(writer, 1)) if reader or writer else None)


def split_protocol_requests(conf: dict[str, str]) -> tuple[dict[str, str], set[str], tuple[int, int] | None]:
    """(configuration to store, features asked for by `delta.feature.*`, (reader, writer) asked for by
    `delta.minReaderVersion` / `delta.minWriterVersion`). Protocol requests are not table properties:
    Spark strips them from the configuration, and so does every deltakernel writer (create and ALTER)."""
    stored: dict[str, str] = {}
    feats: set[str] = set()
    versions = {"delta.minreaderversion": 0, "delta.minwriterversion": 0}
    for key, value in conf.items():
        low = key.lower()
        if low in versions:
            if not _is_int(1)(value):
                raise DeltaError(f"invalid value {value!r} for table property {key}: expected a positive integer")
            versions[low] = int(value)
        elif low.startswith("delta.feature."):
            if value.strip().lower() not in ("supported", "enabled"):
                raise DeltaError(f"{key} must be 'supported' (feature removal is DROP FEATURE), got {value!r}")
            feats.add(feature_name(key[len("delta.feature."):]))
        else:
            stored[key] = value
    r, w = versions["delta.minreaderversion"], versions["delta.minwriterversion"]
    return stored, feats, ((max(r, 1), max(w, 1)) if r or w else None)


def parse_error(key: str, value: Any) -> str:
    """deltalake's words for a property it cannot take (its users match on them); deltakernel's reason follows.
    `delta.enableIcebergCompatV1/V2` land here too: deltakernel does not write the icebergCompat features
    (docs/decisions.md), and deltalake refuses these properties with the same sentence."""
    text = f"Error parsing property '{key}':'{value}'"
    if str(key).lower().startswith("delta.enableicebergcompat"):
        text += " (deltakernel does not write the icebergCompat table features)"
    return text


def check_known_keys(keys: Iterable[str] | Mapping[str, Any], hint: bool = True) -> None:
    """deltalake's `raise_if_key_not_exists` at create: a `delta.*` key Delta does not define raises DeltaError
    (a typo such as `delta.enableChangeDataFed` would otherwise be silently stored); other keys are user keys.
    `hint`: say how to store it anyway (DeltaTable.create has the switch; write_deltalake has none)."""
    known = {k.lower() for k in KNOWN_PROPERTIES}
    values = keys if isinstance(keys, Mapping) else {}
    for key in keys:
        low = str(key).lower()
        if low.startswith("delta.") and low not in known and not low.startswith(("delta.feature.",
                                                                                   "delta.constraints.")):
            raise DeltaError(f"{parse_error(key, values.get(key))}: unknown table property {key!r} (known delta.* "
                             f"properties: {sorted(KNOWN_PROPERTIES)})"
                             + ("; pass raise_if_key_not_exists=False to store it anyway" if hint else ""))


__all__ = ["KNOWN_PROPERTIES", "PROPERTY_FEATURES", "check_known_keys", "parse_error", "split_protocol_requests",
           "validate_properties"]
