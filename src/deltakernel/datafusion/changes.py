"""`delta_changes(uri [, start [, end]])`: a table's change data feed as a DataFusion table.

    SELECT _change_type, count(*) FROM delta_changes('/data/sales', 3, 7) GROUP BY 1

The rows are the kernel's `TableChanges` — what `DeltaTable.load_cdf` returns: the table's columns plus
`_change_type`, `_commit_version`, `_commit_timestamp`. `start` / `end` are versions (ints) or timestamps
(ISO-8601 strings), resolved as `load_cdf` resolves `starting_*` / `ending_*`; out of range behaves as
`load_cdf` without `allow_out_of_range` (a start after the latest commit is an error).

Why a Dataset subclass again (see `dataset.py`): a datafusion-python 55 UDTF receives only its literal
arguments and must return a table provider; the pyarrow-dataset provider calls our `scanner` /
`get_fragments` / `fragment.scanner(...).to_batches()`, so the feed is planned from the log when the
query is planned and its files are read only when the query runs, with the projection and the (Exact)
filter applied by `TableChanges.to_reader`. Everything here is pure Python + pyarrow: nothing calls back
into DataFusion from the tokio worker that polls the scan.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from ..errors import DeltaError
from ..kernel.table_changes import TableChanges, between
from ..storage import storage_for_uri

Bound = int | str | dt.datetime | None


def _is_version(value: Bound) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def table_changes(
    uri: str,
    start: Bound = 0,
    end: Bound = None,
    *,
    storage_options: dict[str, str] | None = None,
    allow_out_of_range: bool = False,
) -> TableChanges:
    """The kernel's `TableChanges` for `uri` between `start` and `end` (versions or timestamps).

    The kernel's `table_changes.between`, as `DeltaTable.load_cdf` uses it:
    a start timestamp -> first commit at or after it; an end timestamp -> last commit at or before it; an
    end timestamp before the first commit -> no changes.
    """
    storage = storage_for_uri(uri, storage_options)
    versions = (start if _is_version(start) else None, end if _is_version(end) else None)
    stamps = (None if start is None or _is_version(start) else start, None if end is None or _is_version(end) else end)
    return between(storage, versions[0], versions[1], stamps[0], stamps[1],  # type: ignore[arg-type]
                   allow_out_of_range=allow_out_of_range)


class ChangesDataset(ds.Dataset):  # type: ignore[misc]
    """A planned change data feed exposed through pyarrow's Dataset protocol (one fragment)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> ChangesDataset:
        return ds.Dataset.__new__(cls)  # type: ignore[no-any-return]

    def __init__(self, changes: TableChanges) -> None:
        self.changes = changes
        self._schema = changes.arrow_schema

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def scanner(self, schema: Any = None, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                batch_size: int | None = None, **_: Any) -> ChangesScanner:
        return ChangesScanner(self, columns, filter)

    def get_fragments(self, filter: pc.Expression | None = None) -> list[ChangesFragment]:
        return [] if self.changes.empty or not self.changes.tasks() else [ChangesFragment(self)]

    def to_batches(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                   **_: Any) -> Iterator[pa.RecordBatch]:
        return self.scanner(columns=columns, filter=filter).to_batches()

    def to_table(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                 **_: Any) -> pa.Table:
        return self.scanner(columns=columns, filter=filter).to_table()

    def count_rows(self, filter: pc.Expression | None = None, **_: Any) -> int:
        return sum(b.num_rows for b in self.to_batches(columns=[], filter=filter))

    def _unsupported(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ChangesDataset supports scanner/get_fragments/to_table/to_batches/count_rows")

    head = take = filter = sort_by = join = join_asof = replace_schema = _unsupported
    _get_fragments = _scanner_options = _scan_options = _unsupported

    @property
    def partition_expression(self) -> pc.Expression:
        return pc.scalar(True)

    def __reduce__(self) -> Any:
        raise TypeError("ChangesDataset is not picklable")

    def __repr__(self) -> str:
        c = self.changes
        return f"ChangesDataset({c.storage.root_uri!r}, versions={c.start_version}..{c.end_version})"


class ChangesFragment:
    """The whole feed as one DataFusion partition (TableChanges reads several files at a time itself
    and must stream in version order)."""

    def __init__(self, dataset: ChangesDataset) -> None:
        self.dataset = dataset

    @property
    def partition_expression(self) -> pc.Expression:
        return pc.scalar(True)

    def scanner(self, schema: Any = None, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                batch_size: int | None = None, **_: Any) -> ChangesScanner:
        return ChangesScanner(self.dataset, columns, filter)


class ChangesScanner:
    """Duck-types `pyarrow.dataset.Scanner` over `TableChanges.to_reader` (projection + exact filter)."""

    def __init__(self, dataset: ChangesDataset, columns: Sequence[str] | None, filter: pc.Expression | None) -> None:
        self.dataset = dataset
        schema = dataset.schema
        self.columns = list(schema.names) if columns is None else [schema.field(c).name for c in columns]
        self.filter = filter
        self.projected_schema = pa.schema([schema.field(c) for c in self.columns])

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        changes = self.dataset.changes
        if changes.empty:
            return
        # no column wanted (count(*)): read the cheapest one and drop it, since a zero-column Arrow table
        # has no batches to carry its row count
        columns = self.columns or ["_commit_version"]
        reader = changes.to_reader(columns=columns, row_filter=self.filter)
        for batch in reader:
            if batch.num_rows:
                yield batch if self.columns else batch.select([])

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def count_rows(self) -> int:
        return sum(b.num_rows for b in self.to_batches())


def changes_dataset(uri: str, start: Bound = 0, end: Bound = None, *,
                    storage_options: dict[str, str] | None = None) -> ChangesDataset:
    """A `ChangesDataset` for `ctx.register_dataset(name, ...)` (what `delta_changes` returns)."""
    if not isinstance(uri, str) or not uri:
        raise DeltaError(f"delta_changes wants a table URI as its first argument, got {uri!r}")
    return ChangesDataset(table_changes(uri, start, end, storage_options=storage_options))


__all__ = ["ChangesDataset", "ChangesFragment", "ChangesScanner", "changes_dataset", "table_changes"]
