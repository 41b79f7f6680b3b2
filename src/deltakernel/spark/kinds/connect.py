"""The Spark Connect side of the seam: no py4j, so the catalog is asked with public SQL (`sql/public_catalog.py`)
and tasks carry driver-side values in their closures (Connect has no broadcast variables)."""

from __future__ import annotations

import json
from typing import Any

from ..catalog.entry import CatalogEntry
from .bound import SessionBound


class ConnectCatalog(SessionBound):
    """`CatalogAccess` with statements every Spark answers (`SHOW TABLE EXTENDED`, `CREATE TABLE`, `ALTER TABLE`);
    the answers are kept a few seconds per session and dropped by any change the session makes
    (`catalog_cache.py`)."""

    def _cache(self) -> Any:
        from .catalog_cache import cache_for

        return cache_for(self._spark)

    def split_name(self, name: str) -> list[str]:
        from ..sql.public_catalog import split_name

        return split_name(name)

    def unqualified(self, name: str) -> tuple[str, str] | None:
        from ..sql.public_catalog import current_database

        spark = self._spark
        return self._cache().answer(("current_database",), lambda: current_database(spark)), name

    def lookup(self, parts: list[str]) -> CatalogEntry | None:
        from ..sql.public_catalog import lookup_entry

        spark, cache = self._spark, self._cache()
        return cache.answer(("entry", tuple(parts)), lambda: lookup_entry(spark, parts, cache))  # type: ignore[no-any-return]

    def default_location(self, db: str, table: str) -> str:
        from ...errors import UnsupportedFeatureError

        raise UnsupportedFeatureError(
            "the default location of a managed table",
            "the default location of a managed table is not visible to a Spark Connect client (Spark chooses it "
            "when the table is registered)")

    def columns_ddl(self, schema_json: str) -> str:
        from ..sql.public_catalog import columns_ddl

        return columns_ddl(schema_json)

    def run_ddl(self, text: str) -> None:
        from ..sql.public_catalog import run_ddl

        run_ddl(self._spark, text)

    def sync_columns(self, ref: Any, want_json: str) -> None:
        """Over Connect the catalog's columns can only grow (`ALTER TABLE ADD COLUMNS`): new top-level columns are
        added; other changes live in the log only (`spark.catalog.listColumns` answers from the log for Delta
        tables)."""
        from ..sql.public_catalog import catalog_columns, columns_ddl, run_ddl

        want = json.loads(want_json)["fields"]
        name = ref.quoted_name or ""
        have = {c.name.lower() for c in catalog_columns(self._spark, name)}
        new = [f for f in want if f["name"].lower() not in have]
        if new and len(have) + len(new) == len(want):
            ddl = columns_ddl(json.dumps({"type": "struct", "fields": new}))
            run_ddl(self._spark, f"ALTER TABLE {name} ADD COLUMNS ({ddl})")


class ConnectTasks(SessionBound):
    """`TaskShipping` over Connect: values travel in the task's closure; the parallelism is read from the confs."""


    def broadcast(self, value: Any) -> Any:
        return None

    def default_parallelism(self) -> int:
        """`spark.default.parallelism` if set, else the shuffle partitions (the server's core count is not visible
        to a client)."""
        for key in ("spark.default.parallelism", "spark.sql.shuffle.partitions"):
            try:
                value = self._spark.conf.get(key, None)
            except Exception:
                value = None
            if value:
                try:
                    return max(1, int(value))
                except ValueError:
                    continue
        return 2


class ConnectSources(SessionBound):
    """`SourceAccess` over Connect: the server's JVM cannot be asked directly."""

    def __init__(self, spark: Any) -> None:
        super().__init__(spark)
        self._schemes: dict[str, bool] = {}  # per session: a handful of schemes at most

    def has_hadoop_filesystem(self, scheme: str, log_uri: str) -> bool:
        """Analyse a text read of the table's log directory once per scheme; only a missing filesystem class
        means no."""
        if scheme not in self._schemes:
            try:
                self._spark.read.format("text").load(log_uri).schema  # noqa: B018 (an RPC)
                self._schemes[scheme] = True
            except Exception as e:
                text = str(e)
                self._schemes[scheme] = not ("No FileSystem for scheme" in text
                                             or "UnsupportedFileSystemException" in text
                                             or ("ClassNotFoundException" in text and "FileSystem" in text))
        return self._schemes[scheme]

    def python_source_frame(self, source: str, path: str, options: dict[str, str], schema: str | None = None) -> Any:
        """Connect's reader builds this plan node; ours is routed, so it is built directly."""
        from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame
        from pyspark.sql.connect.plan import DataSource as SourcePlan

        plan = SourcePlan(format=source, schema=schema, options={k: str(v) for k, v in options.items()}, paths=[path])
        return ConnectFrame(plan, self._spark)


class ConnectTypes(SessionBound):
    """`TypeParsing` by the Connect server (a `ddl_parse` analysis of this session)."""


    def parse_columns(self, ddl: str) -> Any:
        from pyspark.sql.types import StructType

        from .connect_internals import parse_ddl

        parsed = parse_ddl(self._spark, ddl)
        return parsed if isinstance(parsed, StructType) else StructType.fromJson(json.loads(parsed.json()))


class ConnectConfs(SessionBound):
    """`ConfAccess` through the client's config request, which takes many keys per call (as pyspark's own
    `RuntimeConf` does for `_set_all`): a read of N keys is one call, a write at most two (set, unset)."""

    def get(self, keys: list[str]) -> dict[str, str | None]:
        from .connect_internals import config_get

        if not keys:
            return {}
        try:
            return config_get(self._spark, keys)
        except Exception:  # a client without the bulk request: one call per key
            from .classic import ClassicConfs

            return ClassicConfs(self._spark).get(keys)

    def set(self, values: dict[str, str | None]) -> None:
        from .connect_internals import config_set

        config_set(self._spark, values)


class ConnectKind:
    """A Spark Connect session's side of the seam."""

    name = "connect"

    def __init__(self, spark: Any) -> None:
        self.catalog = ConnectCatalog(spark)
        self.tasks = ConnectTasks(spark)
        self.sources = ConnectSources(spark)
        self.types = ConnectTypes(spark)
        self.confs = ConnectConfs(spark)


__all__ = ["ConnectCatalog", "ConnectConfs", "ConnectKind", "ConnectSources", "ConnectTasks", "ConnectTypes"]
