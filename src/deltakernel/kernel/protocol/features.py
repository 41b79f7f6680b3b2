"""Protocol gating: which reader/writer versions and table features deltakernel supports.

The supported sets are declared here and nowhere else; everything that reads a table calls
`check_read_supported` before touching data.
"""

from __future__ import annotations

from ...errors import UnsupportedFeatureError
from ..log.actions import Protocol

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7

#: reader features a read can honour (PROTOCOL.md "Table Features")
SUPPORTED_READER_FEATURES: frozenset[str] = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "geospatial",  # geometry/geography as WKB binary (kernel/schema/geospatial.py)
        "variantShredding", "variantShredding-preview",  # kernel/variant/unshred.py
        # read through the catalog's log tail (kernel/log/segment.py `LogTail`); a read without it is refused
        "catalogManaged",
        "catalogOwned-preview",
    }
)

#: the catalog-managed table feature and its preview name (PROTOCOL.md "Catalog-managed tables")
CATALOG_MANAGED_FEATURES: tuple[str, ...] = ("catalogManaged", "catalogOwned-preview")

#: writer-only features whose presence does not change how data is read
READ_TRANSPARENT_WRITER_FEATURES: frozenset[str] = frozenset(
    {
        "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
        "identityColumns", "domainMetadata", "rowTracking", "inCommitTimestamp", "clustering",
        "icebergCompatV1", "icebergCompatV2", "allowColumnDefaults", "collations-preview",
        "collations",
    }
)


#: writer features deltakernel's writers honour (everything else refuses writes)
SUPPORTED_WRITER_FEATURES: frozenset[str] = frozenset(
    {
        "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
        "identityColumns", "columnMapping", "deletionVectors", "timestampNtz", "domainMetadata",
        "rowTracking", "inCommitTimestamp", "v2Checkpoint", "vacuumProtocolCheck", "typeWidening",
        "typeWidening-preview", "allowColumnDefaults", "variantType", "variantType-preview", "clustering",
        "variantShredding", "variantShredding-preview",  # unshredded writes are always allowed (PROTOCOL.md)
        # written only through a catalog committer (kernel/transaction/committer.py)
        "catalogManaged", "catalogOwned-preview",
        "geospatial",
        "collations", "collations-preview",  # schema metadata + binary stats only (kernel/schema/collations.py)
    }
)

#: features and the legacy (reader, writer) versions that imply them
LEGACY_FEATURES: dict[str, tuple[int, int]] = {
    "appendOnly": (1, 2), "invariants": (1, 2), "checkConstraints": (1, 3), "changeDataFeed": (1, 4),
    "generatedColumns": (1, 4), "columnMapping": (2, 5), "identityColumns": (1, 6),
}

#: features that need readers to understand them (listed in readerFeatures at reader version 3)
READER_WRITER_FEATURES: frozenset[str] = frozenset(
    {"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck", "typeWidening",
     "typeWidening-preview", "variantType", "variantType-preview", "catalogManaged", "catalogOwned-preview",
     "geospatial", "variantShredding", "variantShredding-preview"}
)


def catalog_managed_feature(protocol: Protocol | None) -> str | None:
    """The catalog-managed feature the table has (`catalogManaged` or its preview name), None if neither."""
    if protocol is None:
        return None
    return next((f for f in CATALOG_MANAGED_FEATURES if protocol.has_feature(f)), None)


def is_catalog_managed(protocol: Protocol | None) -> bool:
    """Whether commits to the table go through its catalog (`catalogManaged` or its preview name)."""
    return catalog_managed_feature(protocol) is not None


def writer_features_of(protocol: Protocol) -> set[str]:
    """The writer features a protocol enables, for legacy versions too."""
    if protocol.min_writer_version >= 7:
        return set(protocol.writer_features or ())
    return {f for f, (_, w) in LEGACY_FEATURES.items() if protocol.min_writer_version >= w}


def check_write_supported(protocol: Protocol) -> None:
    """Raise UnsupportedFeatureError unless deltakernel can write this table without breaking it."""
    check_read_supported(protocol)
    if protocol.min_writer_version > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(
            f"writerVersion {protocol.min_writer_version}",
            f"table requires writer version {protocol.min_writer_version}; deltakernel supports up to 7",
        )
    for feature in sorted(writer_features_of(protocol)):
        if feature not in SUPPORTED_WRITER_FEATURES:
            raise UnsupportedFeatureError(
                feature, f"cannot write: table requires unsupported writer feature {feature!r}"
            )


def check_read_supported(protocol: Protocol) -> None:
    """Raise UnsupportedFeatureError unless every reader requirement is implemented."""
    rv = protocol.min_reader_version
    if rv > MAX_READER_VERSION or rv < 1:
        raise UnsupportedFeatureError(
            f"readerVersion {rv}", f"table requires reader version {rv}; deltakernel supports up to 3"
        )
    if rv == 3:
        for feature in sorted(protocol.reader_features or ()):
            if feature not in SUPPORTED_READER_FEATURES:
                raise UnsupportedFeatureError(feature, f"table requires unsupported reader feature {feature!r}")
