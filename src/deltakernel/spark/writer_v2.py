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

from typing import Any

from ..errors import DeltaError, UnsupportedFeatureError

try:  # pragma: no cover - import guard for pyspark builds without the classic writer
    from pyspark.sql.readwriter import DataFrameWriterV2 as _Base
except ImportError:  # pragma: no cover
    _Base = object  # type: ignore[assignment,misc]


class DeltaWriterV2(_Base):  # type: ignore[misc,valid-type]
    """DataFrameWriterV2 whose terminal calls write Delta tables through deltakernel (module docstring)."""

    def __init__(self, df: Any, table: str) -> None:
        super().__init__(df, table)
        self._dk_table = table
        self._dk_provider: str | None = None
        self._dk_options: dict[str, Any] = {}
        self._dk_properties: dict[str, str] = {}
        self._dk_partition_by: list[str] | None = None
        self._dk_cluster_by: list[str] | None = None
        self._dk_transforms = False

    # ------------------------------------------------------------------ builder calls (recorded, then Spark's)
    def using(self, provider: str) -> DeltaWriterV2:
        self._dk_provider = provider
        return super().using(provider)  # type: ignore[no-any-return]

    def option(self, key: str, value: Any) -> DeltaWriterV2:
        if value is not None:
            self._dk_options[key] = value
        return super().option(key, value)  # type: ignore[no-any-return]

    def options(self, **options: Any) -> DeltaWriterV2:
        self._dk_options.update({k: v for k, v in options.items() if v is not None})
        return super().options(**options)  # type: ignore[no-any-return]

    def tableProperty(self, property: str, value: str) -> DeltaWriterV2:
        self._dk_properties[property] = str(value)
        return super().tableProperty(property, value)  # type: ignore[no-any-return]

    def partitionedBy(self, col: Any, *cols: Any) -> DeltaWriterV2:
        names = []
        for c in (col, *cols):
            name = _column_name(c)
            if name is None:
                self._dk_transforms = True
            else:
                names.append(name)
        self._dk_partition_by = names
        return super().partitionedBy(col, *cols)  # type: ignore[no-any-return]

    def clusterBy(self, col: str, *cols: str) -> DeltaWriterV2:
        self._dk_cluster_by = [col, *cols]
        return super().clusterBy(col, *cols)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ terminal calls
    def append(self) -> None:
        ref = self._existing()
        if ref is None:
            return super().append()  # type: ignore[no-any-return]
        self._write(ref, "append")

    def overwrite(self, condition: Any) -> None:
        ref = self._existing()
        if ref is None:
            return super().overwrite(condition)  # type: ignore[no-any-return]
        self._write(ref, "overwrite", replaceWhere=_condition_sql(self._spark, ref, condition))

    def overwritePartitions(self) -> None:
        ref = self._existing()
        if ref is None:
            return super().overwritePartitions()  # type: ignore[no-any-return]
        self._write(ref, "overwrite", partitionOverwriteMode="dynamic")

    def create(self) -> None:
        if not self._delta_create(replacing=False):
            return super().create()  # type: ignore[no-any-return]
        self._create("create")

    def replace(self) -> None:
        if not self._delta_create(replacing=True):
            return super().replace()  # type: ignore[no-any-return]
        self._create("replace")

    def createOrReplace(self) -> None:
        if not self._delta_create(replacing=True):
            return super().createOrReplace()  # type: ignore[no-any-return]
        self._create("create_or_replace")

    # ------------------------------------------------------------------ helpers
    def _existing(self) -> Any:
        """The Delta table written to, or None (not a Delta table: Spark's writer decides)."""
        from .catalog import resolve_name

        ref = resolve_name(self._spark, self._dk_table)
        if ref is None:
            return None
        if not ref.is_catalog:
            from ..table import DeltaTable as KernelTable
            from ._schema import table_uri

            if not KernelTable.is_deltatable(table_uri(ref.location)):
                from ..errors import TableNotFoundError

                raise TableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] no Delta table at {ref.location} to write to")
        return ref

    def _write(self, ref: Any, mode: str, **extra: Any) -> None:
        from .catalog import sync_schema
        from .writer import write

        if self._dk_partition_by or self._dk_cluster_by or self._dk_properties:
            raise DeltaError(f"writeTo({self._dk_table!r}).{'append' if mode == 'append' else 'overwrite'}(): "
                             "partitionedBy / clusterBy / tableProperty only apply to create / replace")
        write(self._df, ref.location, mode=mode, **{**self._dk_options, **extra})
        sync_schema(self._spark, ref)

    def _delta_create(self, replacing: bool) -> bool:
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
            from .catalog import resolve_name

            try:
                return resolve_name(self._spark, self._dk_table) is not None
            except DeltaError:
                return False
        return False

    def _create(self, mode: str) -> None:
        from .catalog import TableSpec, create, split_name

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
        create(spark, split_name(spark, self._dk_table), spec, mode, df=self._df, label=self._dk_table)


def _column_name(col: Any) -> str | None:
    """The column a partitionedBy argument names, None for a transform (years(...), bucket(...))."""
    if isinstance(col, str):
        return col
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

    from ..table import DeltaTable as KernelTable
    from ._schema import table_uri
    from .dml.plan import empty_frame, sql_text

    if isinstance(condition, str):
        condition = F.col(condition)
    if not isinstance(condition, Column):
        raise TypeError(f"writeTo(...).overwrite(condition): a Column, found {type(condition).__name__}")
    empty = empty_frame(spark, KernelTable(table_uri(ref.location)).snapshot)
    text = sql_text(condition, empty)
    if text is None:
        raise DeltaError(f"writeTo(...).overwrite({condition!r}): the condition does not resolve on the columns of "
                         f"{ref.label}")
    return text


def patch_write_to() -> None:
    """`DataFrame.writeTo` returns `DeltaWriterV2` (see the module docstring); once per process."""
    try:
        from pyspark.sql.classic.dataframe import DataFrame
    except ImportError:  # pragma: no cover
        return
    if getattr(DataFrame.writeTo, "_deltakernel", False):
        return
    original = DataFrame.writeTo

    def write_to(self: Any, table: str) -> Any:
        if getattr(self.sparkSession, "_deltakernel_registered", False):
            return DeltaWriterV2(self, table)
        return original(self, table)

    write_to._deltakernel = True  # type: ignore[attr-defined]
    write_to.__doc__ = original.__doc__
    DataFrame.writeTo = write_to  # type: ignore[method-assign]


__all__ = ["DeltaWriterV2", "patch_write_to"]
