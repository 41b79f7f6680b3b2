"""DataFusion in fork children.

datafusion-python runs every query on one process-wide tokio runtime, a static of its extension module. In a
process forked from one that had used it, that runtime has no threads: `DataFrame.execute_stream`, the Arrow
stream export and every multi-partition plan wait forever, whatever SessionContext they go through. So, as
for obstore (`deltakernel.storage.forksafe`), such a child loads a fresh instance of the extension
(`datafusion._internal`), re-imports the `datafusion` package over it and reloads the deltakernel modules that
bound DataFusion's classes at import (`native`, `sql_tables`, this package's `__init__`). The modules and
native objects of the old instance are kept alive, never finalized in the child.

`ensure_usable()` does that at most once per process and is called by every entry point before it makes or
uses a DataFusion object: `QueryBuilder` (which also rebuilds a session made before the fork, with the same
Delta tables registered), `session_context`, `install`, `register`, `register_catalog`, `sql` and the native
reader. `check_context(ctx)` also refuses, with `ForkedProcessError`, a SessionContext the caller made before
the fork (its queries would hang). DataFusion objects made before the fork (SessionContext, DataFrame) cannot
run in the child: take them again from the QueryBuilder or make new ones.
"""

from __future__ import annotations

import importlib
import sys
import threading
from typing import Any

from ..errors import ForkedProcessError
from ..storage import forksafe

_INTERNAL = "datafusion._internal"
#: deltakernel modules holding DataFusion classes or functions bound at import, reloaded (in this order)
_BOUND = ("deltakernel.datafusion.native", "deltakernel.datafusion.sql_tables", "deltakernel.datafusion")
_lock = threading.RLock()


def ensure_usable() -> None:
    """Make the imported `datafusion` usable in this process (see the module docstring); cheap when it is.
    Raises ForkedProcessError when a fresh instance is needed and cannot be loaded."""
    internal = sys.modules.get(_INTERNAL)
    if internal is None:  # not imported yet: its first import here is fresh
        return
    if forksafe.is_dead(internal):
        with _lock:
            internal = sys.modules[_INTERNAL]
            if forksafe.is_dead(internal):
                internal = _reimport(forksafe.fresh_copy(_INTERNAL))
    forksafe.mark_used(internal, _INTERNAL)


def _reimport(fresh: Any) -> Any:
    names = sorted((k for k in sys.modules if k == "datafusion" or k.startswith("datafusion.")),
                   key=lambda k: (k.count("."), k))
    old = {k: sys.modules.pop(k) for k in names}
    forksafe.keep(old)
    sys.modules[_INTERNAL] = fresh
    try:
        importlib.import_module("datafusion")
        for name in names:
            if name not in sys.modules and not name.startswith(_INTERNAL):
                try:
                    importlib.import_module(name)
                except ImportError:  # not a file module (the old extension registered it): the new one has its own
                    continue
        for name in _BOUND:
            mod = sys.modules.get(name)
            if mod is not None:
                forksafe.keep(dict(vars(mod)))  # its old DataFusion objects (inner contexts) stay alive
                importlib.reload(mod)
    except Exception as exc:
        raise ForkedProcessError(f"DataFusion could not be re-imported over a fresh copy of its extension in this "
                                 f"forked process ({exc}); use the multiprocessing start method 'spawn' or "
                                 "'forkserver'") from exc
    return fresh


def check_context(ctx: Any) -> None:
    """`ensure_usable()`, then refuse a SessionContext made by a DataFusion instance this process cannot run."""
    ensure_usable()
    inner = getattr(ctx, "ctx", None)
    internal = sys.modules.get(_INTERNAL)
    if inner is None or internal is None or type(inner).__name__ != "SessionContext":
        return
    current = getattr(internal, "SessionContext", None)
    if current is not None and type(inner) is not current:
        raise ForkedProcessError("this DataFusion SessionContext was made before the process was forked; DataFusion "
                                 "cannot run it here (its runtime's threads stayed in the parent): make a new one in "
                                 "this process (or take QueryBuilder.context again)")


__all__ = ["check_context", "ensure_usable"]
