"""`kernel.isotime.parse_datetime` gives Python 3.11's `fromisoformat` answers on every supported Python.

On 3.11+ the rewriting is checked directly: for each string 3.11 accepts, the 3.10-safe rewrite parses (with this
interpreter's `fromisoformat`) to the same value, and it only produces the forms 3.10 accepts (two-digit fields,
a 6-digit fraction, a `+HH:MM` offset). On 3.10 (tests/pythons runs this file there) `parse_datetime` itself is
compared with the expected values.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest

from deltakernel.kernel.isotime import _normalize, parse_datetime

UTC = dt.timezone.utc
CASES = {
    "2021-01-01": dt.datetime(2021, 1, 1),
    "2021-01-01 00:00:00": dt.datetime(2021, 1, 1),
    "2021-01-01T10:20": dt.datetime(2021, 1, 1, 10, 20),
    "2021-01-01 00:00:00.5": dt.datetime(2021, 1, 1, 0, 0, 0, 500000),
    "2021-01-01 00:00:00.12": dt.datetime(2021, 1, 1, 0, 0, 0, 120000),
    "2021-01-01 00:00:00.123": dt.datetime(2021, 1, 1, 0, 0, 0, 123000),
    "2021-01-01 00:00:00.123456789": dt.datetime(2021, 1, 1, 0, 0, 0, 123456),
    "2021-01-01T00:00:00Z": dt.datetime(2021, 1, 1, tzinfo=UTC),
    "2021-01-01T00:00:00.5Z": dt.datetime(2021, 1, 1, 0, 0, 0, 500000, tzinfo=UTC),
    "2021-01-01T00:00:00+0530": dt.datetime(2021, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
    "2021-01-01T00:00:00-05": dt.datetime(2021, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
    "2021-01-01T00:00:00.25+01:00": dt.datetime(2021, 1, 1, 0, 0, 0, 250000,
                                                tzinfo=dt.timezone(dt.timedelta(hours=1))),
    "2021-01-01 10:00:00,5": dt.datetime(2021, 1, 1, 10, 0, 0, 500000),
}
# the offset / fraction forms Python 3.10's fromisoformat accepts
_PY310 = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}(:\d{2}(:\d{2}(\.\d{6})?)?)?([+-]\d{2}:\d{2})?)?")


@pytest.mark.parametrize("text", sorted(CASES))
def test_parse_datetime_gives_the_3_11_value(text):
    assert parse_datetime(text) == CASES[text]
    rewritten = _normalize(text)
    assert _PY310.fullmatch(rewritten), rewritten
    assert dt.datetime.fromisoformat(rewritten) == CASES[text]


@pytest.mark.parametrize("text", ["", "yesterday", "2021-13-01", "2021-01-01 25:00:00",
                                  "2021-01-01T00:00:00+5"])
def test_not_iso_raises_value_error(text):
    with pytest.raises(ValueError):
        parse_datetime(text)


def test_filter_with_short_fraction(tmp_path):
    """The value 3.10 refused: a timestamp_ntz filter with one fractional digit."""
    import pyarrow as pa

    from deltakernel import DeltaTable, write_deltalake

    ts = [dt.datetime(2021, 1, 1, 0, 0, 0, 500000), dt.datetime(2021, 1, 2)]
    write_deltalake(str(tmp_path), pa.table({"id": [1, 2], "tn": pa.array(ts, pa.timestamp("us"))}))
    got = DeltaTable(str(tmp_path)).to_pyarrow_table(filters=[("tn", "=", "2021-01-01 00:00:00.5")])
    assert got.column("id").to_pylist() == [1]
