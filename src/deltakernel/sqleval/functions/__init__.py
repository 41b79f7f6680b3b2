"""The Spark SQL functions the evaluator knows, one module per family: `scalar.py` (strings, math, NULL
handling, casts by name), `collections.py` (arrays and maps), `temporal.py` (dates, times, intervals).

`FUNCTIONS` maps an upper-case name to (min args, max args, handler(evaluator, evaluated args, Func node)).
"""

from __future__ import annotations

from ..protocol import FunctionTable
from . import collections, scalar, temporal

FUNCTIONS: FunctionTable = {**scalar.FUNCTIONS, **collections.FUNCTIONS, **temporal.FUNCTIONS}

#: names callable with function syntax (not operators such as `[]` or `+INTERVAL`)
SUPPORTED_FUNCTIONS = frozenset(name for name in FUNCTIONS if name.isidentifier())

__all__ = ["FUNCTIONS", "SUPPORTED_FUNCTIONS"]
