"""Shared test helpers: canonical row comparison, the deltalake / DuckDB oracles, log surgery, Spark databases.

Import from a test module after putting `tests/` on `sys.path`:

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import helpers
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import pathlib
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

# ----------------------------------------------------------------------------- canonical rows


def canon_value(v: Any) -> Any:
    """A hashable, orderable-by-repr, engine-independent form of one Arrow Python value."""
    if v is None:
        return None
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, float):
        if math.isnan(v):
            return ("float", "nan")
        return ("float", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, decimal.Decimal):
        return ("dec", "nan" if v.is_nan() else str(v.normalize()))
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            return ("tstz", v.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat())
        return ("ts", v.isoformat())
    if isinstance(v, dt.date):
        return ("date", v.isoformat())
    if isinstance(v, (bytes, bytearray, memoryview)):
        return ("bin", bytes(v))
    if isinstance(v, str):
        return ("str", v)
    if isinstance(v, dict):
        return ("struct", tuple(sorted((k, canon_value(x)) for k, x in v.items())))
    if isinstance(v, list):
        if v and all(isinstance(i, tuple) and len(i) == 2 for i in v):  # Arrow map -> list of pairs
            return ("map", tuple(sorted(((canon_value(k), canon_value(x)) for k, x in v), key=repr)))
        return ("list", tuple(canon_value(x) for x in v))
    if isinstance(v, tuple):
        return ("tuple", tuple(canon_value(x) for x in v))
    return ("other", repr(v))


def canon_rows(table: pa.Table | pa.RecordBatchReader, columns: Sequence[str] | None = None) -> list[tuple]:
    """The table as a sorted multiset of canonical rows (column order: `columns` or sorted names)."""
    if isinstance(table, pa.RecordBatchReader):
        table = table.read_all()
    names = list(columns) if columns is not None else sorted(table.column_names)
    rows = table.select(names).to_pylist()
    out = [tuple((n, canon_value(r[n])) for n in names) for r in rows]
    out.sort(key=repr)
    return out


def assert_same_rows(actual: pa.Table, expected: pa.Table, what: str = "") -> None:
    """Same column names and the same sorted multiset of rows."""
    assert sorted(actual.column_names) == sorted(expected.column_names), (
        f"{what}: columns differ: {sorted(actual.column_names)} vs {sorted(expected.column_names)}"
    )
    assert actual.num_rows == expected.num_rows, f"{what}: {actual.num_rows} rows vs {expected.num_rows}"
    a, e = canon_rows(actual), canon_rows(expected)
    if a != e:
        diff_a = [r for r in a if r not in e][:5]
        diff_e = [r for r in e if r not in a][:5]
        raise AssertionError(f"{what}: rows differ\n only in actual: {diff_a}\n only in expected: {diff_e}")


# ----------------------------------------------------------------------------- oracles


def deltalake_table(path: str | pathlib.Path, version: int | None = None, filters: Any = None) -> pa.Table:
    """deltalake 1.x read (`to_pyarrow_dataset` honours deletion-free tables; our oracle tables have no DVs)."""
    import deltalake

    dt_ = deltalake.DeltaTable(str(path), version=version)
    ds = dt_.to_pyarrow_dataset()
    if filters is None:
        return pa.table(ds.to_table())
    import pyarrow.compute as pc

    if isinstance(filters, pc.Expression):
        return pa.table(ds.to_table(filter=filters))
    return pa.table(dt_.to_pyarrow_table(filters=filters))


_DUCKDB_CON: Any = None


def duckdb_extension_path() -> pathlib.Path:
    import duckdb_extension_delta

    base = pathlib.Path(duckdb_extension_delta.__file__).parent
    found = sorted(base.glob("extensions/*/delta.duckdb_extension"))
    if not found:
        found = sorted(base.rglob("delta.duckdb_extension"))
    if not found:
        raise FileNotFoundError(f"no delta.duckdb_extension under {base}")
    return found[-1]


def duckdb_connection() -> Any:
    """One DuckDB connection with the bundled (offline) delta extension loaded."""
    global _DUCKDB_CON
    if _DUCKDB_CON is None:
        import duckdb

        con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
        con.execute(f"LOAD '{duckdb_extension_path()}'")
        _DUCKDB_CON = con
    return _DUCKDB_CON


def duckdb_table(path: str | pathlib.Path) -> pa.Table:
    con = duckdb_connection()
    sql = "SELECT * FROM delta_scan('{}')".format(str(path).replace("'", "''"))
    res = con.execute(sql)
    fetch = getattr(res, "to_arrow_table", None) or res.fetch_arrow_table
    out = fetch()
    if isinstance(out, pa.RecordBatchReader):
        out = out.read_all()
    return out


# ----------------------------------------------------------------------------- log surgery


def log_dir(table: str | pathlib.Path) -> pathlib.Path:
    return pathlib.Path(table) / "_delta_log"


def commit_file(table: str | pathlib.Path, version: int) -> pathlib.Path:
    return log_dir(table) / f"{version:020d}.json"


def read_actions(table: str | pathlib.Path, version: int) -> list[dict[str, Any]]:
    text = commit_file(table, version).read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write_actions(table: str | pathlib.Path, version: int, actions: Iterable[dict[str, Any]]) -> pathlib.Path:
    path = commit_file(table, version)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions))
    return path


def schema_string(fields: Sequence[tuple[str, str]] | Sequence[tuple[str, str, bool]]) -> str:
    out = []
    for f in fields:
        name, typ = f[0], f[1]
        nullable = f[2] if len(f) > 2 else True  # type: ignore[misc]
        out.append({"name": name, "type": typ, "nullable": nullable, "metadata": {}})
    return json.dumps({"type": "struct", "fields": out})


def protocol_action(reader: int = 1, writer: int = 2, reader_features: list[str] | None = None,
                    writer_features: list[str] | None = None) -> dict[str, Any]:
    p: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        p["readerFeatures"] = reader_features
    if writer_features is not None:
        p["writerFeatures"] = writer_features
    return {"protocol": p}


def metadata_action(fields: Sequence[tuple[str, str]], partition_columns: Sequence[str] = (),
                    configuration: dict[str, str] | None = None, table_id: str | None = None) -> dict[str, Any]:
    return {
        "metaData": {
            "id": table_id or str(uuid.uuid4()),
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string(fields),
            "partitionColumns": list(partition_columns),
            "configuration": dict(configuration or {}),
            "createdTime": 1_700_000_000_000,
        }
    }


def add_action(path: str, size: int = 100, partition_values: dict[str, str | None] | None = None,
               stats: dict[str, Any] | None = None, deletion_vector: dict[str, Any] | None = None,
               modification_time: int = 1_700_000_000_000, data_change: bool = True) -> dict[str, Any]:
    a: dict[str, Any] = {
        "path": path,
        "partitionValues": dict(partition_values or {}),
        "size": size,
        "modificationTime": modification_time,
        "dataChange": data_change,
    }
    if stats is not None:
        a["stats"] = json.dumps(stats)
    if deletion_vector is not None:
        a["deletionVector"] = deletion_vector
    return {"add": a}


def remove_action(path: str, deletion_vector: dict[str, Any] | None = None, timestamp: int = 1_700_000_000_001,
                  data_change: bool = True, partition_values: dict[str, str | None] | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"path": path, "deletionTimestamp": timestamp, "dataChange": data_change}
    if partition_values is not None:
        r["partitionValues"] = dict(partition_values)
    if deletion_vector is not None:
        r["deletionVector"] = deletion_vector
    return {"remove": r}


def commit_info(op: str = "WRITE", ts: int = 1_700_000_000_000) -> dict[str, Any]:
    return {"commitInfo": {"timestamp": ts, "operation": op, "operationParameters": {}}}


def write_data_file(table: str | pathlib.Path, name: str, data: pa.Table | dict[str, list[Any]]) -> int:
    """Write a tiny real Parquet file under the table root; returns its size in bytes."""
    if not isinstance(data, pa.Table):
        data = pa.table(data)
    path = pathlib.Path(table) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, path)
    return path.stat().st_size


def inline_dv(deleted_rows: Sequence[int]) -> dict[str, Any]:
    """An inline ('i') deletion vector descriptor (JSON form) deleting `deleted_rows`."""
    from deltakernel.kernel.deletion_vectors import DeletionVectorDescriptor, serialize_roaring_bitmap_array

    data = serialize_roaring_bitmap_array(sorted(deleted_rows))
    return DeletionVectorDescriptor.inline(data, len(set(deleted_rows))).to_dict()


_DV_STRUCT = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()), ("offset", pa.int32()),
                        ("sizeInBytes", pa.int32()), ("cardinality", pa.int64())])
_STR_MAP = pa.map_(pa.string(), pa.string())
CHECKPOINT_SCHEMA = pa.schema([
    ("txn", pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])),
    ("add", pa.struct([("path", pa.string()), ("partitionValues", _STR_MAP), ("size", pa.int64()),
                       ("modificationTime", pa.int64()), ("dataChange", pa.bool_()), ("stats", pa.string()),
                       ("tags", _STR_MAP), ("deletionVector", _DV_STRUCT), ("baseRowId", pa.int64()),
                       ("defaultRowCommitVersion", pa.int64())])),
    ("remove", pa.struct([("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_()),
                          ("extendedFileMetadata", pa.bool_()), ("partitionValues", _STR_MAP),
                          ("size", pa.int64()), ("deletionVector", _DV_STRUCT)])),
    ("metaData", pa.struct([("id", pa.string()), ("name", pa.string()), ("description", pa.string()),
                            ("format", pa.struct([("provider", pa.string()), ("options", _STR_MAP)])),
                            ("schemaString", pa.string()), ("partitionColumns", pa.list_(pa.string())),
                            ("configuration", _STR_MAP), ("createdTime", pa.int64())])),
    ("protocol", pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32()),
                            ("readerFeatures", pa.list_(pa.string())), ("writerFeatures", pa.list_(pa.string()))])),
    ("domainMetadata", pa.struct([("domain", pa.string()), ("configuration", pa.string()),
                                  ("removed", pa.bool_())])),
])


def _to_map(d: dict[str, Any] | None) -> list[tuple[str, Any]] | None:
    return None if d is None else list(d.items())


def write_classic_checkpoint(table: str | pathlib.Path, version: int, actions: Iterable[dict[str, Any]],
                             write_last_checkpoint: bool = True) -> pathlib.Path:
    """A classic `<version>.checkpoint.parquet` holding `actions` (JSON-shaped dicts, one per row)."""
    rows: list[dict[str, Any]] = []
    for a in actions:
        ((kind, body),) = a.items()
        body = dict(body)
        if kind in ("add", "remove"):
            body["partitionValues"] = _to_map(body.get("partitionValues") or {})
            if isinstance(body.get("stats"), dict):
                body["stats"] = json.dumps(body["stats"])
            if "tags" in body:
                body["tags"] = _to_map(body["tags"])
        elif kind == "metaData":
            body["configuration"] = _to_map(body.get("configuration") or {})
            fmt = dict(body.get("format") or {"provider": "parquet"})
            fmt["options"] = _to_map(fmt.get("options") or {})
            body["format"] = fmt
        rows.append({kind: body})
    t = pa.Table.from_pylist(rows, schema=CHECKPOINT_SCHEMA)
    path = log_dir(table) / f"{version:020d}.checkpoint.parquet"
    pq.write_table(t, path)
    if write_last_checkpoint:
        (log_dir(table) / "_last_checkpoint").write_text(json.dumps({"version": version, "size": len(rows)}))
    return path


def make_dml_table(path: pathlib.Path, kind: str, data: Any, configuration: dict[str, str] | None = None) -> None:
    """The DML differential tests' starting table: three appends of `data(30, offset)` — written by deltalake
    (plain, `partitioned` / `checkpointed` by `p`), or by deltakernel for `column_mapped` (unpartitioned: DuckDB's
    delta extension reads mapped partition columns as NULL). Copied before each engine's run, so both start
    from the same bytes."""
    import deltalake

    from deltakernel import write_deltalake

    conf = dict(configuration or {})
    parts = ["p"] if kind in ("partitioned", "checkpointed") else None
    for i in range(3):
        first = i == 0
        if kind == "column_mapped":
            write_deltalake(str(path), data(30, 30 * i), mode="append", partition_by=parts,
                            configuration={**conf, "delta.columnMapping.mode": "name"} if first else None)
        else:
            deltalake.write_deltalake(str(path), data(30, 30 * i), mode="append", partition_by=parts,
                                      configuration=conf if first else None)
    if kind == "checkpointed":
        deltalake.DeltaTable(str(path)).create_checkpoint()


def dml_data(n: int, offset: int = 0, schema: pa.Schema | None = None, s_stride: int = 1) -> pa.Table:
    """The DML tests' rows: id, p (a/b/c), v (double, NULL every 7th), s (string, NULL every 5th)."""
    rng = range(offset, offset + n)
    return pa.table({
        "id": pa.array(list(rng), pa.int64()),
        "p": [["a", "b", "c"][i % 3] for i in rng],
        "v": pa.array([None if i % 7 == 0 else i * 1.5 for i in rng], pa.float64()),
        "s": [None if i % 5 == 0 else f"s{(i * s_stride) % 11}" for i in rng],
    }, schema=schema)


