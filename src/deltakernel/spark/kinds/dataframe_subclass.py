"""What a deltakernel subclass of pyspark's DataFrame needs to be constructible on every pyspark 4.x line.

`load()` returns DataFrame subclasses that remember their snapshot (`reader.DeltaFrame` over the classic
DataFrame, `scan.public_plan.ConnectDeltaFrame` over the Connect one); their constructors take more arguments
than pyspark's `(plan or jdf, session)`. pyspark's DataFrame classes define `__new__`, and its signature is the
one difference between the lines:

- pyspark 4.0 and 4.1 (tested: 4.0.5, 4.1.4): `__new__(cls, jdf_or_plan, session)` - exactly two arguments -
  then calls `__init__(jdf_or_plan, session)` itself, so a subclass constructed with a third argument fails with
  `TypeError: DataFrame.__new__() takes 3 positional arguments but 4 were given`;
- pyspark 4.2 and 4.3 (tested: 4.2.1, 4.3.0): `__new__(cls, *args, **kwargs)` returns `object.__new__(cls)`
  and leaves `__init__` to Python.

`PlainNew` first in a subclass's bases gives it 4.2's behaviour on every line: a bare instance, then the
subclass's own `__init__` (which calls pyspark's `__init__` with the two arguments pyspark knows). This is the
one place that depends on pyspark's constructor protocol; `tests/spark_versions` runs a read on each minor.
"""

from __future__ import annotations

from typing import Any


class PlainNew:
    """Mixin placed before pyspark's DataFrame in a subclass's bases: `__new__` takes any arguments and only
    allocates (pyspark 4.0/4.1's `__new__` accepts exactly `(jdf_or_plan, session)` and calls `__init__`)."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return object.__new__(cls)


__all__ = ["PlainNew"]
