"""`df.writeTo(name)` (DataFrameWriterV2) on Delta tables: append, overwrite(condition), overwritePartitions,
create, replace, createOrReplace - delta-spark's semantics, through deltakernel's writer and catalog.

pyspark's writer would hand the write to Spark's V2 catalog, which reaches the "delta" Python source without a
path (docs/decisions.md, "Delta SQL on Spark and catalog tables"). `enable()` makes `writeTo` return
`DeltaWriterV2`, a `DataFrameWriterV2` that records what the builder calls set and, at the terminal call,
writes through deltakernel when the target is a Delta table:
- `append()` / `overwrite(cond)` / `overwritePartitions()`: the table exists and is a Delta table (catalog name
  or `delta`.`/path`); columns by name; `overwrite` is replaceWhere with the condition (rows written must match
  it), `overwritePartitions` a dynamic partition overwrite; options as for `df.write` (mergeSchema, ...);
- `create()` / `replace()` / `createOrReplace()`: `using("delta")`, or no `using` when the session's default
  source is delta, or (replace / createOrReplace) the table already is a Delta table; `partitionedBy` columns
  (identity only: Delta has no partition transforms), `clusterBy`, `tableProperty`, options.
Anything else goes to Spark's own writer unchanged.
"""

from __future__ import annotations

import functools
from typing import Any

from ...errors import DeltaError, UnsupportedFeatureError

try:  # pragma: no cover - import guard for pyspark builds without the classic writer
    from pyspark.sql.readwriter import DataFrameWriterV2 as _Base
except ImportError:  # pragma: no cover
    _Base = object  # type: ignore[assignment,misc]


class _DeltaWriting:
    """The Delta side of a DataFrameWriterV2 (mixed into the classic and the Spark Connect writer classes): builder
    calls are recorded then passed on; terminal calls write Delta tables through deltakernel (module docstring)."""

    _spark: Any
    _df: Any

    def _dk_init(self, table: str) -> None:
        self._dk_table = table
        self._dk_provider: str | None = None
        self._dk_options: dict[str, Any] = {}
        self._dk_properties: dict[str, str] = {}
        self._dk_partition_by: list[str] | None = None
        self._dk_cluster_by: list[str] | None = None
        self._dk_transforms = False

    def _dk_frame(self) -> Any:
        """The DataFrame written (Connect's writer holds its logical plan)."""
        if hasattr(self._df, "sparkSession"):
            return self._df
        from ..kinds.connect_internals import plan_frame

        return plan_frame(self._df, self._spark)

    # ------------------------------------------------------------------ builder calls (recorded, then Spark's)
    def using(self, provider: str) -> Any:
        self._dk_provider = provider
        return super().using(provider)  # type: ignore[misc]

    def option(self, key: str, value: Any) -> Any:
        if value is not None:
            self._dk_options[key] = value
        return super().option(key, value)  # type: ignore[misc]

    def options(self, **options: Any) -> Any:
        self._dk_options.update({k: v for k, v in options.items() if v is not None})
        return super().options(**options)  # type: ignore[misc]

    def tableProperty(self, property: str, value: str) -> Any:
        self._dk_properties[property] = str(value)
        return super().tableProperty(property, value)  # type: ignore[misc]

    def partitionedBy(self, col: Any, *cols: Any) -> Any:
        names = []
        for c in (col, *cols):
            name = _column_name(c)
            if name is None:
                self._dk_transforms = True
            else:
                names.append(name)
        self._dk_partition_by = names
        return super().partitionedBy(col, *cols)  # type: ignore[misc]

    def clusterBy(self, col: str, *cols: str) -> Any:
        self._dk_cluster_by = [col, *cols]
        return super().clusterBy(col, *cols)  # type: ignore[misc]

    # ------------------------------------------------------------------ terminal calls
    def append(self) -> None:
        ref = self._dk_existing()
        if ref is None:
            return super().append()  # type: ignore[misc]
        self._dk_write(ref, "append")

    def overwrite(self, condition: Any) -> None:
        ref = self._dk_existing()
        if ref is None:
            return super().overwrite(condition)  # type: ignore[misc]
        self._dk_write(ref, "overwrite", replaceWhere=_condition_sql(self._spark, ref, condition))

    def overwritePartitions(self) -> None:
        ref = self._dk_existing()
        if ref is None:
            return super().overwritePartitions()  # type: ignore[misc]
        self._dk_write(ref, "overwrite", partitionOverwriteMode="dynamic")

    def create(self) -> None:
        if not self._dk_delta_create(replacing=False):
            return super().create()  # type: ignore[misc]
        self._dk_create("create")

    def replace(self) -> None:
        if not self._dk_delta_create(replacing=True):
            return super().replace()  # type: ignore[misc]
        self._dk_create("replace")

    def createOrReplace(self) -> None:
        if not self._dk_delta_create(replacing=True):
            return super().createOrReplace()  # type: ignore[misc]
        self._dk_create("create_or_replace")

    # ------------------------------------------------------------------ helpers
    def _dk_existing(self) -> Any:
        """The Delta table written to, or None (not a Delta table: Spark's writer decides)."""
        from ..catalog.tables import resolve_name

        ref = resolve_name(self._spark, self._dk_table)
        if ref is None:
            return None
        if not ref.is_catalog:
            from ...table import DeltaTable as KernelTable
            from ..common.schema import table_uri

            if not KernelTable.is_deltatable(table_uri(ref.location)):
                from ...errors import TableNotFoundError

                raise TableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] no Delta table at {ref.location} to write to")
        return ref

    def _dk_write(self, ref: Any, mode: str, **extra: Any) -> None:
        from ..catalog.tables import sync_schema
        from ..writing.writer import write

        if self._dk_partition_by or self._dk_cluster_by or self._dk_properties:
            raise DeltaError(f"writeTo({self._dk_table!r}).{'append' if mode == 'append' else 'overwrite'}(): "
                             "partitionedBy / clusterBy / tableProperty only apply to create / replace")
        write(self._dk_frame(), ref.location, mode=mode, **{**self._dk_options, **extra})
        sync_schema(self._spark, ref)

    def _dk_delta_create(self, replacing: bool) -> bool:
        provider = (self._dk_provider or "").lower()
        if provider:
            return provider == "delta"
        try:
            default = str(self._spark.conf.get("spark.sql.sources.default", "parquet") or "").lower()
        except Exception:
            default = ""
        if default == "delta":
            return True
        if replacing:
            from ..catalog.tables import resolve_name

            try:
                return resolve_name(self._spark, self._dk_table) is not None
            except DeltaError:
                return False
        return False

    def _dk_create(self, mode: str) -> None:
        from ..catalog.tables import TableSpec, create, split_name

        if self._dk_transforms:
            raise UnsupportedFeatureError("partition transforms", f"writeTo({self._dk_table!r}).partitionedBy(...): "
                                          "Delta tables are partitioned by columns, not transforms (years, days, "
                                          "bucket, ...); add the derived column and partition by it")
        spark = self._spark
        options = {k: v for k, v in self._dk_options.items() if k.lower() != "path"}
        location = next((v for k, v in self._dk_options.items() if k.lower() == "path"), None)
        props = dict(self._dk_properties)
        props.update({k: str(v) for k, v in options.items() if k.lower().startswith("delta.")})
        spec = TableSpec(location=location, partition_by=self._dk_partition_by or None,
                         cluster_by=self._dk_cluster_by or None, properties=props or None,
                         comment=props.pop("comment", None),
                         options={k: v for k, v in options.items() if not k.lower().startswith("delta.")})
        create(spark, split_name(spark, self._dk_table), spec, mode, df=self._dk_frame(), label=self._dk_table)


