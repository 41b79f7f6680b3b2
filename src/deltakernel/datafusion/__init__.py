"""DataFusion integration: Delta tables in a `datafusion.SessionContext`, read through the kernel.

    import datafusion, deltakernel.datafusion as dkdf
    ctx = datafusion.SessionContext()
    dkdf.register(ctx, "sales", "s3://bucket/sales", storage_options={...})
    ctx.sql("SELECT region, sum(amount) FROM sales WHERE day = '2026-11-02' GROUP BY region")

    dkdf.install(ctx)   # CREATE EXTERNAL TABLE ... STORED AS DELTA, delta_scan('uri', version),
                    # delta_changes('uri', start, end): the change data feed
    dkdf.register_catalog(ctx, "lake", "/data/warehouse")   # SELECT * FROM lake.public.sales

Delta DML in SQL (Spark SQL syntax, as delta-spark users write it) goes through `sql(ctx, statement)`, not
`ctx.sql` (DataFusion cannot write to a Delta table and its `ctx.sql` cannot be intercepted):

    dkdf.sql(ctx, "DELETE FROM sales WHERE day < '2026-01-01'").show()   # one row: num_affected_rows
    dkdf.sql(ctx, "UPDATE sales SET amount = amount * 2 WHERE region = 'EU'")
    dkdf.sql(ctx, "INSERT INTO sales SELECT * FROM staging")     # also INSERT OVERWRITE, REPLACE WHERE
    dkdf.sql(ctx, "MERGE INTO sales t USING (SELECT * FROM updates) s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    dkdf.sql(ctx, "SELECT count(*) FROM sales")                  # anything else: ctx.sql(...) (row_filters.py)

Targets are the Delta tables registered through deltakernel in `ctx`: `register(...)`, `CREATE EXTERNAL
TABLE ... STORED AS DELTA` on a session set up by `install` / `session_context`, and `register_catalog`
tables. The statement runs at the registered version and the registration is re-pinned to the version it
commits, so the next query sees the change; the result is a DataFrame of delta-spark's metrics. See `dml.py`.

See `dataset.py` for how filters and projections reach the kernel and `docs/decisions.md` for why.
"""

from __future__ import annotations

from typing import Any

from . import row_filters
from .changes import ChangesDataset, changes_dataset, table_changes
from .dataset import DatasetMetrics, DeltaDataset, DeltaFragment, DeltaScanner
from .dml import DmlError, DmlSyntaxError, DmlTargetError, execute_dml, metrics_dataframe
from .forking import check_context
from .listing import register_in
from .session_tables import dataset, delta_tables, remember_table
from .sql_tables import (
    DeltaCatalogProvider,
    DeltaSchemaProvider,
    DeltaTableFactory,
    delta_changes_udtf,
    delta_scan_udtf,
    install,
    register_catalog,
    session_context,
)


def register(
    ctx: Any,
    name: str,
    table_or_uri: Any,
    *,
    version: int | str | None = None,
    storage_options: dict[str, str] | None = None,
    target_partitions: int | None = None,
    native_reader: bool = True,
    view_types: bool = True,
    row_tracking: bool = False,
    provider: str = "auto",
) -> DeltaDataset:
    """Register a Delta table (pinned snapshot) under `name` in a DataFusion `SessionContext`.

    Where DataFusion reads every live file exactly as the kernel would (local, no deletion vectors, ...:
    `listing.py`), the table is a view over DataFusion's own scans of the snapshot's files
    (`ds.scan_path == "listing"`); otherwise the returned dataset is the provider (`"dataset"`) and its
    `metrics` show files skipped / opened by the queries on it. See `dataset()` for the options.
    """
    check_context(ctx)
    ds = dataset(table_or_uri, version=version, storage_options=storage_options,
                 target_partitions=target_partitions, native_reader=native_reader, view_types=view_types,
                 row_tracking=row_tracking, provider=provider)
    register_in(ctx, name, ds)
    remember_table(ctx, name, ds)
    return ds


def sql(ctx: Any, statement: str, *args: Any, **kwargs: Any) -> Any:
    """`ctx.sql(statement)`, except that Delta DML (`INSERT`, `DELETE`, `UPDATE`, `MERGE` in Spark SQL
    syntax) on a Delta table registered through deltakernel runs here, eagerly, and returns a one-row
    DataFrame of its metrics (delta-spark's names). Errors in DML are DeltaErrors (`DmlError`,
    `DmlSyntaxError`, `DmlTargetError` or the operation's own: `InvalidFilterError`, `SchemaError`,
    `MergeDuplicateMatchError`, ...); the table is then unchanged. Other arguments go to `ctx.sql`.
    A query may read some Delta tables through their views without the Parquet row filter where that is
    cheaper (`row_filters.py`; same rows)."""
    check_context(ctx)
    metrics = execute_dml(ctx, statement)
    if metrics is None:  # a query: the Parquet row filter only where it pays (row_filters.py)
        return row_filters.query(ctx, statement, *args, **kwargs)
    return metrics_dataframe(ctx, metrics)


__all__ = [
    "ChangesDataset",
    "DatasetMetrics",
    "DeltaCatalogProvider",
    "DeltaDataset",
    "DeltaFragment",
    "DeltaScanner",
    "DeltaSchemaProvider",
    "DeltaTableFactory",
    "DmlError",
    "DmlSyntaxError",
    "DmlTargetError",
    "changes_dataset",
    "dataset",
    "delta_changes_udtf",
    "delta_scan_udtf",
    "delta_tables",
    "install",
    "register",
    "register_catalog",
    "session_context",
    "sql",
    "table_changes",
]
