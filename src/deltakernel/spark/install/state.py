"""What `enable()` changed in pyspark, readable from anywhere below the engine: the patch records and pyspark's
originals. A leaf (no deltakernel import), so the catalog's public-SQL side can call pyspark's own `sql` without
importing the registry (`install.py`) that imports the whole engine."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any, ClassVar

MISSING = object()


@dataclass
class Applied:
    owner: Any
    attr: str
    before: Any  # the owner's own `__dict__` entry before, or MISSING (inherited)
    replacement: Any


class State:
    lock: ClassVar[threading.RLock] = threading.RLock()
    applied: ClassVar[list[Applied]] = []
    applications = 0
    #: enabled sessions -> {conf: (value before enable, value enable set)} for the confs enable changed
    sessions: ClassVar[weakref.WeakKeyDictionary[Any, dict[str, tuple[str | None, str]]]] = \
        weakref.WeakKeyDictionary()
    source_registered = False  # the "delta" source was registered in some session of this process


def is_enabled(session: Any) -> bool:
    """Whether `enable(session)` ran (and `disable(session)` did not since): the replacements route only then."""
    try:
        return session in State.sessions
    except TypeError:  # not weak-referenceable: never enabled
        return False


def original(owner: type, attr: str) -> Any:
    """pyspark's own `owner.attr` (looked up along the MRO), whether or not it is patched now."""
    for cls in getattr(owner, "__mro__", (owner,)):
        for applied in State.applied:
            if applied.owner is cls and applied.attr == attr and applied.before is not MISSING:
                return applied.before
    return getattr(owner, attr)


def applications() -> int:
    """How many times the patches were applied in this process (once per enable after a full restore)."""
    return State.applications


def patched() -> list[tuple[Any, str]]:
    """The (owner, attribute) pairs replaced now."""
    return [(a.owner, a.attr) for a in State.applied]


__all__ = ["MISSING", "Applied", "State", "applications", "is_enabled", "original", "patched"]
