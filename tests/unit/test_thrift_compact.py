"""kernel/scan/thrift_compact.py: Parquet footers and page indexes decode and re-encode to the same bytes, every wire
type round-trips, and malformed bytes raise ThriftError (the page-index reader then falls back)."""

from __future__ import annotations

import pathlib
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel.kernel.scan import thrift_compact as tc


def test_footer_and_page_indexes_round_trip(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "f.parquet"
    table = pa.table({"i": pa.array(range(100), pa.int64()), "s": [f"v{i}" for i in range(100)],
                      "f": [float(i) / 3 for i in range(100)]})
    pq.write_table(table, path, row_group_size=30, write_page_index=True, data_page_size=64,
                   write_batch_size=5, use_dictionary=False)
    data = path.read_bytes()
    n = struct.unpack("<I", data[-8:-4])[0]
    footer = data[-8 - n : -8]
    meta, end = tc.read_struct(footer)
    assert end == n and tc.write_struct(meta) == footer
    assert meta[3][1] == 100 and len(meta[4][1][1]) == 4  # num_rows, row groups
    chunk = meta[4][1][1][0][1][1][1][0]  # row group 0, column 0
    for off, length in ((4, 5), (6, 7)):  # offset index, column index
        start, size = chunk[off][1], chunk[length][1]
        index, stop = tc.read_struct(data[start : start + size])
        assert stop == size and tc.write_struct(index) == data[start : start + size]
    pages = tc.read_struct(data[chunk[4][1] : chunk[4][1] + chunk[5][1]])[0][1][1][1]
    first_rows = [p[3][1] for p in pages]  # first_row_index of each page
    assert first_rows[0] == 0 and len(pages) > 1 and first_rows == sorted(first_rows)


def test_every_wire_type_round_trips() -> None:
    s: tc.Struct = {1: (tc.TRUE, True), 2: (tc.TRUE, False), 3: (3, -5), 4: (4, -300), 5: (tc.I32, 2**31 - 1),
                    6: (tc.I64, -(2**63)), 7: (7, 2.5), 8: (tc.BINARY, b"\x00\xff"),
                    9: (tc.LIST, (tc.I64, list(range(-20, 20)))), 10: (tc.LIST, (tc.TRUE, [True, False, True])),
                    11: (11, (tc.BINARY, tc.I32, [(b"k", 1), (b"l", -2)])), 40: (tc.STRUCT, {1: (tc.I32, 7)}),
                    41: (tc.LIST, (tc.STRUCT, [{2: (tc.BINARY, b"x")}] * 16))}
    again, end = tc.read_struct(tc.write_struct(s))
    assert again == s and end == len(tc.write_struct(s))


@pytest.mark.parametrize("data", [b"", b"\x15", b"\x18\x05ab", b"\x1d", b"\x19\xf5"])
def test_malformed_bytes_raise(data: bytes) -> None:
    with pytest.raises(tc.ThriftError):
        tc.read_struct(data)
