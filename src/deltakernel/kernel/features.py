"""Protocol gating: which reader/writer versions and table features deltakernel supports.

The supported sets are declared here and nowhere else; everything that reads a table calls
`check_read_supported` before touching data.
"""

from __future__ import annotations

from ..errors import UnsupportedFeatureError
from .actions import Protocol

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
    }
)

#: writer-only features whose presence does not change how data is read
READ_TRANSPARENT_WRITER_FEATURES: frozenset[str] = frozenset(
    {
        "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
        "identityColumns", "domainMetadata", "rowTracking", "inCommitTimestamp", "clustering",
        "icebergCompatV1", "icebergCompatV2", "allowColumnDefaults", "collations-preview",
    }
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
