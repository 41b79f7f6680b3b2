"""Non-file actions (protocol, metaData, txn, domainMetadata, commitInfo) as small dataclasses.

File actions (add/remove/cdc) never become Python objects: replay keeps them in Arrow tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import CorruptLogError
from ..schema.types import StructType, parse_schema_string


@dataclass(frozen=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset[str] | None = None
    writer_features: frozenset[str] | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Protocol:
        try:
            rf = d.get("readerFeatures")
            wf = d.get("writerFeatures")
            return cls(
                int(d["minReaderVersion"]),
                int(d["minWriterVersion"]),
                frozenset(rf) if rf is not None else None,
                frozenset(wf) if wf is not None else None,
            )
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptLogError(f"malformed protocol action {d!r}: {e}") from e

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"minReaderVersion": self.min_reader_version, "minWriterVersion": self.min_writer_version}
        if self.reader_features is not None:
            out["readerFeatures"] = sorted(self.reader_features)
        if self.writer_features is not None:
            out["writerFeatures"] = sorted(self.writer_features)
        return out

    def has_feature(self, name: str) -> bool:
        return name in (self.reader_features or ()) or name in (self.writer_features or ())


@dataclass(frozen=True)
class Format:
    provider: str = "parquet"
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Metadata:
    id: str
    schema_string: str
    partition_columns: tuple[str, ...]
    configuration: dict[str, str]
    name: str | None = None
    description: str | None = None
    format: Format = field(default_factory=Format)
    created_time: int | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Metadata:
        try:
            fmt = d.get("format") or {}
            return cls(
                id=str(d["id"]),
                schema_string=d.get("schemaString") or '{"type":"struct","fields":[]}',
                partition_columns=tuple(d.get("partitionColumns") or ()),
                configuration={str(k): str(v) for k, v in (d.get("configuration") or {}).items()},
                name=d.get("name"),
                description=d.get("description"),
                format=Format(fmt.get("provider", "parquet"), dict(fmt.get("options") or {})),
                created_time=d.get("createdTime"),
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise CorruptLogError(f"malformed metaData action: {e}") from e

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "format": {"provider": self.format.provider, "options": self.format.options},
            "schemaString": self.schema_string,
            "partitionColumns": list(self.partition_columns),
            "configuration": self.configuration,
            "createdTime": self.created_time,
        }

    @property
    def schema(self) -> StructType:
        return parse_schema_string(self.schema_string)


@dataclass(frozen=True)
class Txn:
    app_id: str
    version: int
    last_updated: int | None = None


@dataclass(frozen=True)
class DomainMetadata:
    domain: str
    configuration: str
    removed: bool = False


@dataclass(frozen=True)
class CommitInfo:
    version: int
    info: dict[str, Any]

    @property
    def timestamp(self) -> int | None:
        ts = self.info.get("inCommitTimestamp", self.info.get("timestamp"))
        return int(ts) if ts is not None else None
