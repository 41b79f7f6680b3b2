"""Delta's interval-valued table properties (retention durations) and boolean flags."""

from __future__ import annotations

import re

DAY_MS = 86_400_000
DEFAULT_TOMBSTONE_RETENTION = "interval 1 week"  # delta.deletedFileRetentionDuration
DEFAULT_LOG_RETENTION = "interval 30 days"  # delta.logRetentionDuration


_UNIT_MS = {
    "nanosecond": 1e-6, "microsecond": 1e-3, "millisecond": 1, "second": 1000, "minute": 60_000,
    "hour": 3_600_000, "day": DAY_MS, "week": 7 * DAY_MS,
}
_INTERVAL_PART = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-z]+)")


def parse_interval_ms(text: str) -> int:
    """Delta's calendar-interval table properties ("interval 7 days", "1 week", "168 hours") in ms."""
    s = text.strip().lower()
    s = s[len("interval"):].strip() if s.startswith("interval") else s
    parts = _INTERVAL_PART.findall(s)
    if not parts or _INTERVAL_PART.sub("", s).strip():
        raise ValueError(f"not a Delta interval: {text!r}")
    total = 0.0
    for num, unit in parts:
        base = unit[:-1] if unit.endswith("s") else unit
        base = {"ms": "millisecond", "msec": "millisecond", "sec": "second", "min": "minute"}.get(base, base)
        if base not in _UNIT_MS:
            raise ValueError(f"unsupported interval unit {unit!r} in {text!r} (months/years are not allowed)")
        total += float(num) * _UNIT_MS[base]
    return int(total)


def interval_conf(conf: dict[str, str], key: str, default: str | None) -> int | None:
    raw = conf.get(key, default)
    return parse_interval_ms(raw) if raw is not None else None


def flag(conf: dict[str, str], key: str, default: bool) -> bool:
    return conf.get(key, str(default)).strip().lower() == "true"


__all__ = ["DAY_MS", "DEFAULT_LOG_RETENTION", "DEFAULT_TOMBSTONE_RETENTION", "flag", "interval_conf",
           "parse_interval_ms"]
