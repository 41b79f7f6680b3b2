"""The classic side of the seam: the driver JVM over py4j (Spark's parser, the session catalog, broadcasts)."""

from __future__ import annotations

import json
from typing import Any

from ..catalog.entry import CatalogEntry
from ..scan.jvm_refs import jclass
from .bound import SessionBound

_TABLE_IDENTIFIER = "org.apache.spark.sql.catalyst.TableIdentifier"


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


def session_state(spark: Any, name: str) -> Any:
    """A member of the JVM session's `SessionState` (`catalog`, `sqlParser`), fetched once per session and kept on
    the session object. Why: the router asks the catalog and the parser several times per statement, and each
    `sessionState().catalog()` is two py4j round trips (and two finalizer deletes later). Safe to keep: a
    SparkSession's `sessionState` is a lazy val, and its `catalog` / `sqlParser` are fixed when it is built."""
    key = f"_dk_jvm_{name}"
    found = spark.__dict__.get(key)
    if found is None:
        found = spark.__dict__.setdefault(key, getattr(spark._jsparkSession.sessionState(), name)())
    return found


class ClassicCatalog(SessionBound):
    """`CatalogAccess` through the JVM's `SessionCatalog`: one py4j call per question, exact as Spark answers."""


    def _catalog(self) -> Any:
        return session_state(self._spark, "catalog")

    def _ident(self, db: str, table: str) -> Any:
        """`TableIdentifier(table, Some(db))` in two round trips (the classes resolved once per gateway)."""
        jvm = self._spark._jvm
        return jclass(jvm, _TABLE_IDENTIFIER)(table, jclass(jvm, "scala.Some")(db))

    def split_name(self, name: str) -> list[str]:
        parser = session_state(self._spark, "sqlParser")
        it = parser.parseMultipartIdentifier(name).iterator()
        parts = []
        while it.hasNext():
            parts.append(str(it.next()))
        return parts

    def unqualified(self, name: str) -> tuple[str, str] | None:
        cat = self._catalog()
        if cat.isTempView(jclass(self._spark._jvm, _TABLE_IDENTIFIER)(name)):  # the name without a database
            return None
        return str(cat.getCurrentDatabase()), name

    def table_metadata(self, db: str, table: str) -> Any:
        """The JVM `CatalogTable` of `db.table` (one lookup), or None."""
        cat = self._catalog()
        ident = self._ident(db, table)
        try:
            return cat.getTableMetadata(ident) if cat.tableExists(ident) else None
        except Exception:  # no such database
            return None

    def lookup(self, parts: list[str]) -> CatalogEntry | None:
        from ..catalog.entry import session_table

        dt = session_table(parts, self.unqualified)
        md = self.table_metadata(*dt) if dt is not None else None
        if md is None:
            return None
        ident = md.identifier()
        provider = md.provider()
        loc = md.storage().locationUri()
        kind = str(md.tableType().name())
        view_text = md.viewText()
        return CatalogEntry(str(ident.database().get()) if ident.database().isDefined() else "default",
                            str(ident.table()), str(provider.get()) if provider.isDefined() else "",
                            str(loc.get().toString()) if loc.isDefined() else None, kind == "MANAGED", kind,
                            str(view_text.get()) if kind == "VIEW" and view_text.isDefined() else None,
                            str(md.viewCatalogAndNamespace().last()) if kind == "VIEW" else None)

    def default_location(self, db: str, table: str) -> str:
        return str(self._catalog().defaultTablePath(self._ident(db, table)).toString())

    def columns_ddl(self, schema_json: str) -> str:
        return str(self._spark._jvm.org.apache.spark.sql.types.DataType.fromJson(schema_json).toDDL())

    def run_ddl(self, text: str) -> None:
        self._spark._jsparkSession.sql(text)

    def sync_columns(self, ref: Any, want_json: str) -> None:
        cat = self._catalog()
        ident = self._ident(ref.db or "default", ref.table or "")
        have = json.loads(str(cat.getTableMetadata(ident).schema().json()))
        if have != json.loads(want_json):  # the external catalog's call: SessionCatalog's refuses to drop columns
            external = self._spark._jsparkSession.sharedState().externalCatalog()
            external.alterTableDataSchema(ref.db or "default", ref.table or "",
                                          self._spark._jvm.org.apache.spark.sql.types.DataType.fromJson(want_json))
            cat.refreshTable(ident)


class ClassicTasks(SessionBound):
    """`TaskShipping` with broadcast variables (shipped once per executor) and the SparkContext's parallelism."""


    def broadcast(self, value: Any) -> Any:
        return self._spark.sparkContext.broadcast(value)

    def default_parallelism(self) -> int:
        return int(self._spark.sparkContext.defaultParallelism)


class ClassicSources(SessionBound):
    """`SourceAccess` through the JVM: Hadoop's filesystem registry, the JVM session's reader."""


    def has_hadoop_filesystem(self, scheme: str, log_uri: str) -> bool:
        jvm = self._spark._jvm
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, self._spark._jsc.hadoopConfiguration())
        return True

    def python_source_frame(self, source: str, path: str, options: dict[str, str], schema: str | None = None) -> Any:
        from pyspark.sql.classic.dataframe import DataFrame

        reader = self._spark._jsparkSession.read().format(source)
        if schema is not None:
            reader = reader.schema(self._spark._jvm.org.apache.spark.sql.types.DataType.fromJson(schema))
        for k, v in options.items():
            reader = reader.option(k, str(v))
        return DataFrame(reader.load(path), self._spark)


class ClassicTypes(SessionBound):
    """`TypeParsing` by the JVM's parser of this session's driver."""


    def parse_columns(self, ddl: str) -> Any:
        from pyspark.sql.types import StructType

        parsed = self._spark._jvm.org.apache.spark.sql.types.StructType.fromDDL(ddl)
        return StructType.fromJson(json.loads(str(parsed.json())))


class ClassicConfs(SessionBound):
    """`ConfAccess` through `spark.conf`: local py4j calls, one per key."""

    def get(self, keys: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for k in keys:
            try:
                v = self._spark.conf.get(k, None)
            except Exception:
                v = None
            out[k] = None if v is None else str(v)
        return out

    def set(self, values: dict[str, str | None]) -> None:
        conf = self._spark.conf
        for k, v in values.items():
            if v is None:
                conf.unset(k)
            else:
                conf.set(k, v)


class ClassicKind:
    """A classic SparkSession's side of the seam."""

    name = "classic"

    def __init__(self, spark: Any) -> None:
        self.catalog = ClassicCatalog(spark)
        self.tasks = ClassicTasks(spark)
        self.sources = ClassicSources(spark)
        self.types = ClassicTypes(spark)
        self.confs = ClassicConfs(spark)


__all__ = ["ClassicCatalog", "ClassicConfs", "ClassicKind", "ClassicSources", "ClassicTasks", "ClassicTypes",
           "session_state"]