class DeltaWriterV2(_DeltaWriting, _Base):  # type: ignore[misc,valid-type]
    """A classic session's DataFrameWriterV2 whose terminal calls write Delta tables through deltakernel."""

    def __init__(self, df: Any, table: str) -> None:
        _Base.__init__(self, df, table)
        self._dk_init(table)


_CONNECT_CLASS: list[type] = []


def connect_writer_class() -> type:
    """The Spark Connect DataFrameWriterV2 with the Delta side mixed in (made once, on first use)."""
    if not _CONNECT_CLASS:
        from pyspark.sql.connect.readwriter import DataFrameWriterV2 as ConnectBase

        def __init__(self: Any, plan: Any, session: Any, table: str, callback: Any = None) -> None:
            ConnectBase.__init__(self, plan, session, table, callback)
            self._dk_init(table)

        _CONNECT_CLASS.append(type("ConnectDeltaWriterV2", (_DeltaWriting, ConnectBase), {
            "__init__": __init__, "__doc__": "A Spark Connect DataFrameWriterV2 writing Delta tables through "
                                             "deltakernel (see DeltaWriterV2)."}))
    return _CONNECT_CLASS[0]


def _column_name(col: Any) -> str | None:
    """The column a partitionedBy argument names, None for a transform (years(...), bucket(...))."""
    if isinstance(col, str):
        return col
    expr = getattr(col, "_expr", None)  # a Connect Column
    if expr is not None:
        from pyspark.sql.connect.expressions import ColumnReference

        return str(expr._unparsed_identifier) if isinstance(expr, ColumnReference) else None
    try:
        expr = col._jc.expr()
        if str(expr.getClass().getSimpleName()) == "UnresolvedAttribute":
            parts = expr.nameParts()
            return ".".join(str(parts.apply(i)) for i in range(int(parts.size())))
    except Exception:
        pass
    return None


def _condition_sql(spark: Any, ref: Any, condition: Any) -> str:
    """An overwrite condition (a Column, or a boolean column's name) as SQL text for replaceWhere: Spark's
    analyzer resolves it on the table's schema."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    from ...table import DeltaTable as KernelTable
    from ..common.schema import table_uri

    if isinstance(condition, str):
        condition = F.col(condition)
    if not isinstance(condition, Column):
        raise TypeError(f"writeTo(...).overwrite(condition): a Column, found {type(condition).__name__}")
    from ..dml.plan import empty_frame, sql_text

    # the session kind's expression facts (dml/facts.py): Spark's analyzed plan, or the client's expression tree
    text = sql_text(condition, empty_frame(spark, KernelTable(table_uri(ref.location)).snapshot))
    if text is None:
        raise DeltaError(f"writeTo(...).overwrite({condition!r}): the condition does not resolve on the columns of "
                         f"{ref.label}")
    return text


def classic_write_to(original: Any) -> Any:
    """`DataFrame.writeTo` of classic sessions returns a `DeltaWriterV2` in enabled sessions (`install.PATCHES`)."""
    return _write_to(original, lambda df, table: DeltaWriterV2(df, table))


def connect_write_to(original: Any) -> Any:
    """`DataFrame.writeTo` of Connect sessions returns the Connect `DeltaWriterV2` in enabled sessions."""
    from ..kinds.connect_internals import plan_and_session

    return _write_to(original, lambda df, table: connect_writer_class()(*plan_and_session(df), table))


def _write_to(original: Any, make: Any) -> Any:
    from ..install.registry import is_enabled

    @functools.wraps(original)
    def write_to(self: Any, table: str) -> Any:
        if is_enabled(self.sparkSession):
            return make(self, table)
        return original(self, table)

    return write_to


__all__ = ["DeltaWriterV2", "classic_write_to", "connect_writer_class", "connect_write_to"]
