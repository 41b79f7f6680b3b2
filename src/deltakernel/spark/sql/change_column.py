"""ALTER TABLE ... ALTER | CHANGE [COLUMN] on Delta tables, as delta-spark runs them (one `CHANGE COLUMN` commit).

Both session kinds take the same path: `grammar.parse_delta_statement` hands the statement text here (no Spark
parser needed), and `commands.run` runs it on the Delta table (a table that is not Delta goes to Spark).

Forms (Spark's): `ALTER TABLE t {ALTER|CHANGE} [COLUMN] c COMMENT 'x' | FIRST | AFTER b | DROP NOT NULL |
SET NOT NULL | TYPE t`, and Hive's `ALTER TABLE t CHANGE [COLUMN] c c <type> [COMMENT 'x'] [FIRST | AFTER b]`.
What delta-spark allows without type widening or column mapping is allowed: a comment, a position among the
top-level columns, `DROP NOT NULL` (widening); the same type restated. Narrowing nullability (`SET NOT NULL`)
and a type change are refused with delta-spark's class `DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP`; a new
name in the Hive form is refused (use RENAME COLUMN).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...errors import DeltaError, SchemaError, UnsupportedFeatureError
from ..common.error_classes import ALTER_CHANGE_COLUMN_OP, classed
from .syntax import Statement, TableName, Token


@dataclass(frozen=True)
class ChangeColumn(Statement):
    column: tuple[str, ...] = ()
    new_name: str | None = None
    data_type: str | None = None
    comment: str | None = None
    position: str | None = None  # "FIRST" or "AFTER <col>"
    nullable: bool | None = None  # DROP NOT NULL -> True, SET NOT NULL -> False
    default: str | None = None  # SET DEFAULT / DROP DEFAULT (refused)


_ACTIONS = ("TYPE", "COMMENT", "FIRST", "AFTER", "SET", "DROP")
_STOP = ("COMMENT", "FIRST", "AFTER")


def is_change_column(toks: list[Token], j: int) -> bool:
    """Does the ALTER TABLE statement continue at `toks[j]` with ALTER / CHANGE [COLUMN]?"""
    return (
        j < len(toks)
        and toks[j].is_kw("ALTER", "CHANGE")
        and j + 1 < len(toks)
        and toks[j + 1].kind in ("word", "quoted")
    )


def parse(p: Any, table: TableName) -> ChangeColumn:
    """The rest of `ALTER TABLE <table>` from the ALTER / CHANGE keyword (`p`: grammar's parser)."""
    hive_ok = p.at_kw("CHANGE")
    p.i += 1
    if p.at_kw("COLUMN") and (t := p.peek(1)) is not None and t.kind in ("word", "quoted"):
        p.i += 1
    column = [p.identifier()]
    while p.at_op("."):
        p.i += 1
        column.append(p.identifier())
    out: dict[str, Any] = {}
    if not p.at_kw(*_ACTIONS):
        if not hive_ok:
            p.fail("expected COMMENT, FIRST, AFTER, TYPE, SET NOT NULL or DROP NOT NULL")
        out["new_name"] = p.identifier()
        out["data_type"] = _type_text(p)
    while p.peek() is not None:
        if p.accept_kw("TYPE"):
            out["data_type"] = _type_text(p)
        elif p.accept_kw("COMMENT"):
            out["comment"] = p.string()
        elif p.accept_kw("FIRST"):
            out["position"] = "FIRST"
        elif p.accept_kw("AFTER"):
            out["position"] = "AFTER " + p.identifier()
        elif p.accept_kw("SET"):
            if p.accept_kw("DEFAULT"):
                out["default"] = "SET DEFAULT"
                while p.peek() is not None:
                    p.i += 1
                break
            p.expect_kw("NOT")
            p.expect_kw("NULL")
            out["nullable"] = False
        elif p.accept_kw("DROP"):
            if p.accept_kw("DEFAULT"):
                out["default"] = "DROP DEFAULT"
                continue
            p.expect_kw("NOT")
            p.expect_kw("NULL")
            out["nullable"] = True
        else:
            p.fail("unexpected text in ALTER TABLE ... CHANGE COLUMN")
    return ChangeColumn(table=table, text=p.text, column=tuple(column), **out)


def _type_text(p: Any) -> str:
    """The raw text of a data type: every token up to COMMENT / FIRST / AFTER or the end."""
    start = p.i
    depth = 0
    while p.peek() is not None:
        tok = p.peek()
        if depth == 0 and tok.is_kw(*_STOP):
            break
        if tok.kind == "op" and tok.text in ("<", "("):
            depth += 1
        elif tok.kind == "op" and tok.text in (">", ")"):
            depth -= 1
        p.i += 1
    if p.i == start:
        p.fail("expected a data type")
    return str(p.text[p.toks[start].start : p.toks[p.i - 1].end]).strip()


# ----------------------------------------------------------------------------- running it
_SQL_NAMES = {
    "integer": "INT",
    "long": "BIGINT",
    "short": "SMALLINT",
    "byte": "TINYINT",
    "string": "STRING",
    "boolean": "BOOLEAN",
    "double": "DOUBLE",
    "float": "FLOAT",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ",
    "binary": "BINARY",
    "variant": "VARIANT",
}


def sql_type(t: Any) -> str:
    """A Delta JSON type as Spark's `DataType.sql` prints it (what delta-spark's messages show)."""
    if isinstance(t, str):
        return _SQL_NAMES.get(t, t.upper())
    kind = t.get("type")
    if kind == "array":
        return f"ARRAY<{sql_type(t['elementType'])}>"
    if kind == "map":
        return f"MAP<{sql_type(t['keyType'])}, {sql_type(t['valueType'])}>"
    if kind == "struct":
        return "STRUCT<" + ", ".join(f"{f['name']}: {sql_type(f['type'])}" for f in t["fields"]) + ">"
    return json.dumps(t)


def _parse_type(spark: Any, text: str) -> Any:
    """A DDL type as Delta JSON, parsed by Spark (either session kind)."""
    from ..kinds import kind_of

    return kind_of(spark).types.parse_columns(f"x {text}").fields[0].dataType.jsonValue()


def _find(fields: list[dict[str, Any]], name: str, label: str) -> int:
    for i, f in enumerate(fields):
        if f["name"].lower() == name.lower():
            return i
    raise SchemaError(f"ALTER TABLE CHANGE COLUMN: no column {label!r} (columns: {[f['name'] for f in fields]})")


def _refuse(path: str, old: dict[str, Any], new: dict[str, Any]) -> DeltaError:
    def show(f: dict[str, Any]) -> str:
        return sql_type(f["type"]) + ("" if f["nullable"] else " NOT NULL")

    return DeltaError(
        classed(
            ALTER_CHANGE_COLUMN_OP,
            f"ALTER TABLE CHANGE COLUMN is not supported for changing column {path} from {show(old)} to {show(new)}",
        )
    )


def run(spark: Any, location: str, stmt: ChangeColumn) -> None:
    """Apply the change in one metadata commit (operation `CHANGE COLUMN`, delta-spark's parameters)."""
    from dataclasses import replace

    from ...kernel.transaction.transaction import Transaction
    from ...table import DeltaTable as KernelTable
    from ..api.tables import ENGINE_INFO
    from ..common.schema import table_uri

    path = ".".join(stmt.column)
    if stmt.default is not None:
        raise UnsupportedFeatureError(
            "ALTER COLUMN ... DEFAULT", f"{stmt.default} is not supported on Delta tables by deltakernel"
        )
    if stmt.new_name is not None and stmt.new_name.lower() != stmt.column[-1].lower():
        raise UnsupportedFeatureError(
            "CHANGE COLUMN rename",
            f"renaming {path} to {stmt.new_name} with CHANGE "
            "COLUMN is not supported; use ALTER TABLE ... RENAME COLUMN",
        )
    snap = KernelTable(table_uri(location)).snapshot
    schema = json.loads(snap.metadata.schema_string)
    fields: list[dict[str, Any]] = schema["fields"]
    parent = fields
    for part in stmt.column[:-1]:
        f = parent[_find(parent, part, path)]
        if not (isinstance(f["type"], dict) and f["type"].get("type") == "struct"):
            raise SchemaError(f"ALTER TABLE CHANGE COLUMN: {part!r} of {path!r} is not a struct")
        parent = f["type"]["fields"]
    idx = _find(parent, stmt.column[-1], path)
    old = parent[idx]
    new = json.loads(json.dumps(old))
    if stmt.data_type is not None:
        wanted = _parse_type(spark, stmt.data_type)
        if json.dumps(wanted, sort_keys=True) != json.dumps(old["type"], sort_keys=True):
            raise _refuse(path, old, {**old, "type": wanted})
    if stmt.nullable is not None:
        if old["nullable"] and not stmt.nullable:
            raise _refuse(path, old, {**old, "nullable": False})
        new["nullable"] = stmt.nullable or old["nullable"]
    if stmt.comment is not None:
        new.setdefault("metadata", {})["comment"] = stmt.comment
    parent[idx] = new
    if stmt.position is not None:
        parent.pop(idx)
        if stmt.position == "FIRST":
            parent.insert(0, new)
        else:
            after = stmt.position.split(" ", 1)[1]
            parent.insert(_find(parent, after, after) + 1, new)
    params: dict[str, Any] = {
        "column": json.dumps(
            {
                "name": new["name"],
                "type": new["type"],
                "nullable": new["nullable"],
                "metadata": new.get("metadata", {}),
            },
            separators=(",", ":"),
        )
    }
    if stmt.position is not None:
        params["position"] = stmt.position
    txn = Transaction(
        snap.storage, snap, operation="CHANGE COLUMN", operation_parameters=params, engine_info=ENGINE_INFO
    )
    txn.update_metadata(replace(snap.metadata, schema_string=json.dumps(schema, separators=(",", ":"))))
    txn.commit()


__all__ = ["ChangeColumn", "is_change_column", "parse", "run", "sql_type"]
