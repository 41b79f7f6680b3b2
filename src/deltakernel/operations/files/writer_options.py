"""Parquet writer options with deltalake's `WriterProperties` / `ColumnProperties` / `BloomFilterProperties`
names, mapped onto pyarrow's `ParquetWriter` keywords.

Per-column settings are keyed by *logical* column names (top-level or dotted nested paths; a struct name
covers all its leaves) and resolved to the physical Parquet leaf paths of each file (column mapping renames
them), so `parquet_options(layout)` needs the file layout. `statistics_truncate_length` bounds the string
min/max of the Delta statistics (the add actions' `stats`, what readers skip on) to that many characters, a
truncated max with delta-spark's tie-breaker so it stays an upper bound (`stats_string_prefix`; default 32,
delta-spark's prefix length). pyarrow's Parquet writer has no truncation option, so the Parquet footers keep
exact min/max (Arrow drops a chunk's bounds over 4 KiB instead).
"""

from __future__ import annotations

import functools
import inspect
import logging
from dataclasses import dataclass
from typing import Any

from ...kernel.stats.collect import DEFAULT_STRING_PREFIX_LENGTH

logger = logging.getLogger(__name__)

#: the codec part of a data file's name (`part-...-c000.snappy.parquet`), by codec
COMPRESSION_EXTENSIONS = {"snappy": "snappy.", "zstd": "zstd.", "gzip": "gz.", "brotli": "br.", "lz4": "lz4.",
                          "none": ""}
_COMPRESSION_ALIASES = {"uncompressed": "none", "lz4_raw": "lz4", "gz": "gzip"}
#: deltalake's valid compression levels (`Compression.get_level_range`)
_LEVELS = {"gzip": (0, 10), "brotli": (0, 11), "zstd": (1, 22)}
_STATISTICS = ("NONE", "CHUNK", "PAGE")
_ENCODINGS = ("PLAIN", "RLE", "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
              "BYTE_STREAM_SPLIT")
DEFAULT_MAX_ROW_GROUP_SIZE = 1024 * 1024  # rows


@dataclass
class BloomFilterProperties:
    """A Parquet bloom filter for a column: `fpp` (false-positive probability) and `ndv` (distinct values)."""

    set_bloom_filter_enabled: bool | None
    fpp: float | None = None
    ndv: int | None = None

    def __post_init__(self) -> None:
        if self.fpp is not None and not 0 < self.fpp < 1:
            raise ValueError("fpp must be between 0 and 1 exclusive")
        if self.ndv is not None and self.ndv <= 0:
            raise ValueError("ndv must be greater than zero")

    def pyarrow_options(self) -> dict[str, Any] | bool:
        opts: dict[str, Any] = {}
        if self.fpp is not None:
            opts["fpp"] = float(self.fpp)
        if self.ndv is not None:
            opts["ndv"] = int(self.ndv)
        return opts or True


@dataclass
class ColumnProperties:
    """Per-column Parquet settings: dictionary encoding, statistics level ("NONE"/"CHUNK"/"PAGE"), bloom
    filter, and a non-dictionary `encoding`."""

    dictionary_enabled: bool | None = None
    statistics_enabled: str | None = None
    bloom_filter_properties: BloomFilterProperties | None = None
    encoding: str | None = None

    def __post_init__(self) -> None:
        if self.statistics_enabled is not None:
            self.statistics_enabled = str(self.statistics_enabled).upper()
            if self.statistics_enabled not in _STATISTICS:
                raise ValueError(f"statistics_enabled must be one of {_STATISTICS}, got {self.statistics_enabled!r}")
        if self.encoding is not None:
            self.encoding = str(self.encoding).upper()
            if self.encoding not in _ENCODINGS:
                raise ValueError(f"{self.encoding} is not a valid Encoding. Valid values are: {list(_ENCODINGS)}")
            if self.dictionary_enabled:
                raise ValueError("Cannot specify dictionary_enabled=True and encoding")

    @classmethod
    def coerce(cls, props: Any) -> ColumnProperties | None:
        """Ours as is; a `deltalake.ColumnProperties` attribute by attribute."""
        if props is None or isinstance(props, cls):
            return props
        bloom = getattr(props, "bloom_filter_properties", None)
        if bloom is not None and not isinstance(bloom, BloomFilterProperties):
            bloom = BloomFilterProperties(getattr(bloom, "set_bloom_filter_enabled", None),
                                          getattr(bloom, "fpp", None), getattr(bloom, "ndv", None))
        return cls(getattr(props, "dictionary_enabled", None), getattr(props, "statistics_enabled", None), bloom,
                   getattr(props, "encoding", None))


