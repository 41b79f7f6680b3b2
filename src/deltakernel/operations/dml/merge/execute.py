"""Executing a MERGE (see `api.py` for the API and the commit).

Execution (see docs/decisions.md, "MERGE execution"):
1. Plan (`merge_plan`): aliases resolved, clauses parsed and type-checked on empty tables, the join
   condition split into equi-join keys and a residual. Bad input raises here, before anything is written.
2. The source is read once as a stream (`merge_source`): join keys and the columns conditions read stay in
   memory, whole rows are spilled to a memory-mapped Arrow file past a budget. Its join-key ranges
   (min/max per key, the distinct values of partition keys) plus the condition's target-only conjuncts
   prune the target files (partition values + stats). With NOT MATCHED BY SOURCE clauses every file is a
   candidate.
3. Find matches, one candidate file at a time (threads overlap reads): only the key and clause columns are
   read, physical row positions attached, rows already deleted by a DV dropped, the file joined with the
   source keys (one integer/temporal key: binary search in the sorted source keys, so a 10M-row source is
   not re-hashed per file; otherwise Arrow's hash join on the source keys in the file's key range; NULL
   keys never match), the residual evaluated on the pairs.
   A target row two source rows act on (WHEN MATCHED conditions hold) raises `MergeDuplicateMatchError`. Each pair /
   unmatched row is assigned its first clause whose condition holds, vectorized per clause.
4. Write: for each touched file its live rows are read once; updated rows are computed (assignments
   vectorized over the pairs, generated columns recomputed, constraints checked) and written to new files
   with the not-matched inserts; the touched file gets a deletion vector (DV tables) or is rewritten without
   the changed rows (copy-on-write, only touched files). Row tracking: copied and updated rows keep their
   row id (updated ones get the new commit version). CDF: insert / delete / update_pre/postimage.
5. One transaction (read set: pruning predicate + candidate files) commits it; nothing changed -> no commit.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ....errors import DeltaError, SchemaError
from ....kernel import row_tracking as rt
from ....kernel.arrow_build import broadcast, np_to_arrow
from ....kernel.expressions import predicate as ex
from ....kernel.expressions.sql import parse_sql, to_predicate
from ....kernel.scan.scan import Scan
from ....kernel.schema.arrow import to_arrow_schema
from ....kernel.schema.types import PrimitiveType, StructType
from ....kernel.snapshot import Snapshot
from ....kernel.transaction.transaction import Transaction as KernelTransaction
from ....sqleval import evaluate
from ....storage import Storage
from ...files.change_data import ChangeDataWriter, conform_to
from ...files.dml_output import DataFileOutput
from ...write.enforcement import cast_for_column
from ..commit import ms_since
from ..dv_writer import DeletionVectorWriter, deletion_vectors_writable
from ..rewrite import PIECE_ROWS, live_pieces, remove_action, row_tracking_configuration
from ..touched_rows import as_mask, existing_deleted, live_positions, physical_task, prefetch
from .plan import (
    BY_SOURCE_DELETE,
    BY_SOURCE_UPDATE,
    MATCHED_DELETE,
    MATCHED_UPDATE,
    NOT_MATCHED_INSERT,
    S_PREFIX,
    T_PREFIX,
    Clause,
    MergeDuplicateMatchError,
    MergeMetrics,
    Names,
    duplicate_match_message,
    plan_join,
    side_columns,
    unprefix,
)
from .schema_evolution import update_star_struct
from .source import MergeSource

_FILE_COLUMNS = ["path", "size", "partition_values", "deletion_vector", "base_row_id",
                 "default_row_commit_version", "tags", "stats", "modification_time"]
_PARTITION_IN_LIMIT = 1000  # distinct source values of a partition key turned into an IN list
_INSERT_CHUNK = 128 * 1024




def _prefixed(table: pa.Table, prefix: str, names: list[str] | None = None) -> pa.Table:
    names = list(table.schema.names) if names is None else names
    return pa.table({prefix + n: table.column(n) for n in names}) if names else \
        pa.table({"__n": pa.nulls(table.num_rows)}).drop_columns(["__n"])


def _side_by_side(*tables: pa.Table) -> pa.Table:
    cols: dict[str, Any] = {}
    n = 0
    for t in tables:
        n = t.num_rows
        for name in t.schema.names:
            cols[name] = t.column(name)
    if not cols:
        return pa.table({"__n": pa.nulls(n)}).drop_columns(["__n"])
    return pa.table(cols)


@dataclass
class FileMatch:
    """A candidate file's matches: physical positions (uint64) and what happens to them."""

    file: dict[str, Any]
    num_rows: int  # physical rows
    existing: npt.NDArray[np.uint64]
    upd_pos: npt.NDArray[np.uint64]
    upd_src: npt.NDArray[np.int64]  # source row of each matched update (-1 for by-source updates)
    upd_clause: npt.NDArray[np.int64]  # index into the clause list
    del_pos: npt.NDArray[np.uint64]
    src_matched: npt.NDArray[np.int64]  # source rows that matched any row of this file

    @property
    def touched(self) -> bool:
        return bool(self.upd_pos.size or self.del_pos.size)


