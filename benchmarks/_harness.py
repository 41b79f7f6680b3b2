"""Shared benchmark machinery: every measurement runs in a fresh subprocess.

The child imports what it needs (not timed), records its peak RSS so far (``rss_base``: interpreter +
imports), then times the operation with ``time.perf_counter`` and prints one JSON line. The parent reaps
it with ``os.wait4`` and takes that child's own ``ru_maxrss`` as the peak RSS of the run (imports
included). Timings are wall clock; reported as best and median over the repetitions.
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
{setup}
gc.collect()
_base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
_t0 = time.perf_counter()
{op}
_t1 = time.perf_counter()
{post}
print("@@RESULT@@" + json.dumps({{"seconds": _t1 - _t0, "rss_base_kb": _base, "result": result}}))
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
    peak_rss_kb: list[int] = field(default_factory=list)
    base_rss_kb: list[int] = field(default_factory=list)
    result: Any = None

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def peak_rss_mb(self) -> float:
        return max(self.peak_rss_kb) / 1024

    @property
    def base_rss_mb(self) -> float:
        return max(self.base_rss_kb) / 1024


def run_once(c: Contender, params: dict[str, Any]) -> tuple[float, int, int, Any]:
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
    return data["seconds"], usage.ru_maxrss, data["rss_base_kb"], data["result"]


def measure(c: Contender, params: dict[str, Any], repeat: int, verbose: bool = True) -> Measurement:
    m = Measurement(c.name)
    for i in range(repeat):
        secs, peak, base, result = run_once(c, params)
        m.seconds.append(secs)
        m.peak_rss_kb.append(peak)
        m.base_rss_kb.append(base)
        if m.result is None:
            m.result = result
        elif result != m.result:
            raise RuntimeError(f"{c.name}: result changed between runs: {m.result!r} vs {result!r}")
        if verbose:
            print(f"  {c.name} run {i + 1}/{repeat}: {secs:.3f}s, peak RSS {peak / 1024:.0f} MB", file=sys.stderr,
                  flush=True)
    return m


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
    except Exception:  # noqa: BLE001
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


def measurement_rows(ms: list[Measurement], baselines: dict[str, str]) -> tuple[list[str], list[list[str]]]:
    """Rows: name, best, median, peak RSS, (RSS of imports), then best-time ratio vs each baseline."""
    by = {m.name: m for m in ms}
    headers = ["contender", "best s", "median s", "peak RSS MB", "RSS after imports MB"]
    headers += [f"time vs {label}" for label in baselines.values()]
    headers += [f"RSS vs {label}" for label in baselines.values()]
    rows = []
    for m in ms:
        row = [m.name, f"{m.best:.3f}", f"{m.median:.3f}", f"{m.peak_rss_mb:.0f}", f"{m.base_rss_mb:.0f}"]
        row += [ratio(m.best, by[b].best) if b in by else "" for b in baselines]
        row += [ratio(m.peak_rss_mb, by[b].peak_rss_mb) if b in by else "" for b in baselines]
        rows.append(row)
    return headers, rows