@functools.cache
def _decimals_as_integers() -> bool:
    """Whether this pyarrow can store decimals as integers (`store_decimal_as_integer`, pyarrow >= 18)."""
    import pyarrow.parquet as pq

    return "store_decimal_as_integer" in inspect.signature(pq.ParquetWriter.__init__).parameters


@dataclass
class WriterProperties:
    """Parquet writer options, with deltalake's `WriterProperties` names and positional order.

    `compression` takes deltalake's names ("ZSTD", "SNAPPY", ..., also "ZSTD(3)"); `dictionary_enabled`,
    `statistics_enabled` and `write_page_index` are deltakernel's table-wide switches (column properties
    override them per column).
    """

    data_page_size_limit: int | None = None
    dictionary_page_size_limit: int | None = None
    data_page_row_count_limit: int | None = None
    write_batch_size: int | None = None
    max_row_group_size: int = DEFAULT_MAX_ROW_GROUP_SIZE
    compression: str | None = None  # None: snappy (deltalake's default)
    compression_level: int | None = None
    statistics_truncate_length: int | None = None
    default_column_properties: ColumnProperties | None = None
    column_properties: dict[str, ColumnProperties] | None = None
    dictionary_enabled: bool = True
    statistics_enabled: bool = True
    write_page_index: bool = False

    def __post_init__(self) -> None:
        if self.max_row_group_size is None:
            self.max_row_group_size = DEFAULT_MAX_ROW_GROUP_SIZE
        n = self.statistics_truncate_length
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValueError(f"statistics_truncate_length must be a positive integer or None, got {n!r} "
                             "(None keeps the default of 32 characters)")
        if self.compression is None:
            if self.compression_level is not None:
                raise ValueError("Providing a compression level without the compression type is not possible, "
                                 "please provide the compression as well.")
            self.compression = "SNAPPY"
        text = str(self.compression).strip()
        if "(" in text:  # "ZSTD(3)"
            text, _, level = text.partition("(")
            if self.compression_level is None:
                self.compression_level = int(level.rstrip(") "))
        self.compression = text.strip().upper()
        codec = self.codec()
        if self.compression_level is not None and codec in _LEVELS:
            lo, hi = _LEVELS[codec]
            if not lo <= self.compression_level <= hi:
                raise ValueError(f"Compression level for {codec.upper()} should fall between {lo}-{hi}")
        self.default_column_properties = ColumnProperties.coerce(self.default_column_properties)
        if self.column_properties:
            self.column_properties = {str(k): c for k, c in
                                      ((k, ColumnProperties.coerce(v)) for k, v in self.column_properties.items())
                                      if c is not None}

    @classmethod
    def coerce(cls, props: Any) -> WriterProperties:
        """Ours as is; anything else (e.g. `deltalake.WriterProperties`) read attribute by attribute."""
        if props is None:
            return cls()
        if isinstance(props, cls):
            return props
        kwargs: dict[str, Any] = {}
        for name in ("compression_level", "max_row_group_size", "write_batch_size", "data_page_size_limit",
                     "dictionary_page_size_limit", "data_page_row_count_limit", "statistics_truncate_length"):
            value = getattr(props, name, None)
            if value is not None:
                kwargs[name] = int(value)
        comp = getattr(props, "compression", None)
        if comp is not None:
            kwargs["compression"] = str(comp)
            if "(" in str(comp):
                kwargs.pop("compression_level", None)
        kwargs["default_column_properties"] = getattr(props, "default_column_properties", None)
        kwargs["column_properties"] = getattr(props, "column_properties", None)
        return cls(**kwargs)

    def stats_string_prefix(self) -> int:
        """Characters kept of string min/max in the Delta statistics (`statistics_truncate_length`, else 32)."""
        n = self.statistics_truncate_length
        return DEFAULT_STRING_PREFIX_LENGTH if n is None else int(n)

    def codec(self) -> str:
        name = str(self.compression).strip().lower()
        name = _COMPRESSION_ALIASES.get(name, name)
        if name not in COMPRESSION_EXTENSIONS:
            raise ValueError(f"unsupported Parquet compression {self.compression!r}")
        return name

    # ------------------------------------------------------------------ pyarrow options
    def _column(self, logical: str) -> ColumnProperties | None:
        """The most specific column properties naming `logical` (a dotted leaf path) or a parent of it."""
        best: tuple[int, ColumnProperties] | None = None
        low = logical.lower()
        for key, props in (self.column_properties or {}).items():
            k = key.lower()
            if (low == k or low.startswith(k + ".")) and (best is None or len(k) > best[0]):
                best = (len(k), props)
        return best[1] if best else None

    def _setting(self, logical: str, attr: str) -> Any:
        for props in (self._column(logical), self.default_column_properties):
            value = getattr(props, attr, None) if props is not None else None
            if value is not None:
                return value
        return None

    def parquet_options(self, layout: Any = None) -> dict[str, Any]:
        """pyarrow `ParquetWriter` keywords; per-column settings need `layout` (`files/layout.Layout`)."""
        opts: dict[str, Any] = {
            "compression": self.codec(),
            "use_dictionary": self.dictionary_enabled,
            "write_statistics": self.statistics_enabled,
            "coerce_timestamps": "us",
            "use_deprecated_int96_timestamps": False,
            "allow_truncated_timestamps": False,
            "write_page_index": self.write_page_index,
        }
        if _decimals_as_integers():
            # Decimals of precision <= 18 as INT32 / INT64, as Spark (parquet-mr) and parquet-rs write them: Arrow's
            # default FIXED_LEN_BYTE_ARRAY decodes ~1.8x slower (TPC-H Q6 over lineitem), and every Delta reader
            # reads both
            opts["store_decimal_as_integer"] = True
        if self.compression_level is not None and opts["compression"] not in ("snappy", "none", "lz4"):
            opts["compression_level"] = self.compression_level
        if self.write_batch_size is not None:
            opts["write_batch_size"] = self.write_batch_size
        if self.data_page_size_limit is not None:
            opts["data_page_size"] = self.data_page_size_limit
        if self.dictionary_page_size_limit is not None:
            opts["dictionary_pagesize_limit"] = self.dictionary_page_size_limit
        if self.data_page_row_count_limit is not None:
            opts["max_rows_per_page"] = self.data_page_row_count_limit
        if self.statistics_truncate_length is not None:
            logger.debug("statistics_truncate_length=%s applies to the Delta statistics only: pyarrow's "
                         "Parquet writer has no truncation option", self.statistics_truncate_length)
        if (self.column_properties or self.default_column_properties) and layout is not None:
            self._column_options(opts, layout)
        return opts

    def _column_options(self, opts: dict[str, Any], layout: Any) -> None:
        from .layout import parquet_column_paths

        physical = parquet_column_paths(layout.physical_arrow)
        logical = parquet_column_paths(layout.logical_arrow)
        if len(logical) != len(physical):
            logical = physical
        dictionary, statistics, encodings, blooms = [], [], {}, {}
        page_index = False
        for lpath, ppath in zip(logical, physical):
            lname = _logical_name(lpath)
            dict_on = self._setting(lname, "dictionary_enabled")
            encoding = self._setting(lname, "encoding")
            if encoding is not None and dict_on is not True:
                encodings[ppath] = encoding
            elif dict_on if dict_on is not None else self.dictionary_enabled:
                dictionary.append(ppath)
            stats = self._setting(lname, "statistics_enabled")
            if stats != "NONE" and (stats is not None or self.statistics_enabled):
                statistics.append(ppath)
            page_index = page_index or stats == "PAGE"
            bloom = self._setting(lname, "bloom_filter_properties")
            if bloom is not None and bloom.set_bloom_filter_enabled:
                blooms[ppath] = bloom.pyarrow_options()
        opts["use_dictionary"] = True if len(dictionary) == len(physical) else dictionary
        opts["write_statistics"] = True if len(statistics) == len(physical) else statistics
        if page_index:
            opts["write_page_index"] = True
        if encodings:
            opts["column_encoding"] = encodings
        if blooms:
            opts["bloom_filter_options"] = blooms


def _logical_name(parquet_path: str) -> str:
    """`l.list.element.x` / `m.key_value.value` -> the Delta path `l.x` / `m` used to name columns."""
    parts = parquet_path.split(".")
    out: list[str] = []
    i = 0
    while i < len(parts):
        if parts[i] in ("list", "key_value") and i + 1 < len(parts) and parts[i + 1] in ("element", "key", "value"):
            i += 2
            continue
        out.append(parts[i])
        i += 1
    return ".".join(out)


__all__ = ["COMPRESSION_EXTENSIONS", "BloomFilterProperties", "ColumnProperties", "WriterProperties"]
