"""benchmarks/README.md (the report a user reads), benchmarks/ratios.csv and the plots drawn from it stay one story.

The README's tables are written by hand; the CSV feeds `benchmarks/plot_ratios.py`. Checked here: the script
writes one valid PNG per area of the CSV; every README table row with a ratio has the CSV's ratio (and every CSV
row has its README row); the README embeds each area's plot, which exists; links into docs/benchmark-history.md
name headings that exist there. No timing is asserted: the numbers are measurements, not expectations.
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
README = BENCH / "README.md"
HISTORY = ROOT / "docs" / "benchmark-history.md"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _csv_rows() -> list[dict[str, str]]:
    with (BENCH / "ratios.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _areas() -> list[str]:
    return list(dict.fromkeys(r["area"] for r in _csv_rows()))


def _readme_rows() -> list[tuple[str, dict[str, str]]]:
    """(area, row as {column: cell}) for every row of every table that follows a `<!-- ratios: AREA -->` marker."""
    rows = []
    lines = README.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        m = re.fullmatch(r"<!-- ratios: (\w+) -->", line.strip())
        if not m:
            continue
        table = []
        for nxt in lines[i + 1:]:
            if not nxt.startswith("|"):
                break
            table.append([c.strip() for c in nxt.strip().strip("|").split("|")])
        header, body = table[0], table[2:]
        assert {"benchmark", "contender", "ratio"} <= set(header), header
        rows += [(m.group(1), dict(zip(header, cells))) for cells in body]
    return rows


def _ratio(cell: str) -> str | None:
    text = cell.replace("*", "").strip()
    return None if text == "—" else text.removesuffix("x")


def test_plot_script_writes_one_png_per_area(tmp_path):
    out = tmp_path / "plots"
    subprocess.run([sys.executable, str(BENCH / "plot_ratios.py"), "--csv", str(BENCH / "ratios.csv"),
                    "--out", str(out)], check=True, capture_output=True, timeout=600)
    areas = _areas()
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{a}.png" for a in areas)
    for area in areas:
        assert (out / f"{area}.png").read_bytes()[:8] == PNG_MAGIC, area


def test_readme_ratios_match_the_csv():
    csv_rows = _csv_rows()
    readme = _readme_rows()
    assert {a for a, _ in readme} == {r["area"] for r in csv_rows}
    matched = set()
    for area, row in readme:
        ratio = _ratio(row["ratio"])
        hits = [i for i, r in enumerate(csv_rows)
                if r["area"] == area and r["benchmark"] == row["benchmark"]
                and (row["contender"] == r["contender"] or row["contender"].startswith(r["contender"] + ":"))]
        if ratio is None:  # a row without a ratio (e.g. a memory goal in MiB) is not plotted
            assert not hits, (area, row["benchmark"])
            continue
        assert len(hits) == 1, (area, row["benchmark"], row["contender"], hits)
        assert float(csv_rows[hits[0]]["ratio"]) == float(ratio), (area, row["benchmark"])
        matched.add(hits[0])
    missing = [(r["area"], r["benchmark"]) for i, r in enumerate(csv_rows) if i not in matched]
    assert not missing, f"CSV rows without a README row: {missing}"


def test_readme_embeds_each_areas_plot():
    text = README.read_text(encoding="utf-8")
    for area in _areas():
        assert f"](plots/{area}.png)" in text, area
        assert (BENCH / "plots" / f"{area}.png").read_bytes()[:8] == PNG_MAGIC, area


def _slugs(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to '-', '-1', '-2' for repeats."""
    seen: dict[str, int] = {}
    for m in re.finditer(r"^#{1,6} (.+)$", markdown, re.M):
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
    return {s if n == 0 else f"{s}-{n}" for s, count in seen.items() for n in range(count)}


def test_links_into_the_history_and_decisions_resolve():
    text = README.read_text(encoding="utf-8")
    targets = {"benchmark-history.md": HISTORY, "decisions.md": ROOT / "docs" / "decisions.md"}
    links = re.findall(r"\]\(\.\./docs/([\w.-]+)#([^)]+)\)", text)
    assert links
    slugs = {name: _slugs(path.read_text(encoding="utf-8")) for name, path in targets.items()}
    broken = [(name, anchor) for name, anchor in links if anchor not in slugs[name]]
    assert not broken, broken
