"""Native extensions that run their own tokio runtime (obstore, DataFusion) in fork children.

obstore and datafusion-python each start one process-wide tokio runtime on first use, a static of their shared
library. `fork()` copies that runtime's state into the child but none of its worker threads, so in the child every
call that needs a worker (any network I/O, DataFusion's streams) waits forever - whichever object it goes through,
inherited or made in the child: there is one runtime per library and nothing outside the library can replace it.

So a process forked from one that had started such a runtime uses a *fresh instance* of the extension: its shared
library is copied (once per library version into a private per-user cache directory, then reused by every child)
and loaded again under the same module name. A second `dlopen` of another file has its own statics, so the copy's
runtime starts, with its threads, on first use in the child. Callers ask `module(name)` (or `is_dead` +
`fresh_copy`) for the instance usable in this process and rebuild the native objects (stores, SessionContexts)
they made with an older instance; those old objects are kept alive (`keep`), never finalized in the child.

Which instances are dead in a child: those loaded in the parent when it forked while some thread of it was a tokio
worker (`tokio-*`, read from /proc; assumed so where /proc is missing), or that deltakernel had handed out there
(`mark_used`: covers runtimes whose threads are named otherwise). Dead stays dead in grandchildren.
`DELTAKERNEL_FORK_NATIVE_COPY=0` turns the copies off: a fork child then raises `ForkedProcessError` instead.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from types import ModuleType
from typing import Any

from deltakernel.errors import ForkedProcessError

#: the extension modules with a process-wide tokio runtime
TRACKED = ("obstore._obstore", "datafusion._internal")
COPY_OPTION = "DELTAKERNEL_FORK_NATIVE_COPY"
CACHE_OPTION = "DELTAKERNEL_NATIVE_CACHE_DIR"

_lock = threading.Lock()
_current: dict[str, ModuleType] = {}  # name -> the instance `module(name)` hands out in this process
_origin: dict[str, str] = {}  # name -> the installed library file (copies are made from it)
_instances: dict[str, list[ModuleType]] = {}  # name -> every instance loaded in this process, oldest first
_dead: set[int] = set()  # id() of instances whose runtime belongs to an ancestor process (all kept referenced)
_used: set[int] = set()  # id() of instances deltakernel handed out in this process
_loaded_files: set[str] = set()  # copies loaded in this process or its ancestors (dlopen shares one file's statics)
_kept: list[Any] = []  # native objects of dead instances: never finalized in a child
_tokio_at_fork = False


def _tokio_threads() -> bool:
    """Whether a thread of this process is a tokio worker (True when threads cannot be listed)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return True
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/comm", "rb") as f:
                if f.read().startswith(b"tokio"):
                    return True
        except OSError:  # the thread ended meanwhile
            continue
    return False


def _before_fork() -> None:
    global _tokio_at_fork
    _tokio_at_fork = _tokio_threads()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it at fork time
    for name in TRACKED:
        for mod in (sys.modules.get(name), _current.get(name)):
            if mod is not None and (_tokio_at_fork or id(mod) in _used):
                _remember(name, mod)
                _dead.add(id(mod))
    _used.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def _remember(name: str, mod: ModuleType) -> None:
    known = _instances.setdefault(name, [])
    if not any(m is mod for m in known):
        known.append(mod)
    file = getattr(mod, "__file__", None)
    if file and name not in _origin:
        _origin[name] = file


def is_dead(mod: ModuleType) -> bool:
    """Whether `mod`'s runtime was started by an ancestor process (its calls would wait forever here)."""
    return id(mod) in _dead


def mark_used(mod: ModuleType, name: str) -> None:
    """Record that deltakernel uses `mod` in this process (so its runtime may run: dead in a fork child)."""
    if id(mod) not in _used:
        _remember(name, mod)
        _used.add(id(mod))


def instances(name: str) -> list[ModuleType]:
    """Every instance of extension `name` loaded in this process (error classes differ between instances)."""
    mod = sys.modules.get(name)
    if mod is not None:
        _remember(name, mod)
    return list(_instances.get(name, ()))


def keep(obj: Any) -> None:
    """Keep `obj` (made with a dead instance) alive: finalizing it could call into a runtime without threads."""
    _kept.append(obj)


def module(name: str) -> ModuleType:
    """The instance of extension module `name` usable in this process: the imported one, or in a fork child whose
    parent had started its runtime, a fresh copy (loaded once per process). Raises ForkedProcessError when the
    copy cannot be loaded."""
    mod = _current.get(name)
    if mod is None:
        mod = sys.modules.get(name) or importlib.import_module(name)
        _current[name] = mod
    if id(mod) in _dead:
        with _lock:
            mod = _current[name]
            if id(mod) in _dead:
                mod = _current[name] = fresh_copy(name)
    if id(mod) not in _used:
        mark_used(mod, name)
    return mod


def fresh_copy(name: str) -> ModuleType:
    """A new instance of extension module `name` (its shared library copied and loaded again); not registered
    in `sys.modules`. Raises ForkedProcessError when copies are turned off or the load fails."""
    for mod in (sys.modules.get(name), _current.get(name)):
        if mod is not None:
            _remember(name, mod)
    source = _origin.get(name)
    hint = ("use the multiprocessing start method 'spawn' or 'forkserver', or fork before the parent first "
            "uses it")
    if os.environ.get(COPY_OPTION, "1").strip() == "0":
        raise ForkedProcessError(f"{name}: its runtime was started in the parent of this forked process and "
                                 f"{COPY_OPTION}=0 forbids loading a fresh copy; {hint}")
    if source is None:
        raise ForkedProcessError(f"{name}: its runtime was started in the parent of this forked process and "
                                 f"its library file is unknown; {hint}")
    import importlib.util  # here and below: only fork children need them (no import cost elsewhere)

    try:
        path = _library_copy(name, source)
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"no loader for {path}")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except (OSError, ImportError) as exc:
        raise ForkedProcessError(f"{name}: its runtime was started in the parent of this forked process and a "
                                 f"fresh copy of {source} could not be loaded ({exc}); {hint}") from exc
    _loaded_files.add(path)
    _remember(name, mod)
    return mod


def _cache_dir() -> str:
    """A directory only this user can write (the copies are executable code)."""
    import stat
    import tempfile

    base = os.environ.get(CACHE_OPTION) or os.path.join(tempfile.gettempdir(), f"deltakernel-native-{os.getuid()}")
    os.makedirs(base, mode=0o700, exist_ok=True)
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise OSError(f"{base} is not a directory only this user can write")
    return base


def _library_copy(name: str, source: str) -> str:
    """A copy of `source` no instance in this process was loaded from (made once, then reused by every process)."""
    import shutil
    import tempfile

    st = os.stat(source)
    base = os.path.basename(source)
    suffix = base[base.index("."):] if "." in base else ""
    directory = _cache_dir()
    n = 0
    while True:
        path = os.path.join(directory, f"{name}-{st.st_size}-{st.st_mtime_ns}-{n}{suffix}")
        if path not in _loaded_files:
            break
        n += 1
    try:
        if os.stat(path).st_size == st.st_size:
            return path
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".copy-")
    try:
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)
        os.chmod(tmp, 0o700)
        os.replace(tmp, path)  # atomic: a concurrent process sees the whole file or none
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


__all__ = ["CACHE_OPTION", "COPY_OPTION", "TRACKED", "fresh_copy", "instances", "is_dead", "keep", "mark_used",
           "module"]
