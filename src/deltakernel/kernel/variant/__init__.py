"""Variant values: the binary encoding, unshredding of shredded Parquet columns, and Spark's `to_json` rendering.

Why a package: Delta's `variantType` and `variantShredding` features store variants as Parquet structs; the
scan (`schema/reconcile.py`) hands shredded columns here and gets the unshredded `struct<metadata, value>` that
every engine of deltakernel already understands.
"""

from .binary import MalformedVariantError, decode
from .unshred import is_shredded, unshred

__all__ = ["MalformedVariantError", "decode", "is_shredded", "unshred"]
