"""Shared benchmark machinery: every measurement runs in a fresh subprocess.

The child imports what it needs (not timed), records its peak RSS so far (``rss_base``: interpreter +
imports), then times the operation with ``time.perf_counter`` (wall) and ``getrusage`` (CPU user+sys of all
threads) and prints one JSON line with its peak RSS (``VmHWM`` of the child, imports included).

Peak RSS is taken from the child's ``/proc/self/status`` VmHWM rather than the parent's
``getrusage(RUSAGE_CHILDREN).ru_maxrss`` / ``wait4`` rusage: on Linux a child's ``ru_maxrss`` starts at the
*parent's* RSS high-water mark (it is carried over fork+exec), so with a parent that imported deltalake
every child would report at least ~165 MB. The ``wait4`` value is still recorded as a cross-check.

Contenders are run round-robin (rep 1 of each, then rep 2 of each, ...) so that bursts of background load
hit all contenders alike; best and median wall time over the repetitions are reported.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

_CHILD_TEMPLATE = """\
import json, resource, sys, time, gc
def _hwm_kb():
    # peak RSS of this process since exec (VmHWM); ru_maxrss is not used because Linux carries the
    # parent's RSS high-water mark over fork+exec into the child's ru_maxrss
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
{setup}
gc.collect()
_base = _hwm_kb()
_c0 = _cpu()
_t0 = time.perf_counter()
{op}
_t1 = time.perf_counter()
_c1 = _cpu()
{post}
print("@@RESULT@@" + json.dumps({{"seconds": _t1 - _t0, "cpu": _c1 - _c0, "rss_base_kb": _base,
                                  "rss_peak_kb": _hwm_kb(), "result": result}}))
"""


@dataclass
class Contender:
    name: str
    setup: str  # imports etc. (not timed); may use the variable PARAMS (json-decoded argv[1])
    op: str  # timed; must assign a JSON-serialisable `result`
    post: str = ""  # untimed check after the op; may replace `result` (peak RSS still counts it)


@dataclass
class Measurement:
    name: str
    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    peak_rss_kb: list[int] = field(default_factory=list)
    base_rss_kb: list[int] = field(default_factory=list)
    wait4_maxrss_kb: list[int] = field(default_factory=list)
    result: Any = None

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def best_cpu(self) -> float:
        return min(self.cpu)

    @property
    def peak_rss_mb(self) -> float:
        return statistics.median(self.peak_rss_kb) / 1024

    @property
    def base_rss_mb(self) -> float:
        return statistics.median(self.base_rss_kb) / 1024


# `deltakernel` loads its public names on first use; a contender's untimed setup resolves them, as `import
# deltalake` loads deltalake's native extension at import (otherwise the timed op would pay pyarrow's import)
IMPORT_DELTAKERNEL = "import deltakernel\nfrom deltakernel import DeltaTable, write_deltalake\n"
# deltalake loads its whole extension at `import deltalake`; deltakernel loads modules on first use. To compare
# like with like, this loads every deltakernel module but the engines (Spark, DataFusion, the CLI) untimed.
PRELOAD_DELTAKERNEL = IMPORT_DELTAKERNEL + (
    "import importlib, pkgutil\n"
    "for _m in pkgutil.walk_packages(deltakernel.__path__, 'deltakernel.'):\n"
    "    if not _m.name.startswith(('deltakernel.spark', 'deltakernel.datafusion', 'deltakernel.cli', "
    "'deltakernel.query')):\n"
    "        importlib.import_module(_m.name)\n"
    "import pyarrow.json, pyarrow.parquet, pyarrow.compute\n"
)


def run_once(c: Contender, params: dict[str, Any]) -> dict[str, Any]:
    code = _CHILD_TEMPLATE.format(
        setup="PARAMS = json.loads(sys.argv[1])\n" + textwrap.dedent(c.setup),
        op=textwrap.dedent(c.op),
        post=textwrap.dedent(c.post),
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        proc = subprocess.Popen(
            [PYTHON, "-c", code, json.dumps(params)], stdout=fout, stderr=ferr, env=env, cwd=str(ROOT)
        )
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage (ru_maxrss in KiB on Linux)
        proc.returncode = os.waitstatus_to_exitcode(status)
        fout.seek(0)
        ferr.seek(0)
        out = fout.read().decode()
        err_b = ferr.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{c.name} failed (exit {proc.returncode}):\n{err_b.decode()[-4000:]}")
    line = next(x for x in reversed(out.splitlines()) if x.startswith("@@RESULT@@"))
    data = json.loads(line[len("@@RESULT@@"):])
    data["wait4_maxrss_kb"] = usage.ru_maxrss
    return data


def measure_all(contenders: list[Contender], params: dict[str, Any], repeat: int, tag: str = "") -> list[Measurement]:
    """Run every contender `repeat` times, round-robin, each run in a fresh subprocess."""
    ms = [Measurement(c.name) for c in contenders]
    for i in range(repeat):
        for c, m in zip(contenders, ms):
            d = run_once(c, params)
            m.seconds.append(d["seconds"])
            m.cpu.append(d["cpu"])
            m.peak_rss_kb.append(d["rss_peak_kb"])
            m.base_rss_kb.append(d["rss_base_kb"])
            m.wait4_maxrss_kb.append(d["wait4_maxrss_kb"])
            if m.result is None:
                m.result = d["result"]
            elif d["result"] != m.result:
                raise RuntimeError(f"{c.name}: result changed between runs: {m.result!r} vs {d['result']!r}")
            print(
                f"  {tag}[{i + 1}/{repeat}] {c.name}: {d['seconds']:.3f}s wall, {d['cpu']:.3f}s cpu, "
                f"peak RSS {d['rss_peak_kb'] / 1024:.0f} MB",
                file=sys.stderr,
                flush=True,
            )
    return ms


def versions() -> dict[str, str]:
    import deltalake
    import numpy
    import pyarrow

    out = {
        "python": platform.python_version(),
        "pyarrow": pyarrow.__version__,
        "deltalake": deltalake.__version__,
        "numpy": numpy.__version__,
    }
    try:
        from importlib.metadata import version

        out["deltakernel"] = version("deltakernel")
    except Exception:
        out["deltakernel"] = "?"
    return out


def machine() -> dict[str, str]:
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    mem = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": nproc, "memory": mem, "cpu": cpu, "os": platform.platform()}


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def measurement_rows(ms: list[Measurement], baselines: dict[str, str]) -> tuple[list[str], list[list[str]]]:
    """Rows: name, best/median wall, best CPU, peak RSS, RSS after imports, then ratios vs each baseline."""
    by = {m.name: m for m in ms}
    headers = ["contender", "best s", "median s", "best CPU s", "peak RSS MB", "RSS after imports MB"]
    headers += [f"time vs {label}" for label in baselines.values()]
    headers += [f"RSS vs {label}" for label in baselines.values()]
    rows = []
    for m in ms:
        row = [m.name, f"{m.best:.3f}", f"{m.median:.3f}", f"{m.best_cpu:.2f}", f"{m.peak_rss_mb:.0f}",
               f"{m.base_rss_mb:.0f}"]
        row += [ratio(m.best, by[b].best) if b in by else "" for b in baselines]
        row += [ratio(m.peak_rss_mb, by[b].peak_rss_mb) if b in by else "" for b in baselines]
        rows.append(row)
    return headers, rows
