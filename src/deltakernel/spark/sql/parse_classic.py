"""The statement parser of classic sessions: Spark's own parsed plan (through py4j) read into the one statement
model (`statements.py`).

`plans.parse_plan` gives the *unresolved* plan of the text: the statement's class (MergeIntoTable,
DeleteFromTable, CreateTable, ...), its table identifiers as name parts, its clauses and their text spans. Only
reading that plan lives here; what a statement does is the executors' (`execute_dml.py`, `execute_ddl.py`), the
same for Spark Connect sessions, whose parser (`parse_connect.py`) reads sqlglot's tree instead. A statement on
a table that is not a Delta table reads as None (Spark runs it, after the one relation rewriter, `relations.py`,
with this kind's side of it as `ClassicParser.relations`: `relations_classic.py`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...errors import UnsupportedFeatureError
from ..catalog.tables import DeltaRef, path_of, resolve
from . import plans as P
from .execute_ddl import is_delta_provider
from .grammar import DeltaSqlError, DeltaSqlSyntaxError, head
from .relations import RelationKind
from .relations_classic import ClassicRelations
from .statements import (
    AddColumns,
    AlterAction,
    AlterTable,
    Assignment,
    CreateLike,
    CreateTable,
    Delete,
    Describe,
    DropColumns,
    Insert,
    Merge,
    MergeClause,
    RenameColumn,
    SetProperties,
    ShowProperties,
    Statement,
    Truncate,
    UnsetProperties,
    Update,
)


class ClassicParser:
    """`StatementParser` of a classic session (one per routed `spark.sql` call: it keeps the call's plan)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self._text: str | None = None
        self._plan: Any = None
        self._name: str | None = None
        # the statement's Delta relations, rewritten
        self.relations: RelationKind = ClassicRelations(spark, self.plan, self.plan_name)

    def plan(self, text: str) -> Any:
        """Spark's unresolved plan of `text` (kept for the call); DeltaSqlSyntaxError when Spark cannot parse it."""
        if self._text != text:
            try:
                plan = P.parse_plan(self.spark, text)
            except P.parse_error_types() as e:
                raise DeltaSqlSyntaxError(f"syntax error: {_first_line(e)} (in: {head(text)})") from e
            self._text, self._plan, self._name = text, plan, None
        return self._plan

    def plan_name(self, text: str) -> str:
        """The node name of `text`'s plan (asked once per call: the statement kind and the relation finder ask)."""
        plan = self.plan(text)
        if self._name is None:
            self._name = P.name(plan)
        return self._name

    def parse(self, text: str) -> Statement | None:
        plan = self.plan(text)
        reader = _READERS.get(self.plan_name(text))
        return reader(self, text, plan) if reader is not None else None

    # ------------------------------------------------------------------------- helpers
    def target(self, node: Any, what: str) -> tuple[DeltaRef, str | None] | None:
        """(Delta table, alias) of a DML target node, None when it is not a Delta table."""
        alias, inner = P.unwrap_alias(node)
        if P.name(inner) == "RelationTimeTravel":
            inner_parts = P.identifier_parts(inner.relation())
            if inner_parts is not None and resolve(self.spark, inner_parts) is not None:
                raise DeltaSqlError(f"{what}: the target cannot be a time-travel version of a table")
            return None
        parts = P.identifier_parts(inner)
        ref = resolve(self.spark, parts) if parts is not None else None
        return (ref, alias) if ref is not None else None

    def expr(self, text: str, node: Any) -> str:
        return P.expr_text(self.spark, text, node)

    def opt_expr(self, text: str, node: Any) -> str | None:
        value = P.opt(node)
        return self.expr(text, value) if value is not None else None

    def assignments(self, text: str, node: Any) -> tuple[Assignment, ...]:
        return tuple((_key_parts(a.key()), self.expr(text, a.value())) for a in P.seq(node.assignments()))


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


def _key_parts(key: Any) -> tuple[str, ...]:
    """A SET target's name parts as written."""
    if P.class_name(key) == "UnresolvedAttribute":
        return tuple(str(p) for p in P.seq(key.nameParts()))
    return (str(key.sql()),)


def _no_subquery(node: Any, what: str) -> None:
    if P.seq(node.subqueries()):
        raise UnsupportedFeatureError(f"{what} with a subquery", f"{what}: subqueries in the condition are not "
                                      "supported; write it as MERGE INTO ... USING (subquery) ...")


# ----------------------------------------------------------------------------- DML
def _delete(p: ClassicParser, text: str, plan: Any) -> Delete | None:
    found = p.target(plan.table(), "DELETE")
    if found is None:
        return None
    _no_subquery(plan, "DELETE")
    cond = plan.condition()
    literal_true = P.name(cond) == "Literal" and str(cond.sql()).upper() == "TRUE"
    return Delete(found[0], found[1], None if literal_true else p.expr(text, cond))


def _update(p: ClassicParser, text: str, plan: Any) -> Update | None:
    found = p.target(plan.table(), "UPDATE")
    if found is None:
        return None
    _no_subquery(plan, "UPDATE")
    return Update(found[0], found[1], p.assignments(text, plan), p.opt_expr(text, plan.condition()))


_RELATIONS = ("UnresolvedRelation", "RelationTimeTravel", "UnresolvedTableValuedFunction")


def _source(p: ClassicParser, text: str, node: Any) -> tuple[str, str | None]:
    """MERGE's USING clause as (query text, alias)."""
    alias, inner = P.unwrap_alias(node)
    if P.name(inner) in _RELATIONS:
        s = P.relation_span(inner)
        if s is None:
            raise DeltaSqlError(f"MERGE: cannot locate the USING table in the statement (in: {head(text)})")
        if alias is None:
            parts = P.identifier_parts(inner.relation() if P.name(inner) == "RelationTimeTravel" else inner)
            alias = parts[-1] if parts else None
        return "SELECT * FROM " + text[s[0]:s[1]], alias
    query = P.query_text(p.spark, text, inner)
    if query is None:
        raise DeltaSqlError(f"MERGE: cannot locate the USING query in the statement (in: {head(text)})")
    return query, alias


_ACTIONS = {"DeleteAction": ("delete", False), "UpdateAction": ("update", False), "UpdateStarAction": ("update", True),
            "InsertAction": ("insert", False), "InsertStarAction": ("insert", True)}


def _merge(p: ClassicParser, text: str, plan: Any) -> Merge | None:
    found = p.target(plan.targetTable(), "MERGE")
    if found is None:
        return None
    source, s_alias = _source(p, text, plan.sourceTable())
    clauses: list[MergeClause] = []
    for when, actions in (("matched", plan.matchedActions()), ("not_matched", plan.notMatchedActions()),
                          ("not_matched_by_source", plan.notMatchedBySourceActions())):
        for action in P.seq(actions):
            kind = P.class_name(action)
            if kind not in _ACTIONS:
                raise DeltaSqlError(f"MERGE: unsupported WHEN {when.upper().replace('_', ' ')} action {kind}")
            verb, star = _ACTIONS[kind]
            star = star or (kind == "UpdateAction" and _flag(action, "fromStar"))
            clauses.append(MergeClause(when, verb, p.opt_expr(text, action.condition()),
                                       None if star else p.assignments(text, action) if verb != "delete" else ()))
    return Merge(found[0], found[1], source, s_alias, p.expr(text, plan.mergeCondition()), tuple(clauses),
                 schema_evolution=_flag(plan, "withSchemaEvolution"))


def _flag(node: Any, attr: str) -> bool:
    try:
        return bool(getattr(node, attr)())
    except Exception:
        return False


def _insert(p: ClassicParser, text: str, plan: Any) -> Insert | None:
    found = p.target(plan.table(), "INSERT")
    if found is None:
        return None
    if P.name(plan.table()) == "SubqueryAlias":
        raise DeltaSqlError("INSERT: the target cannot have an alias")
    spec = P.scala_map(plan.partitionSpec())
    static = tuple((k, str(P.opt(v))) for k, v in spec.items() if P.opt(v) is not None)
    if bool(plan.ifPartitionNotExists()):
        raise UnsupportedFeatureError("INSERT ... IF NOT EXISTS", "INSERT ... PARTITION (...) IF NOT EXISTS is not "
                                      "supported on Delta tables")
    replace_where = None
    criteria = P.opt(P.call(plan, "replaceCriteriaOpt"))
    overwrite = bool(plan.overwrite())
    if criteria is not None:
        if P.class_name(criteria) != "InsertReplaceWhere":
            raise UnsupportedFeatureError("INSERT ... REPLACE ON / USING", "only INSERT ... REPLACE WHERE is supported")
        replace_where = p.expr(text, criteria.cond())
        overwrite = False  # Spark marks REPLACE WHERE as an overwrite; it replaces only the matching rows
        if static:
            raise UnsupportedFeatureError("INSERT ... PARTITION ... REPLACE WHERE", "use REPLACE WHERE alone")
    query = P.query_text(p.spark, text, plan.query())
    if query is None:
        raise DeltaSqlError(f"INSERT: cannot locate the query in the statement (in: {head(text)})")
    cols = tuple(str(c) for c in P.seq(plan.userSpecifiedCols())) or None
    return Insert(found[0], query, overwrite=overwrite, columns=cols, by_name=bool(plan.byName()), static=static,
                  replace_where=replace_where)


# ----------------------------------------------------------------------------- DDL
_CHAR = ("char(", "varchar(")


def _original_sql(node: Any) -> str:
    for attr in ("originalSQL", "sql"):
        fn = getattr(node, attr, None)
        if fn is not None:
            try:
                return str(fn())
            except Exception:
                continue
    return str(node.toString())


def _field(col: Any) -> dict[str, Any]:
    """A Spark ColumnDefinition as a Delta schema field (JSON)."""
    typ: Any = json.loads(str(col.dataType().json()))
    meta: dict[str, Any] = {}
    if isinstance(typ, str) and typ.startswith(_CHAR):
        meta["__CHAR_VARCHAR_TYPE_STRING"] = typ
        typ = "string"
    comment = P.opt(col.comment())
    if comment is not None:
        meta["comment"] = str(comment)
    gen = P.opt(col.generationExpression())
    if gen is not None:
        meta["delta.generationExpression"] = _original_sql(gen)
    default = P.opt(col.defaultValue())
    if default is not None:
        meta["CURRENT_DEFAULT"] = _original_sql(default)
    ident = P.opt(col.identityColumnSpec())
    if ident is not None:
        meta["delta.identity.start"] = int(ident.getStart())
        meta["delta.identity.step"] = int(ident.getStep())
        meta["delta.identity.allowExplicitInsert"] = bool(ident.isAllowExplicitInsert())
    return {"name": str(col.name()), "type": typ, "nullable": bool(col.nullable()), "metadata": meta}


def _partitioning(plan: Any) -> tuple[list[str], list[str]]:
    """(PARTITIONED BY columns, CLUSTER BY columns) of a create plan."""
    parts: list[str] = []
    cluster: list[str] = []
    for t in P.seq(plan.partitioning()):
        kind = str(t.name()).lower()
        refs = [".".join(str(x) for x in r.fieldNames()) for r in t.references()]
        if kind == "identity":
            parts.extend(refs)
        elif kind in ("cluster_by", "clusterby"):
            cluster.extend(refs)
        else:
            raise UnsupportedFeatureError(f"{kind} partitioning", f"PARTITIONED BY {t.toString()}: Delta tables are "
                                          "partitioned by columns only")
    return parts, cluster


def _options(spec_node: Any) -> dict[str, str]:
    """OPTIONS (k 'v') of a table spec (an OptionList of literal expressions in Spark 4)."""
    out: dict[str, str] = {}
    for pair in P.seq(spec_node.optionExpression().options()):
        value = pair._2()
        out[str(pair._1())] = str(value.value() if P.name(value) == "Literal" else value.sql())
    return out


def _schema(fields: list[dict[str, Any]]) -> Any:
    from ...kernel.schema.types import parse_schema_string

    return parse_schema_string(json.dumps({"type": "struct", "fields": fields}))


def _create(p: ClassicParser, text: str, plan: Any) -> CreateTable | None:
    kind = P.name(plan)
    spec_node = plan.tableSpec()
    provider = P.opt(spec_node.provider())
    parts = P.identifier_parts(plan.name())
    if parts is None:
        return None
    # CREATE TABLE delta.`/p` (...) without USING is a Delta path table
    if not is_delta_provider(p.spark, provider) and not (path_of(parts) is not None and provider is None):
        return None
    if P.opt(spec_node.serde()) is not None:
        raise UnsupportedFeatureError("STORED AS / ROW FORMAT", "Hive storage clauses do not apply to Delta tables")
    location = P.opt(spec_node.location())
    if location is None and _flag(spec_node, "external"):  # Spark's analyzer refuses it (delta-spark too)
        raise DeltaSqlError(f"CREATE EXTERNAL TABLE must be accompanied by LOCATION (in: {head(text)})")
    comment = P.opt(spec_node.comment())
    partition_by, cluster_by = _partitioning(plan)
    schema = None
    if kind in ("CreateTable", "ReplaceTable"):
        fields = [_field(c) for c in P.seq(plan.columns())]
        schema = _schema(fields) if fields else None
    query = None
    if kind in ("CreateTableAsSelect", "ReplaceTableAsSelect"):
        query = P.query_text(p.spark, text, plan.query())
        if query is None:
            raise DeltaSqlError(f"cannot locate the AS SELECT query of the statement (in: {head(text)})")
    if kind.startswith("Create"):
        mode = "ignore" if bool(plan.ignoreIfExists()) else "create"
    else:
        mode = "create_or_replace" if bool(plan.orCreate()) else "replace"
    props = tuple((str(k), str(v)) for k, v in P.scala_map(spec_node.properties()).items())
    return CreateTable(tuple(parts), mode, schema=schema, query=query,
                       location=str(location) if location is not None else None, partition_by=tuple(partition_by),
                       cluster_by=tuple(cluster_by), properties=props, options=tuple(_options(spec_node).items()),
                       comment=str(comment) if comment is not None else None)


def _create_like(p: ClassicParser, text: str, plan: Any) -> CreateLike | None:
    provider = P.opt(plan.provider())
    src_parts = P.identifier_parts(plan.source())
    src = resolve(p.spark, src_parts) if src_parts is not None else None
    if not (is_delta_provider(p.spark, provider) if provider is not None else src is not None):
        return None
    parts = P.identifier_parts(plan.name())
    if parts is None:
        return None
    location = P.opt(plan.location())
    props = tuple((str(k), str(v)) for k, v in P.scala_map(plan.properties()).items())
    return CreateLike(tuple(parts), src, tuple(src_parts or ()), bool(plan.ifNotExists()),
                      str(location) if location is not None else None, props)


def _table_ref(p: ClassicParser, node: Any) -> DeltaRef | None:
    parts = P.identifier_parts(node) if node is not None else None
    return resolve(p.spark, parts) if parts is not None else None


def _truncate(p: ClassicParser, text: str, plan: Any) -> Truncate | None:
    ref = _table_ref(p, plan.table())
    return Truncate(ref) if ref is not None else None


def _added_field(col: Any) -> Any:
    """A QualifiedColType of ADD COLUMNS as a kernel field (nested `a.b.c` wrapped in its parent structs)."""
    if P.opt(col.position()) is not None:
        raise UnsupportedFeatureError("ADD COLUMNS ... FIRST / AFTER", "column positions are not supported")
    typ: Any = json.loads(str(col.dataType().json()))
    meta: dict[str, Any] = {}
    comment = P.opt(col.comment())
    if comment is not None:
        meta["comment"] = str(comment)
    if P.opt(col.default()) is not None:
        raise UnsupportedFeatureError("ADD COLUMNS ... DEFAULT", "adding a column with a DEFAULT is not supported")
    field: dict[str, Any] = {"name": str(col.colName()), "type": typ, "nullable": bool(col.nullable()),
                             "metadata": meta}
    parent = P.opt(col.path())
    for name in reversed([str(x) for x in P.seq(parent.name())] if parent is not None else []):
        field = {"name": name, "type": {"type": "struct", "fields": [field]}, "nullable": True, "metadata": {}}
    return _schema([field]).fields[0]


def _alter(p: ClassicParser, text: str, plan: Any) -> AlterTable | None:
    ref = _table_ref(p, P.call(plan, "table", "child"))
    if ref is None:
        return None
    kind = P.name(plan)
    action: AlterAction
    if kind == "AddColumns":
        action = AddColumns(tuple(_added_field(c) for c in P.seq(plan.columnsToAdd())))
    elif kind == "RenameColumn":
        action = RenameColumn(".".join(str(x) for x in P.seq(plan.column().name())), str(plan.newName()))
    elif kind == "DropColumns":
        action = DropColumns(tuple(".".join(str(x) for x in P.seq(f.name())) for f in P.seq(plan.columnsToDrop())),
                             bool(plan.ifExists()))
    elif kind == "SetTableProperties":
        action = SetProperties(tuple((str(k), str(v)) for k, v in P.scala_map(plan.properties()).items()))
    elif kind == "UnsetTableProperties":
        action = UnsetProperties(tuple(str(k) for k in P.seq(plan.propertyKeys())), bool(plan.ifExists()))
    else:
        raise UnsupportedFeatureError(f"ALTER TABLE ({kind})", f"this ALTER TABLE form is not supported on Delta "
                                      f"tables by deltakernel (in: {head(text)})")
    return AlterTable(ref, (action,))


def _describe(p: ClassicParser, text: str, plan: Any) -> Describe | None:
    ref = _table_ref(p, plan.relation())
    if ref is None:
        return None
    try:
        partition_spec = P.scala_map(plan.partitionSpec())
    except Exception:  # Spark versions whose DescribeRelation does not expose it
        partition_spec = {}
    if partition_spec:
        raise UnsupportedFeatureError("DESCRIBE ... PARTITION", "DESCRIBE of a partition is not supported")
    return Describe(ref, bool(plan.isExtended()))


def _show_properties(p: ClassicParser, text: str, plan: Any) -> ShowProperties | None:
    ref = _table_ref(p, plan.table())
    if ref is None:
        return None
    key = P.opt(plan.propertyKey())
    return ShowProperties(ref, str(key) if key is not None else None)


_READERS: dict[str, Callable[[ClassicParser, str, Any], Statement | None]] = {
    "DeleteFromTable": _delete,
    "UpdateTable": _update,
    "MergeIntoTable": _merge,
    "InsertIntoStatement": _insert,
    **dict.fromkeys(("CreateTable", "CreateTableAsSelect", "ReplaceTable", "ReplaceTableAsSelect"), _create),
    "CreateTableLike": _create_like,
    "TruncateTable": _truncate,
    **dict.fromkeys(("AddColumns", "RenameColumn", "DropColumns", "SetTableProperties", "UnsetTableProperties",
                     "AlterColumns", "ReplaceColumns", "AlterColumn"), _alter),
    "DescribeRelation": _describe,
    "ShowTableProperties": _show_properties,
}

__all__ = ["ClassicParser"]
