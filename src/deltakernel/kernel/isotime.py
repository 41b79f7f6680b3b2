"""ISO-8601 timestamps parsed the same on every supported Python.

Why: `datetime.fromisoformat` grew on Python 3.11 - a trailing `Z`, any number of fractional digits (`.5`,
`.1234567`, truncated past microseconds), offsets without a colon (`+0530`, `+05`). On 3.10 the same strings raise
`ValueError`, so a filter value like `'2021-01-01 00:00:00.5'`, a statistic or a time-travel timestamp that 3.11
accepts was refused or read as "unknown" there. `parse_datetime` rewrites those forms into the subset 3.10 accepts
and returns what 3.11's `fromisoformat` returns; on 3.11+ it is `fromisoformat` itself. Callers keep their own
handling of `ValueError` (still raised for text that is not ISO-8601 on any version).
"""

from __future__ import annotations

import datetime as dt
import re
import sys

__all__ = ["parse_datetime"]

# date, separator, time (hours, optional minutes / seconds / fraction), optional offset
_ISO = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:(?P<sep>[T ])(?P<hms>\d{2}(?::\d{2}(?::\d{2})?)?)(?:[.,](?P<frac>\d+))?"
    r"(?P<off>[Zz]|[+-]\d{2}(?::?\d{2}(?::?\d{2}(?:\.\d{1,6})?)?)?)?)?\Z")


def _normalize(text: str) -> str:
    """3.11's extended forms rewritten into the forms 3.10's `fromisoformat` accepts (others unchanged)."""
    m = _ISO.match(text)
    if m is None or m.group("sep") is None:
        return text
    out = f"{m.group('date')}{m.group('sep')}{m.group('hms')}"
    frac = m.group("frac")
    if frac is not None:
        if m.group("hms").count(":") < 2:
            return text  # a fraction needs seconds: let fromisoformat refuse it
        out += "." + (frac + "000000")[:6]
    off = m.group("off")
    if off:
        if off in ("Z", "z"):
            off = "+00:00"
        else:
            sign, digits = off[0], off[1:].replace(":", "")
            hhmm = digits[:4].ljust(4, "0")
            off = f"{sign}{hhmm[:2]}:{hhmm[2:]}" + (f":{digits[4:6]}{digits[6:]}" if len(digits) > 4 else "")
        out += off
    return out


def parse_datetime(text: str) -> dt.datetime:
    """`datetime.fromisoformat` with Python 3.11's accepted forms on every version; ValueError when not ISO-8601."""
    if sys.version_info >= (3, 11):
        return dt.datetime.fromisoformat(text)
    return dt.datetime.fromisoformat(_normalize(text))