def referenced_files(path: str | pathlib.Path) -> set[str]:
    """Every data, change data and DV file (relative path) any commit of the table's JSON log references."""
    from urllib.parse import unquote

    from deltakernel.kernel.deletion_vectors import DeletionVectorDescriptor

    out = set()
    for log in sorted((pathlib.Path(path) / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            for kind in ("add", "remove", "cdc"):
                if kind in action:
                    out.add(unquote(action[kind]["path"]))
                    dv = action[kind].get("deletionVector")
                    if dv and dv["storageType"] == "u":
                        out.add(DeletionVectorDescriptor.from_dict(dv).relative_key())
    return out


# ----------------------------------------------------------------------------- Spark


@contextmanager
def spark_database(spark: Any, location: str | pathlib.Path, prefix: str = "dk_") -> Iterator[str]:
    """A fresh database (`prefix` and a random suffix) whose location is `location`, so its managed tables live
    there; dropped with its tables afterwards."""
    name = prefix + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE DATABASE {name} LOCATION '{location}'")
    try:
        yield name
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")


def skipping_file(i: int, rows: int = 50) -> pa.Table:
    """File `i` of the Spark skipping tables (classic and Connect): ids `[i * rows, (i + 1) * rows)`, a string, a
    timestamp, a date and a decimal rising with the id (so min/max stats rule files out), a column that is null in
    file 5 only, and a partition `part` = `p{i % 4}`."""
    ids = list(range(i * rows, (i + 1) * rows))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([f"k{x:06d}" for x in ids]),
        "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(hours=x) for x in ids],
                       pa.timestamp("us", tz="UTC")),
        "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=x) for x in ids], pa.date32()),
        "dec": pa.array([decimal.Decimal(x) / 100 for x in ids], pa.decimal128(12, 2)),
        "n": pa.array([None if i == 5 else x for x in ids], pa.int64()),
        "part": pa.array([f"p{i % 4}"] * rows),
    })
