"""`write_deltalake` and `DeltaTable.create`: deltalake's write API.

Create, append, overwrite (full, replaceWhere, dynamic partitions), ignore/error, with schema evolution and
constraint enforcement, committed as one kernel Transaction. The work is done by `pipeline.py` (plan →
write files → commit); this module keeps deltalake's signatures.

Data is consumed as a stream of record batches, so input larger than memory works. Nothing is visible until
the commit; a failure at any point leaves the table at its previous version (written files become orphans
for VACUUM; the writer also deletes them best-effort).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ...kernel.schema.arrow import to_arrow_schema
from ...kernel.schema.types import StructType
from ..commit_options import CommitProperties, PostCommitHookProperties
from .arguments import check_write_arguments
from .pipeline import execute_write
from .request import WriteRequest


def write_deltalake(
    table_or_uri: Any,
    data: Any,
    *,
    schema: pa.Schema | None = None,
    partition_by: list[str] | str | None = None,
    mode: str = "error",
    schema_mode: str | None = None,
    predicate: str | None = None,
    partition_overwrite_mode: str = "static",
    configuration: dict[str, str | None] | None = None,
    name: str | None = None,
    description: str | None = None,
    target_file_size: int | None = None,
    writer_properties: Any = None,
    storage_options: dict[str, str] | None = None,
    commit_properties: CommitProperties | None = None,
    post_commithook_properties: PostCommitHookProperties | None = None,
    max_rows_per_file: int | None = None,
    engine_info: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    variant_shredding_schema: str | dict[str, str] | None = None,
) -> None:
    """Write Arrow data to a Delta table (deltalake's `write_deltalake`).

    `progress(rows, files)`: called after every input batch with the rows consumed and data files completed
    so far (a hook for progress bars; logger `deltakernel.operations.files.parquet_writer` logs each file at DEBUG).
    `variant_shredding_schema`: on a table with `delta.enableVariantShredding=true`, shred variant columns to this
    schema (Spark DDL such as `"a long, b string"`, one for all variant columns or a dict by column) instead of
    the schema inferred from each file's rows; a table without shredding refuses it.
    """
    check_write_arguments(target_file_size, configuration, storage_options)
    request = WriteRequest.of(
        partition_by=partition_by, mode=mode, schema_mode=schema_mode, predicate=predicate,
        partition_overwrite_mode=partition_overwrite_mode, configuration=configuration, name=name,
        description=description, target_file_size=target_file_size, writer_properties=writer_properties,
        storage_options=storage_options, commit_properties=commit_properties,
        post_commithook_properties=post_commithook_properties, max_rows_per_file=max_rows_per_file,
        engine_info=engine_info, progress=progress, variant_shredding_schema=variant_shredding_schema,
    )
    execute_write(table_or_uri, data, request, schema=schema)


def create_table(
    table_uri: str,
    schema: pa.Schema | StructType,
    *,
    mode: str = "error",
    partition_by: list[str] | str | None = None,
    name: str | None = None,
    description: str | None = None,
    configuration: dict[str, str | None] | None = None,
    storage_options: dict[str, str] | None = None,
    commit_properties: CommitProperties | None = None,
    cluster_by: list[str] | None = None,
    post_commithook_properties: PostCommitHookProperties | None = None,
) -> None:
    """Create an empty table (deltalake's `DeltaTable.create`); `cluster_by`: a clustered table
    (`maintenance/optimize/clustering.py`: the `clustering` feature and the `delta.clustering` domain)."""
    domains = None
    if cluster_by is not None:
        from functools import partial

        from ..maintenance.optimize.clustering import CLUSTERING_FEATURE, creation_domain

        configuration = {**(configuration or {}), f"delta.feature.{CLUSTERING_FEATURE}": "supported"}
        domains = partial(creation_domain, columns=list(cluster_by))
    delta_schema = schema if isinstance(schema, StructType) else None
    arrow = to_arrow_schema(schema) if isinstance(schema, StructType) else schema
    empty = arrow.empty_table()
    request = WriteRequest.of(
        partition_by=partition_by, mode=mode, name=name, description=description, configuration=configuration,
        storage_options=storage_options, commit_properties=commit_properties,
        post_commithook_properties=post_commithook_properties,
        schema_mode="overwrite" if mode == "overwrite" else None,
        operation="CREATE TABLE" if mode != "overwrite" else "CREATE OR REPLACE TABLE",
        domain_metadata=domains, delta_schema=delta_schema,
    )
    execute_write(table_uri, empty, request)


__all__ = ["create_table", "write_deltalake"]
