"""Parquet writer options with deltalake's `WriterProperties` names, mapped onto pyarrow's writer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_EXTENSIONS = {"snappy": "snappy.", "zstd": "zstd.", "gzip": "gz.", "brotli": "br.", "lz4": "lz4.", "none": ""}
_COMPRESSION_ALIASES = {"uncompressed": "none", "lz4_raw": "lz4", "gz": "gzip"}


@dataclass
class WriterProperties:
    """Parquet writer options, with deltalake's `WriterProperties` names."""

    compression: str = "snappy"
    compression_level: int | None = None
    max_row_group_size: int = 1024 * 1024  # rows
    write_batch_size: int | None = None
    data_page_size_limit: int | None = None
    dictionary_page_size_limit: int | None = None
    data_page_row_count_limit: int | None = None
    dictionary_enabled: bool = True
    statistics_enabled: bool = True
    write_page_index: bool = False

    @classmethod
    def coerce(cls, props: Any) -> WriterProperties:
        """Ours as is; anything else (e.g. `deltalake.WriterProperties`) read attribute by attribute."""
        if props is None:
            return cls()
        if isinstance(props, cls):
            return props
        out = cls()
        for name in ("compression_level", "max_row_group_size", "write_batch_size", "data_page_size_limit",
                     "dictionary_page_size_limit", "data_page_row_count_limit"):
            value = getattr(props, name, None)
            if value is not None:
                setattr(out, name, int(value))
        comp = getattr(props, "compression", None)
        if comp is not None:
            text = str(comp)
            if "(" in text:  # "ZSTD(3)"
                text, _, level = text.partition("(")
                out.compression_level = out.compression_level or int(level.rstrip(")"))
            out.compression = text
        return out

    def codec(self) -> str:
        name = self.compression.strip().lower()
        name = _COMPRESSION_ALIASES.get(name, name)
        if name not in _EXTENSIONS:
            raise ValueError(f"unsupported Parquet compression {self.compression!r}")
        return name

    def parquet_options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {
            "compression": self.codec(),
            "use_dictionary": self.dictionary_enabled,
            "write_statistics": self.statistics_enabled,
            "coerce_timestamps": "us",
            "use_deprecated_int96_timestamps": False,
            "allow_truncated_timestamps": False,
            "write_page_index": self.write_page_index,
        }
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
        return opts
