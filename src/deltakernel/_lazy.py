"""Public names a package loads on first use (py-polars' lazy imports, PEP 562 module `__getattr__`).

Spark starts Python processes (a streaming source's driver side, UDF workers) that import one submodule each;
with eager package `__init__`s each paid for the whole library."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, names: dict[str, str],
               namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`(__getattr__, __dir__)` for `package`: `names` maps a public name to the relative module defining it;
    a name is imported on first access and cached in the package's `namespace`."""

    def getattr_(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *names})

    return getattr_, dir_
