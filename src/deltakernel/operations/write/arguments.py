"""`write_deltalake`'s argument checks that deltalake makes before touching the table.

deltalake refuses these inputs and its users' code (and tests) rely on the refusal: a target file size of 0, a
`delta.*` configuration key Delta does not define (a typo would be stored silently and do nothing), and
storage options that are not strings. They live here, in the embedded API only: the Spark writer has its own
option handling (Spark's), and DeltaTable.create keeps its `raise_if_key_not_exists` switch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidArgumentTypeError, InvalidArgumentValueError


def check_write_arguments(target_file_size: int | None, configuration: Mapping[str, Any] | None,
                          storage_options: Mapping[str, Any] | None) -> None:
    """Raise deltalake's error (a DeltaError that is also the builtin type deltalake raises) for a bad argument."""
    if target_file_size is not None and (isinstance(target_file_size, bool) or int(target_file_size) <= 0):
        raise InvalidArgumentValueError(f"target_file_size must be greater than 0, got {target_file_size!r}")
    if storage_options:
        for key, value in storage_options.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise InvalidArgumentTypeError(
                    f"storage_options must map strings to strings: {key!r}: {value!r} "
                    f"('{type(value).__name__}' object is not an instance of 'str')")
    if configuration:
        from ..alter.table_properties import check_known_keys

        check_known_keys(configuration, hint=False)
