"""The seam between the two kinds of SparkSession: classic (py4j to the driver JVM) and Spark Connect (gRPC plans).

deltakernel's Spark engine is one engine: statements, executors, relation rewriting, metrics and errors exist once
and are written against the public DataFrame API both kinds share. What truly differs is gathered here, one small
protocol per concern, each with a classic implementation (`classic.py`) and a Connect one (`connect.py`):
- `CatalogAccess` - the session catalog: split a multipart name, find an entry, a managed table's default location,
  run a catalog statement below the Delta SQL router, keep the catalog's column list in step with the log;
- `TaskShipping` - how executors' tasks receive driver-side values (broadcast variables vs the task's closure) and
  how many tasks a job should have;
- `TypeParsing` - a column list in Spark DDL parsed by Spark itself (`a INT, b STRUCT<...>`), bound to the session;
- `SourceAccess` - whether Spark's JVM has a Hadoop filesystem for a table's scheme, and a frame read through the
  registered Python data source below enable()'s routing;
- `ConfAccess` - session confs read and written in bulk (one round trip for many keys on Connect, local py4j calls
  on classic).
The kind is chosen once per session (`kind_of`, remembered on the session object) from the session's class, so
feature code asks `kind_of(spark).catalog.lookup(...)` and never branches on the kind itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..catalog.entry import CatalogEntry


class CatalogAccess(Protocol):
    """Spark's session catalog as deltakernel needs it (names, entries, registration, the display schema)."""

    def split_name(self, name: str) -> list[str]:
        """A multipart table name as Spark reads it; raises on a malformed name."""

    def unqualified(self, name: str) -> tuple[str, str] | None:
        """(current database, name) for a one-part name, None when a temporary view of that name shadows it."""

    def lookup(self, parts: list[str]) -> CatalogEntry | None:
        """The session-catalog entry (table or permanent view, any provider) a name denotes, or None."""

    def default_location(self, db: str, table: str) -> str:
        """Where Spark puts a managed table `db.table` (raises where the kind cannot tell)."""

    def columns_ddl(self, schema_json: str) -> str:
        """`name type [NOT NULL] [COMMENT ...], ...` of a Spark schema JSON, as `CREATE TABLE` takes it."""

    def run_ddl(self, text: str) -> None:
        """Run a catalog statement below the Delta SQL router (never routed back into deltakernel)."""

    def sync_columns(self, ref: Any, want_json: str) -> None:
        """Make the catalog's column list of Delta catalog table `ref` the log's (`want_json`, a schema JSON)."""


class TaskShipping(Protocol):
    """How a Spark job's tasks get driver-side values, and how many tasks a job should have."""

    def broadcast(self, value: Any) -> Any:
        """A handle tasks read `.value` from (None: the value travels in the task's closure)."""

    def default_parallelism(self) -> int:
        """Spark's default parallelism as far as this kind can see it."""


class TypeParsing(Protocol):
    """Spark DDL types as Spark reads them, by this session (not the process's "active" one)."""

    def parse_columns(self, ddl: str) -> Any:
        """`name type [NOT NULL] [COMMENT ...], ...` parsed by Spark: a pyspark `StructType`."""


class SourceAccess(Protocol):
    """What a read asks of Spark's side before choosing its plan."""

    def has_hadoop_filesystem(self, scheme: str, log_uri: str) -> bool:
        """Whether Spark's JVM can read `scheme://` URIs (S3A jars for s3, ...); `log_uri` is the table's log
        directory, for a kind that can only find out by trying. Raises or returns False when it cannot."""

    def python_source_frame(self, source: str, path: str, options: dict[str, str], schema: str | None = None) -> Any:
        """A DataFrame read through the registered Python data source `source` (bypassing enable()'s routing);
        `schema` (Spark's JSON of the source's schema, when the caller knows it) spares Spark asking the source in a
        Python worker for it on every analysis."""


class ConfAccess(Protocol):
    """Session confs, many keys at a time: a Connect session answers each `spark.conf` call with its own gRPC
    call (an append read four confs and set, then restored, five: 0.1-0.7 s of it), so what a kind can batch it
    batches."""

    def get(self, keys: list[str]) -> dict[str, str | None]:
        """The values explicitly set for `keys` (None: unset), as `spark.conf.get(key, None)` reads them."""

    def set(self, values: dict[str, str | None]) -> None:
        """Set each key to its value; None unsets it."""


class SessionKind(Protocol):
    """One session's side of the seam."""

    name: str  # "classic" or "connect"
    catalog: CatalogAccess
    tasks: TaskShipping
    sources: SourceAccess
    types: TypeParsing
    confs: ConfAccess


def is_connect_session(spark: Any) -> bool:
    """A Spark Connect session (pyspark.sql.connect), including `spark.api.mode=connect`: read from the class."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def kind_of(spark: Any) -> SessionKind:
    """The session's kind, chosen once and remembered on the session object."""
    kind = getattr(spark, "_deltakernel_kind", None)
    if kind is not None:
        return kind  # type: ignore[no-any-return]
    if is_connect_session(spark):
        from .connect import ConnectKind

        kind = ConnectKind(spark)
    else:
        from .classic import ClassicKind

        kind = ClassicKind(spark)
    try:
        spark._deltakernel_kind = kind
    except Exception:  # a session class that refuses attributes: the kind is cheap to rebuild
        pass
    return kind


__all__ = ["CatalogAccess", "ConfAccess", "SessionKind", "SourceAccess", "TaskShipping", "TypeParsing",
           "is_connect_session", "kind_of"]
