"""Bar charts of the current benchmark ratios: one PNG per area, for benchmarks/README.md.

Why a script and a CSV: the README's tables are written by hand from runs on a shared machine, so the numbers
live in one small machine-readable file (``benchmarks/ratios.csv``) that the plots are drawn from and that
``tests/unit/test_benchmark_report.py`` checks against the README's tables - the three cannot drift apart.

Input: ``ratios.csv`` with the columns ``area, benchmark, contender, ratio, target, measured_at``. ``ratio`` is
deltakernel's figure over the contender's (time, or peak RSS where the benchmark says so: below 1.0 deltakernel
is faster / smaller); ``target`` is the ratio an issue asks for (at most), empty where none was set.

Output: ``<out>/<area>.png`` for every area in the CSV: one horizontal bar per row (green: target met, red:
missed, grey: no target), the 1.0 line (parity with the contender) and a black tick at each row's target.

Usage: ``.venv/bin/python benchmarks/plot_ratios.py [--csv benchmarks/ratios.csv] [--out benchmarks/plots]``
"""

from __future__ import annotations

import argparse
import csv
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
COLUMNS = ("area", "benchmark", "contender", "ratio", "target", "measured_at")

# Titles of the areas in the README's order; an area missing here is still plotted, titled by its name.
TITLES = {
    "snapshot": "Snapshot load",
    "full_scan": "Full scan",
    "streaming_scan": "Streaming scan",
    "selective_scan": "Selective scan",
    "append": "Append",
    "checkpoint": "Checkpoint",
    "time_travel": "Time travel",
    "dml": "DML (DELETE, UPDATE, MERGE)",
    "maintenance": "Maintenance (OPTIMIZE, VACUUM, RESTORE)",
    "memory": "Memory",
    "datafusion": "DataFusion engine",
    "spark_scan": "Spark: scan and write",
    "spark_skipping": "Spark: file skipping per query shape",
    "spark_dml": "Spark: DELETE, UPDATE, MERGE",
    "spark_streaming": "Spark: Structured Streaming",
    "spark_maintenance": "Spark: maintenance",
    "connect_vs_classic": "Spark Connect vs classic: operations",
    "connect_shapes": "Spark Connect vs classic: point query per shape",
    "long_sessions": "Long sessions",
    "tpch": "TPC-H: Delta / Parquet, geometric mean of 22 queries",
}


class RatiosFileError(ValueError):
    """ratios.csv is malformed (a missing column, a ratio or target that is not a positive number)."""


@dataclass(frozen=True)
class Row:
    area: str
    benchmark: str
    contender: str
    ratio: float
    target: float | None
    measured_at: str


def _number(text: str, what: str, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise RatiosFileError(f"line {line}: {what} {text!r} is not a number") from None
    if not value > 0:
        raise RatiosFileError(f"line {line}: {what} {text!r} is not positive")
    return value


def read_rows(path: Path) -> list[Row]:
    """The CSV's rows, checked: every column present, ratios and targets positive numbers."""
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise RatiosFileError(f"{path}: missing columns {missing}")
        rows = []
        for line, rec in enumerate(reader, start=2):
            if not rec["area"] or not rec["benchmark"] or not rec["contender"]:
                raise RatiosFileError(f"line {line}: area, benchmark and contender are required")
            target = rec["target"].strip()
            rows.append(Row(rec["area"], rec["benchmark"], rec["contender"],
                            _number(rec["ratio"], "ratio", line),
                            _number(target, "target", line) if target else None, rec["measured_at"]))
    return rows


def by_area(rows: list[Row]) -> dict[str, list[Row]]:
    """Rows grouped by area, areas in the order they first appear."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.area, []).append(row)
    return groups


def _label(row: Row) -> str:
    text = row.benchmark.replace("`", "")
    return "\n".join(textwrap.wrap(f"{text} (vs {row.contender.replace('`', '')})", 60))


def plot_area(area: str, rows: list[Row], out: Path) -> Path:
    """One PNG: a horizontal bar per row, the 1.0 line and the targets."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    labels = [_label(r) for r in rows]
    lines = sum(label.count("\n") + 1 for label in labels)
    fig, ax = plt.subplots(figsize=(10, 1.0 + 0.32 * lines + 0.12 * len(rows)))
    ys = list(range(len(rows)))[::-1]  # first row on top, as in the README's table
    colours = ["#9e9e9e" if r.target is None else ("#2e7d32" if r.ratio <= r.target else "#c62828") for r in rows]
    ax.barh(ys, [r.ratio for r in rows], color=colours, height=0.6)
    ax.axvline(1.0, color="#424242", linestyle="--", linewidth=1)
    top = max([r.ratio for r in rows] + [r.target or 0 for r in rows] + [1.0])
    for y, row in zip(ys, rows):
        if row.target is not None:
            ax.plot([row.target, row.target], [y - 0.4, y + 0.4], color="black", linewidth=2.5)
        # the value right of the bar, or of the target tick when that is further right (no overlap)
        ax.text(max(row.ratio, row.target or 0) + top * 0.015, y, f"{row.ratio:.2f}x", va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlim(0, top * 1.18)
    ax.set_xlabel("deltakernel / contender (lower is better; dashed: parity; black tick: target)")
    dates = sorted({r.measured_at for r in rows})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} .. {dates[-1]}"
    ax.set_title(f"{TITLES.get(area, area)}  (measured {when})", fontsize=10)
    fig.tight_layout()
    path = out / f"{area}.png"
    # no software/version metadata: the same CSV gives the same file on another matplotlib patch release
    fig.savefig(path, dpi=80, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", type=Path, default=HERE / "ratios.csv")
    ap.add_argument("--out", type=Path, default=HERE / "plots")
    args = ap.parse_args(argv)
    try:
        groups = by_area(read_rows(args.csv))
    except RatiosFileError as e:
        print(f"plot_ratios: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for area, rows in groups.items():
        print(plot_area(area, rows, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
