"""Choosing the protocol a table needs (PROTOCOL.md "Table Features", "Legacy protocol versions").

Why "minimal": every reader and writer that can handle the features in use should still be able to
use the table. When every feature in use has a legacy version (appendOnly .. identityColumns) the
table keeps legacy versions, readable by old clients; otherwise it moves to writer version 7 with an
explicit feature list, and to reader version 3 only if some feature needs readers to understand it.
Upgrading a legacy table lists the features its old versions implied, so nothing is silently lost.
Versions never go down: protocol downgrades need a separate DROP FEATURE.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import UnsupportedFeatureError
from ..log.actions import Protocol
from .features import (
    LEGACY_FEATURES,
    MAX_READER_VERSION,
    MAX_WRITER_VERSION,
    READER_WRITER_FEATURES,
    SUPPORTED_WRITER_FEATURES,
    check_write_supported,
    writer_features_of,
)

#: features that cannot be enabled without others (Spark's `requiredFeatures`)
FEATURE_DEPENDENCIES: dict[str, frozenset[str]] = {
    "rowTracking": frozenset({"domainMetadata"}),
    "clustering": frozenset({"domainMetadata"}),
    "collations": frozenset({"domainMetadata"}), "collations-preview": frozenset({"domainMetadata"}),
    "icebergCompatV1": frozenset({"columnMapping"}),
    "icebergCompatV2": frozenset({"columnMapping"}),
    # PROTOCOL.md "Writer Requirements for Catalog-managed tables": in-commit timestamps (publishing rewrites
    # file times); delta-spark's CatalogOwnedTableFeature also requires vacuumProtocolCheck
    "catalogManaged": frozenset({"inCommitTimestamp", "vacuumProtocolCheck"}),
    "catalogOwned-preview": frozenset({"inCommitTimestamp", "vacuumProtocolCheck"}),
}


def features_in_effect(protocol: Protocol | None) -> set[str]:
    """Every feature a protocol enables, legacy versions included.

    A legacy feature counts only when both versions reach it: writer 5 with reader 1 does not enable
    column mapping (readers would not understand it), so upgrading such a table must raise the reader.
    """
    if protocol is None:
        return set()
    if protocol.min_writer_version < 7:
        return {f for f, (r, w) in LEGACY_FEATURES.items()
                if protocol.min_writer_version >= w and protocol.min_reader_version >= r}
    out = set(writer_features_of(protocol))
    if protocol.min_reader_version >= 3:
        out |= set(protocol.reader_features or ())
    return out


def with_dependencies(features: Iterable[str]) -> set[str]:
    out = set(features)
    pending = list(out)
    while pending:
        for dep in FEATURE_DEPENDENCIES.get(pending.pop(), ()):
            if dep not in out:
                out.add(dep)
                pending.append(dep)
    return out


def table_features_protocol(features: Iterable[str], current: Protocol | None = None) -> Protocol:
    """Writer 7 with every feature listed; reader 3 when a reader-writer feature is present (or already 3)."""
    feats = with_dependencies(set(features) | features_in_effect(current))
    reader_feats = {f for f in feats if f in READER_WRITER_FEATURES}
    cur_reader = current.min_reader_version if current is not None else 1
    if reader_feats or cur_reader >= 3:
        return Protocol(3, 7, frozenset(reader_feats), frozenset(feats))
    return Protocol(max(1, cur_reader), 7, None, frozenset(feats))


def minimal_protocol(features: set[str], current: Protocol | None = None) -> Protocol:
    """The smallest protocol enabling `features` plus everything `current` already enables.

    Raises UnsupportedFeatureError for features deltakernel cannot write.
    """
    for f in features:
        if f not in SUPPORTED_WRITER_FEATURES:
            raise UnsupportedFeatureError(f, f"cannot enable table feature {f!r}: deltakernel does not support it")
    if current is not None:
        check_write_supported(current)  # never rewrite (and so downgrade) a protocol we cannot write
        if with_dependencies(features) <= features_in_effect(current):
            return current  # nothing new: the protocol stays exactly as it is
    feats = with_dependencies(set(features) | features_in_effect(current))
    is_table_features = current is not None and (current.min_writer_version >= 7 or current.min_reader_version >= 3)
    if not is_table_features and all(f in LEGACY_FEATURES for f in feats):
        reader = max([1, *(LEGACY_FEATURES[f][0] for f in feats)])
        writer = max([2, *(LEGACY_FEATURES[f][1] for f in feats)])
        if current is not None:
            reader = max(reader, current.min_reader_version)
            writer = max(writer, current.min_writer_version)
        return Protocol(reader, writer)
    return table_features_protocol(feats, current)


def with_min_versions(protocol: Protocol, reader: int, writer: int) -> Protocol:
    """`protocol` raised to at least (reader, writer): what `delta.minReaderVersion` /
    `delta.minWriterVersion` ask for, at create and in ALTER alike. Versions never go down; moving to
    table features lists every feature the old versions implied."""
    if reader > MAX_READER_VERSION or writer > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(
            f"protocol ({reader}, {writer})",
            f"cannot set the protocol to reader {reader}, writer {writer}: deltakernel writes up to reader "
            f"{MAX_READER_VERSION}, writer {MAX_WRITER_VERSION}",
        )
    r = max(protocol.min_reader_version, reader)
    w = max(protocol.min_writer_version, writer)
    if (r, w) == (protocol.min_reader_version, protocol.min_writer_version):
        return protocol
    if r < 3 and w < 7:
        return Protocol(r, w)
    feats = features_in_effect(protocol)
    if r >= 3:  # reader 3 lists reader features and needs writer 7
        return Protocol(r, 7, frozenset(f for f in feats if f in READER_WRITER_FEATURES), frozenset(feats))
    return Protocol(r, w, None, frozenset(feats))


def protocol_never_downgraded(old: Protocol, new: Protocol) -> str | None:
    """Why `new` would downgrade `old` (lower versions or lost features), or None when it does not."""
    if new.min_reader_version < old.min_reader_version or new.min_writer_version < old.min_writer_version:
        return (f"versions would go down from ({old.min_reader_version}, {old.min_writer_version}) to "
                f"({new.min_reader_version}, {new.min_writer_version})")
    lost = features_in_effect(old) - features_in_effect(new)
    if lost:
        return f"features {sorted(lost)} would be dropped"
    return None


__all__ = ["FEATURE_DEPENDENCIES", "features_in_effect", "minimal_protocol", "protocol_never_downgraded",
           "table_features_protocol", "with_dependencies", "with_min_versions"]
