"""Round-robin measurement for operations that need fresh input/output state per run (writes, checkpoints).

Like ``_harness.measure_all``, but before every run the parent calls ``prepare(contender, rep)`` to build the
run's parameters (e.g. a fresh empty output directory, or a fresh copy of a Delta log), and after it
``finish(contender, rep, params)``, which checks what the child wrote and returns a JSON-serialisable summary
that must be the same on every repetition (it becomes ``Measurement.result``). Checking in the parent keeps
the verification's memory and imports out of the child's peak RSS. ``os.sync()`` runs after each preparation
and after each run, so dirty page-cache writeback of one run does not land in the next contender's timing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from _harness import Contender, Measurement, run_once

# Reset the child's peak RSS (VmHWM) to its current RSS: write "5" to /proc/self/clear_refs (Linux >= 4.0).
# Put at the end of a contender's setup to measure the op's own peak, excluding setup work (e.g. loading).
RESET_PEAK_RSS = 'with open("/proc/self/clear_refs", "w") as _f:\n    _f.write("5")\n'


def measure_prepared(
    contenders: list[Contender],
    prepare: Callable[[Contender, int], dict[str, Any]],
    finish: Callable[[Contender, int, dict[str, Any]], Any],
    repeat: int,
    tag: str = "",
) -> list[Measurement]:
    ms = [Measurement(c.name) for c in contenders]
    for i in range(repeat):
        for c, m in zip(contenders, ms):
            params = prepare(c, i)
            os.sync()
            d = run_once(c, params)
            os.sync()
            summary = finish(c, i, params)
            m.seconds.append(d["seconds"])
            m.cpu.append(d["cpu"])
            m.peak_rss_kb.append(d["rss_peak_kb"])
            m.base_rss_kb.append(d["rss_base_kb"])
            m.wait4_maxrss_kb.append(d["wait4_maxrss_kb"])
            if m.result is None:
                m.result = summary
            elif summary != m.result:
                raise RuntimeError(f"{c.name}: result changed between runs: {m.result!r} vs {summary!r}")
            print(
                f"  {tag}[{i + 1}/{repeat}] {c.name}: {d['seconds']:.3f}s wall, {d['cpu']:.3f}s cpu, "
                f"peak RSS {d['rss_peak_kb'] / 1024:.0f} MB (after setup {d['rss_base_kb'] / 1024:.0f} MB)",
                file=sys.stderr,
                flush=True,
            )
    return ms