def _column(value: Any, n: int) -> Any:
    """An evaluated expression as a column of `n` values (a constant broadcast in C++)."""
    return broadcast(value, n) if isinstance(value, pa.Scalar) else value


class MergeRun:
    """One MERGE's matching and writing; actions go into `txn`, `abort` deletes what it wrote."""

    def __init__(self, storage: Storage, snapshot: Snapshot, txn: KernelTransaction, source: MergeSource,
                 predicate: str, clauses: list[Clause], names: Names, strict_types: bool,
                 writer_properties: Any, merge_schema: bool = False) -> None:
        self.storage = storage
        self.snapshot = snapshot
        self.txn = txn
        self.source = source
        self.predicate_text = predicate
        self.clauses = clauses
        self.names = names
        self.strict = strict_types
        self.writer_properties = writer_properties
        self.merge_schema = merge_schema
        self.schema: StructType = txn.metadata.schema
        self.arrow_schema = to_arrow_schema(self.schema, include_metadata=False)
        self.now = int(time.time() * 1000)
        self.metrics = MergeMetrics()
        self.cdc: ChangeDataWriter | None = None
        self.dv_writer: DeletionVectorWriter | None = None
        self.output: DataFileOutput | None = None
        self.enforcer: Any = None
        cond = names.qualify(parse_sql(predicate), predicate)
        self.join = plan_join(cond, predicate)
        self.matched = [i for i, c in enumerate(clauses) if c.kind in (MATCHED_UPDATE, MATCHED_DELETE)]
        self.not_matched = [i for i, c in enumerate(clauses) if c.kind == NOT_MATCHED_INSERT]
        self.by_source = [i for i, c in enumerate(clauses) if c.kind in (BY_SOURCE_UPDATE, BY_SOURCE_DELETE)]
        self._typecheck()

    # ------------------------------------------------------------------ planning
    def _typecheck(self) -> None:
        """Evaluate every expression on empty inputs: type errors surface before any file is touched."""
        empty_t = _prefixed(self.arrow_schema.empty_table(), T_PREFIX)
        empty_s = _prefixed(self.source.schema.empty_table(), S_PREFIX)
        both = _side_by_side(empty_t, empty_s)
        if self.join.residual is not None:
            as_mask(evaluate(self.join.residual, both), self.predicate_text)
        for key_t, key_s in self.join.keys:
            t_type = self.arrow_schema.field(key_t).type
            try:
                pc.cast(self.source.schema.empty_table().column(key_s), t_type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise SchemaError(f"MERGE: join key source.{key_s} ({self.source.schema.field(key_s).type}) "
                                  f"cannot be compared with target.{key_t} ({t_type})") from e
        for c in self.clauses:
            if c.predicate is not None:
                as_mask(evaluate(c.predicate, both), c.predicate_text)
            for name, expr in c.updates.items():
                cast_for_column(_column(evaluate(expr, both), both.num_rows), self.arrow_schema.field(name).type, name,
                                strict=True, what="MERGE")

    def _source_keys(self) -> pa.Table:
        """Source join keys cast to the target's types, NULL keys dropped (they never match)."""
        cols: dict[str, pa.ChunkedArray] = {}
        for i, (t, s) in enumerate(self.join.keys):
            t_type = self.arrow_schema.field(t).type
            col = self.source.column(s)
            try:
                cols[f"__k{i}"] = col.cast(t_type) if col.type != t_type else col
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise SchemaError(f"MERGE: join key source.{s} cannot be cast to {t_type} (target.{t}): {e}") from e
        cols["__src_row"] = pa.chunked_array([np_to_arrow(np.arange(self.source.num_rows, dtype=np.int64))])
        keys = pa.table(cols)
        valid = None
        for i in range(len(self.join.keys)):
            v = pc.is_valid(keys.column(f"__k{i}"))
            valid = v if valid is None else pc.and_(valid, v)
        return keys.filter(valid) if valid is not None else keys

    def _pruning(self, keys: pa.Table) -> ex.Expr | None:
        """Kernel predicate the matched target rows satisfy: source key ranges + target-only conjuncts."""
        if self.by_source:
            return None  # every target row may be "not matched by source"
        parts: list[ex.Expr] = []
        parts_lower = {p.lower() for p in self.snapshot.partition_columns}
        for i, (t, _s) in enumerate(self.join.keys):
            col = keys.column(f"__k{i}")
            dtype = self.schema.field(t).type
            if not isinstance(dtype, PrimitiveType) or dtype.name in ("binary", "boolean"):
                continue
            if keys.num_rows == 0:
                return ex.AlwaysFalse()
            try:
                if t.lower() in parts_lower:
                    distinct = pc.unique(col)
                    if len(distinct) <= _PARTITION_IN_LIMIT:
                        values = tuple(ex.coerce_literal(v, dtype, t).value for v in distinct.to_pylist())
                        parts.append(ex.In(ex.Column((t,)), values))
                        continue
                mm = pc.min_max(col)
                lo, hi = mm["min"].as_py(), mm["max"].as_py()
                parts.append(ex.Comparison(">=", ex.Column((t,)), ex.coerce_literal(lo, dtype, t)))
                parts.append(ex.Comparison("<=", ex.Column((t,)), ex.coerce_literal(hi, dtype, t)))
            except (DeltaError, pa.ArrowException, TypeError, ValueError):
                continue  # a type without usable bounds: no pruning on this key
        for c in self.join.target_only:
            try:
                p = to_predicate(unprefix(c), self.schema)
            except DeltaError:
                p = None
            if p is not None:
                parts.append(p)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else ex.And(*parts)

    # ------------------------------------------------------------------ matching
    def _first_clause(self, table: pa.Table, candidates: list[int]) -> npt.NDArray[np.int64]:
        """Per row, the index of the first clause of `candidates` whose condition holds (-1: none)."""
        out = np.full(table.num_rows, -1, dtype=np.int64)
        for i in candidates:
            c = self.clauses[i]
            free = out == -1
            if not free.any():
                break
            if c.predicate is None:
                out[free] = i
                break
            mask = as_mask(evaluate(c.predicate, table), c.predicate_text).to_numpy(zero_copy_only=False)
            out[free & mask] = i
        return out

    def _key_range(self, keys: pa.Table, target_key: pa.ChunkedArray) -> pa.Table:
        """The source keys within [min, max] of the file's first key (a binary search on the sorted keys):
        the hash table built per file then holds only keys that can match there."""
        if self._sorted_first_key is None or len(target_key) == 0:
            return keys
        try:
            values = target_key.drop_null().to_numpy()
        except (pa.ArrowException, TypeError, ValueError):
            return keys
        if values.size == 0:
            return keys.slice(0, 0)
        lo = int(np.searchsorted(self._sorted_first_key, values.min(), "left"))
        hi = int(np.searchsorted(self._sorted_first_key, values.max(), "right"))
        return keys.slice(lo, hi - lo)

    def _sorted_pairs(self, tgt: pa.Table, key: str) -> tuple[pa.Table, npt.NDArray[np.int64]] | None:
        """(target rows repeated per matching source row, those source rows) for one integer or temporal
        key, by binary search in the sorted source keys; None when the key's type does not allow it."""
        sk, src_sorted = self._sorted_first_key, self._sorted_src_rows
        if sk is None or src_sorted is None:
            return None
        col = tgt.column(key)
        try:
            if col.null_count:
                valid = np.flatnonzero(pc.is_valid(col).to_numpy(zero_copy_only=False))
                values = col.drop_null().to_numpy()
            else:
                valid = None
                values = col.to_numpy()
        except (pa.ArrowException, TypeError, ValueError):
            return None
        if values.dtype != sk.dtype:
            return None
        if values.size:  # only the source keys inside this file's range: a small, cache-resident search
            first = int(np.searchsorted(sk, values.min(), "left"))
            last = int(np.searchsorted(sk, values.max(), "right"))
            sk, src_sorted = sk[first:last], src_sorted[first:last]
        lo = np.searchsorted(sk, values, "left")
        count = np.searchsorted(sk, values, "right") - lo
        hit = np.flatnonzero(count)
        count, lo = count[hit], lo[hit]
        rows = np.repeat(hit, count)
        offsets = np.arange(rows.size, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        src_rows = src_sorted[np.repeat(lo, count) + offsets]
        if valid is not None:
            rows = valid[rows]
        return tgt.take(np_to_arrow(rows.astype(np.int64))), src_rows.astype(np.int64)

    def _match_file(self, file: dict[str, Any], scan: Scan, keys: pa.Table, t_cols: list[str],
                    s_cols: list[str]) -> FileMatch:
        data = conform_to(scan.read_file(physical_task(file)), self._match_schema)  # evolved types
        n = data.num_rows
        existing = existing_deleted(self.snapshot, file)
        tgt = _prefixed(data, T_PREFIX, t_cols).append_column("__pos", pa.array(np.arange(n, dtype=np.int64)))
        if existing.size:
            keep = ~np.isin(np.arange(n, dtype=np.uint64), existing, assume_unique=True)
            tgt = tgt.filter(pa.array(keep))
        left_keys = [T_PREFIX + t for t, _ in self.join.keys]
        found = self._sorted_pairs(tgt, left_keys[0]) if len(left_keys) == 1 else None
        if found is not None:
            pairs, src_rows = found
        else:
            right_keys = [f"__k{i}" for i in range(len(self.join.keys))]
            keys = self._key_range(keys, tgt.column(left_keys[0]))
            pairs = tgt.join(keys, keys=left_keys, right_keys=right_keys, join_type="inner",
                             coalesce_keys=True, use_threads=False)
            src_rows = pairs.column("__src_row").to_numpy().astype(np.int64) if pairs.num_rows else \
                np.empty(0, np.int64)
        if s_cols and pairs.num_rows:
            for s in s_cols:
                pairs = pairs.append_column(S_PREFIX + s, self.source.column(s).take(np_to_arrow(src_rows)))
        elif s_cols:
            for s in s_cols:
                pairs = pairs.append_column(S_PREFIX + s, pa.nulls(0, self.source.schema.field(s).type))
        if self.join.residual is not None and pairs.num_rows:
            mask = as_mask(evaluate(self.join.residual, pairs), self.predicate_text)
            pairs = pairs.filter(mask)
            src_rows = src_rows[mask.to_numpy(zero_copy_only=False)]
        pos = pairs.column("__pos").to_numpy().astype(np.int64) if pairs.num_rows else np.empty(0, np.int64)
        upd_pos: list[npt.NDArray[Any]] = []
        upd_src: list[npt.NDArray[Any]] = []
        upd_clause: list[npt.NDArray[Any]] = []
        del_pos: list[npt.NDArray[Any]] = []
        matched_src = src_rows
        if self.matched and pos.size:
            # delta-spark's rule: a target row fails only when more than one of its source rows is acted on by
            # a WHEN MATCHED clause (its condition holds); pairs no clause takes change nothing. A single
            # unconditional DELETE clause takes any number of them.
            which = self._first_clause(pairs, self.matched)
            acted = np.flatnonzero(which >= 0)
            only_delete = len(self.matched) == 1 and self.clauses[self.matched[0]].kind == MATCHED_DELETE \
                and self.clauses[self.matched[0]].predicate is None
            uniq, first, counts = np.unique(pos[acted], return_index=True, return_counts=True)
            if uniq.size != acted.size and not only_delete:
                raise MergeDuplicateMatchError(duplicate_match_message(
                    int((counts > 1).sum()), file["path"], int(uniq[counts > 1][0])))
            chosen = acted[first]
            act_pos, act_src, which = pos[chosen], src_rows[chosen], which[chosen]
            for_delete = np.array([i >= 0 and self.clauses[i].is_delete for i in range(len(self.clauses))] + [False])
            is_del = for_delete[which]
            is_upd = ~is_del
            del_pos.append(act_pos[is_del])
            upd_pos.append(act_pos[is_upd])
            upd_src.append(act_src[is_upd])
            upd_clause.append(which[is_upd])
        if self.by_source:
            live = tgt.column("__pos").to_numpy().astype(np.int64)
            unmatched = ~np.isin(live, pos)
            rest = tgt.filter(pa.array(unmatched))
            rest_pos = live[unmatched]
            which = self._first_clause(rest, self.by_source)
            is_del = np.array([self.clauses[i].is_delete if i >= 0 else False for i in range(len(self.clauses))]
                              + [False])[which]
            is_upd = (which >= 0) & ~is_del
            del_pos.append(rest_pos[is_del])
            upd_pos.append(rest_pos[is_upd])
            upd_src.append(np.full(int(is_upd.sum()), -1, dtype=np.int64))
            upd_clause.append(which[is_upd])

        def cat(parts: list[npt.NDArray[Any]], dtype: Any) -> npt.NDArray[Any]:
            return np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype)

        return FileMatch(file, n, existing, cat(upd_pos, np.uint64), cat(upd_src, np.int64),
                         cat(upd_clause, np.int64), np.sort(cat(del_pos, np.uint64)), matched_src)

    # ------------------------------------------------------------------ assignments
    def _assigned(self, clause: Clause, tgt: pa.Table | None, src: pa.Table | None, n: int) -> dict[str, pa.Array]:
        parts = []
        if tgt is not None:
            parts.append(_prefixed(tgt, T_PREFIX, [f.name for f in self.arrow_schema]))
        if src is not None:
            parts.append(_prefixed(src, S_PREFIX))
        both = _side_by_side(*parts) if parts else pa.table({"__n": pa.nulls(n)})
        out = {}
        for name, e in clause.updates.items():
            value = _column(evaluate(e, both), n)
            dtype = self.arrow_schema.field(name).type
            if self.merge_schema and clause.all_columns and tgt is not None and src is not None \
                    and pa.types.is_struct(dtype):
                out[name] = update_star_struct(value, tgt.column(name), dtype, name, strict=self.strict)
            else:
                out[name] = cast_for_column(value, dtype, name, strict=self.strict, what="MERGE")
        return out

    def _updated(self, clause: Clause, tgt: pa.Table, src: pa.Table | None) -> pa.Table:
        """Post-images of `tgt` under `clause` (logical columns, plus `_row_id` when row tracking is on)."""
        values = self._assigned(clause, tgt, src, tgt.num_rows)
        cols = {f.name: values.get(f.name, tgt.column(f.name)) for f in self.arrow_schema}
        post = pa.table(cols, schema=self.arrow_schema)
        enf = self.enforcer
        if enf is not None:
            from ...write.enforcement import GENERATION_EXPRESSION

            for i, f in enumerate(self.schema.fields):
                if f.name not in values and enf._generated_on and GENERATION_EXPRESSION in f.metadata:
                    arr = enf._fill(f, post.drop_columns([f.name]), post.num_rows)
                    post = post.set_column(i, self.arrow_schema.field(i), arr)
            enf._verify(post)
        if self.hidden is not None:
            post = post.append_column(rt.ROW_ID, tgt.column(rt.ROW_ID))
        return post

    def _inserted(self, clause: Clause, src: pa.Table) -> pa.Table:
        values = self._assigned(clause, None, src, src.num_rows)
        data = pa.table(values) if values else pa.table({"__n": pa.nulls(src.num_rows)}).drop_columns(["__n"])
        if self.enforcer is not None:
            data = self.enforcer.prepare(data)
        return conform_to(data, self.arrow_schema)

    # ------------------------------------------------------------------ run
    def run(self) -> None:
        start = time.monotonic()
        txn = self.txn
        configuration = row_tracking_configuration(txn)
        self.configuration = configuration
        self.output = DataFileOutput(self.snapshot, self.storage, txn.metadata.schema, txn.metadata.partition_columns,
                                     configuration, self.writer_properties)
        self.hidden = self.output.hidden
        self.row_tracking = self.hidden is not None
        from ...write.enforcement import Enforcer

        enforcer = Enforcer(txn.metadata, txn.protocol)
        self.enforcer = enforcer if enforcer.needed else None

        t_cols: set[str] = {t for t, _ in self.join.keys} | side_columns(self.join.residual, T_PREFIX)
        s_cols: set[str] = side_columns(self.join.residual, S_PREFIX)
        for i in self.matched + self.by_source:
            t_cols |= side_columns(self.clauses[i].predicate, T_PREFIX)
            s_cols |= side_columns(self.clauses[i].predicate, S_PREFIX)
        self.source.load([s for _, s in self.join.keys] + sorted(s_cols))
        self.metrics.num_source_rows = self.source.num_rows
        keys = self._source_keys()
        self._sorted_first_key: npt.NDArray[Any] | None = None
        self._sorted_src_rows: npt.NDArray[np.int64] | None = None
        try:  # sorted on the first key, so each file joins only the source keys in its own key range
            keys = keys.sort_by("__k0")
            first = keys.column("__k0").to_numpy()
            if first.dtype.kind in "iumM":  # not floats: NaN has no place in a min/max range
                self._sorted_first_key = first
                self._sorted_src_rows = keys.column("__src_row").to_numpy()
        except (pa.ArrowException, TypeError, ValueError):
            pass
        pruning = self._pruning(keys)
        if pruning is not None:
            txn.read_predicate(pruning)
            files = Scan(self.snapshot, predicate=pruning).plan()
        else:
            txn.read_whole_table()
            files = self.snapshot.files
        self.metrics.num_target_files_scanned = files.num_rows
        self.metrics.num_target_files_skipped_during_scan = self.snapshot.files.num_rows - files.num_rows
        rows = files.select(_FILE_COLUMNS).to_pylist() if files.num_rows else []
        txn.read_files([r["path"] for r in rows])

        t_list = [f.name for f in self.schema.fields if f.name in t_cols]
        s_list = sorted(s_cols)
        # files are read with the snapshot's schema; a MERGE that evolved it matches on the new types
        scan = Scan(self.snapshot, columns=[c for c in t_list if self.snapshot.schema.has(c)])
        self._match_schema = pa.schema([self.arrow_schema.field(c) for c in t_list])
        source_matched = np.zeros(self.source.num_rows, dtype=bool)
        touched: list[FileMatch] = []
        work = keys if keys.num_rows or self.by_source else None
        if work is not None:
            for m in prefetch(lambda f: self._match_file(f, scan, keys, t_list, s_list), rows, 4):
                source_matched[m.src_matched] = True
                if m.touched:
                    touched.append(m)
        self.metrics.scan_time_ms = ms_since(start)
        write_start = time.monotonic()
        insert_rows = np.flatnonzero(~source_matched) if self.not_matched else np.empty(0, np.int64)
        if not touched and not insert_rows.size:
            self.metrics.rewrite_time_ms = ms_since(write_start)
            return
        self.cdc = ChangeDataWriter.for_commit(self.storage, txn.metadata, self.snapshot.column_mapping_mode,
                                               configuration, self.writer_properties)
        use_dv = deletion_vectors_writable(self.snapshot)
        if use_dv:
            self.dv_writer = DeletionVectorWriter(self.storage, configuration)
        dv_files: list[FileMatch] = []
        self._write(self._output(touched, insert_rows, use_dv, dv_files))
        if self.dv_writer is not None:
            replaced = self.dv_writer.commit_into(txn, [m.file for m in dv_files], self.now)
            self.metrics.num_deletion_vectors_added += len(dv_files)
            self.metrics.num_deletion_vectors_removed += replaced
        if self.enforcer is not None and self.enforcer.identity_updates():
            txn.update_metadata(self.enforcer.updated_metadata())
        if self.row_tracking and touched:
            txn.set_commit_tag("delta.rowTracking.preserved", "true")
        if self.cdc is not None:
            self.metrics.num_added_change_files = self.cdc.commit_into(txn)
        self.metrics.rewrite_time_ms = ms_since(write_start)

    def _materialize(self, data: pa.Table, ids: Any, versions: Any) -> Iterator[pa.RecordBatch]:
        if self.hidden is not None:
            n = data.num_rows
            data = data.append_column(self.hidden[0], ids if ids is not None else pa.nulls(n, pa.int64()))
            data = data.append_column(self.hidden[1], versions if versions is not None else pa.nulls(n, pa.int64()))
        yield from data.to_batches()

    def _output(self, touched: list[FileMatch], insert_rows: npt.NDArray[np.int64], use_dv: bool,
                dv_files: list[FileMatch]) -> Iterator[pa.RecordBatch]:
        """Every row the MERGE writes: per touched file its updated rows (and, copy-on-write, the rows it
        keeps), then the inserts; removes / DVs are recorded on the way. Touched files are streamed in pieces, so
        memory does not grow with file size."""
        full = Scan(self.snapshot, row_tracking=self.row_tracking)
        m_ = self.metrics
        cdc = self.cdc is not None

        def plan(m: FileMatch) -> tuple[FileMatch, npt.NDArray[np.uint64], bool, bool, Iterable[pa.Table] | None]:
            """A file rewritten (`copy`) streams in pieces on the caller's thread; a file only a few rows are
            taken from (deletion vectors, or removed whole) is read whole here, on a prefetch thread."""
            removed = np.union1d(m.del_pos, m.upd_pos).astype(np.uint64)
            whole = int(removed.size + m.existing.size) >= m.num_rows
            copy = not whole and not use_dv
            pieces: Iterable[pa.Table] | None = None
            if copy:
                pieces = full.read_file_pieces(dict(m.file), PIECE_ROWS)
            elif m.upd_pos.size or (cdc and m.del_pos.size):
                pieces = [full.read_file(dict(m.file))]
            return m, removed, whole, copy, pieces

        for m, removed, whole, copy, pieces in prefetch(plan, touched, 2):
            yield from self._file_rows(m, pieces, removed, copy)
            if use_dv and not whole:
                assert self.dv_writer is not None
                self.dv_writer.add(np.union1d(m.existing, removed).astype(np.uint64) if m.existing.size else removed)
                dv_files.append(m)
                continue
            self.txn.remove_files([remove_action(m.file, self.now)])
            m_.num_target_files_removed += 1
            m_.num_removed_bytes += int(m.file.get("size") or 0)
            if m.file.get("deletion_vector"):
                m_.num_deletion_vectors_removed += 1
        for lo in range(0, int(insert_rows.size), _INSERT_CHUNK):
            chunk = self.source.take(insert_rows[lo:lo + _INSERT_CHUNK])
            which = self._first_clause(_prefixed(chunk, S_PREFIX), self.not_matched)
            for ci in self.not_matched:
                sel = which == ci
                if not sel.any():
                    continue
                rows = self._inserted(self.clauses[ci], chunk.filter(pa.array(sel)))
                m_.num_target_rows_inserted += rows.num_rows
                if self.cdc is not None:
                    self.cdc.add(rows, "insert")
                yield from self._materialize(rows, None, None)

    def _file_rows(self, m: FileMatch, pieces: Iterable[pa.Table] | None, removed: npt.NDArray[np.uint64],
                   copy: bool) -> Iterator[pa.RecordBatch]:
        """One touched file, piece by piece (`pieces`: its live rows in order; None when nothing needs
        reading): its deleted rows (change data), its updated rows and, when the file is rewritten (`copy`),
        the rows it keeps (row ids and commit versions kept)."""
        m_ = self.metrics
        cdc = self.cdc
        if pieces is None:
            m_.num_target_rows_deleted += int(m.del_pos.size)
            return
        del_live = live_positions(m.del_pos, m.existing)
        upd_live = live_positions(m.upd_pos, m.existing)
        gone_live = live_positions(removed, m.existing)
        live = m.num_rows - int(m.existing.size)
        for lo, data in live_pieces(m.file["path"], pieces, live):
            hi = lo + data.num_rows
            logical = data.drop_columns([c for c in (rt.ROW_ID, rt.ROW_COMMIT_VERSION) if c in data.schema.names])
            logical = conform_to(logical, self.arrow_schema)
            dels = del_live[(del_live >= lo) & (del_live < hi)] - lo
            if dels.size:
                m_.num_target_rows_deleted += int(dels.size)
                if cdc is not None:
                    cdc.add(logical.take(np_to_arrow(dels)), "delete")
            in_piece = (upd_live >= lo) & (upd_live < hi)
            for ci in np.unique(m.upd_clause[in_piece]):
                sel = in_piece & (m.upd_clause == ci)
                li = np_to_arrow(upd_live[sel] - lo)
                tgt = logical.take(li)
                if self.hidden is not None:
                    tgt = tgt.append_column(rt.ROW_ID, data.column(rt.ROW_ID).take(li))
                src = self.source.take(m.upd_src[sel]) if self.clauses[ci].kind == MATCHED_UPDATE else None
                post = self._updated(self.clauses[int(ci)], tgt, src)
                m_.num_target_rows_updated += post.num_rows
                if cdc is not None:
                    cdc.add(logical.take(li), "update_preimage")
                    cdc.add(post.select(self.arrow_schema.names), "update_postimage")
                ids = post.column(rt.ROW_ID) if self.hidden is not None else None
                yield from self._materialize(post.select(self.arrow_schema.names), ids, None)
            if copy:
                keep = np.ones(data.num_rows, dtype=bool)
                keep[gone_live[(gone_live >= lo) & (gone_live < hi)] - lo] = False
                n_keep = int(keep.sum())
                m_.num_target_rows_copied += n_keep
                if n_keep:
                    mask = pa.array(keep)
                    ids = data.column(rt.ROW_ID).filter(mask) if self.hidden is not None else None
                    vers = data.column(rt.ROW_COMMIT_VERSION).filter(mask) if self.hidden is not None else None
                    yield from self._materialize(logical.filter(mask), ids, vers)

    def _write(self, batches: Iterator[pa.RecordBatch]) -> None:
        assert self.output is not None
        self.output.write(batches)
        adds = self.output.finish()
        self.txn.add_files(adds)
        self.metrics.num_target_files_added += len(adds)
        self.metrics.num_added_bytes += sum(int(a.get("size") or 0) for a in adds)

    def abort(self) -> None:
        for part in (self.output, self.cdc, self.dv_writer):
            if part is not None:
                part.abort()


__all__ = ["FileMatch", "MergeRun"]
