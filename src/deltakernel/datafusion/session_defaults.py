"""DataFusion settings of the sessions deltakernel makes (`session_context()`, `deltakernel.QueryBuilder`).

Why: a Delta table on the listing path (`listing.py`) gives DataFusion's planner exact row counts and per-column
min / max / null counts from the Parquet footers, so its join estimates are realistic (TPC-H Q3 at SF1:
customer x orders estimated at 145,886 rows, actual ~147,000). DataFusion's defaults then broadcast ("collect
left") a join's build side only below 1 MiB / 131,072 rows - thresholds meant for guessed estimates on many
cores: a 150,000-row build side is hash-repartitioned together with its 3.2M-row probe side instead of being
built once and shared by every probe partition. deltalake's QueryBuilder lands on the broadcast there only
because its provider gives no statistics for join keys (its estimate is the smaller input: 30,000 rows).
The thresholds below let a build side of up to `JOIN_BROADCAST_ROWS` rows / `JOIN_BROADCAST_BYTES` be
broadcast (Spark's own broadcast threshold is 10 MB); measured per TPC-H query in `benchmarks/README.md`.

`FILTER_SELECTIVITY`: the share of rows DataFusion assumes a predicate keeps where its interval analysis cannot
estimate it (string equalities, LIKE, column-to-column comparisons, ORs): 5 % instead of 20 %. With 20 %, a
filtered build side such as TPC-H Q17's (part by brand and container, then joined with lineitem; ~6,000 rows) or
Q12's (~30,000 lineitem rows) is estimated above the broadcast limit, the join is hash-partitioned, and its
dynamic filter becomes a per-row `CASE hash_repartition ...` in the probe scan; at 5 % both broadcast (Q17
0.59-0.64x CPU, measured in docs/decisions.md "... row filter per table").

Only sessions deltakernel creates get them: a caller's own `SessionContext` passed to `register` keeps its
settings (deltakernel never changes a session it did not make), and a caller's `config` / `session_config`
wins over these defaults.
"""

from __future__ import annotations

from typing import Any

#: largest estimated build side (bytes / rows) DataFusion may broadcast to every probe partition
JOIN_BROADCAST_BYTES = 16 * 1024 * 1024
JOIN_BROADCAST_ROWS = 1024 * 1024
#: percent of rows a predicate without an interval estimate is assumed to keep (DataFusion's default: 20)
FILTER_SELECTIVITY = 5

DEFAULTS: dict[str, str] = {
    "datafusion.optimizer.hash_join_single_partition_threshold": str(JOIN_BROADCAST_BYTES),
    "datafusion.optimizer.hash_join_single_partition_threshold_rows": str(JOIN_BROADCAST_ROWS),
    "datafusion.optimizer.default_filter_selectivity": str(FILTER_SELECTIVITY),
}


def session_config(overrides: dict[str, str] | None = None) -> Any:
    """A `datafusion.SessionConfig` with `DEFAULTS`, then `overrides` (the caller's settings) applied."""
    import datafusion

    return datafusion.SessionConfig({**DEFAULTS, **(overrides or {})})


__all__ = ["DEFAULTS", "FILTER_SELECTIVITY", "JOIN_BROADCAST_BYTES", "JOIN_BROADCAST_ROWS", "session_config"]
