"""delta-spark's `DeltaTableBuilder` (`DeltaTable.create / createIfNotExists / createOrReplace / replace`) and
`IdentityGenerator`, with delta-spark's argument checks.

The builder collects columns (`addColumn`, `addColumns(StructType | [StructField])`), partitioning or
clustering, properties and a comment, then creates the table through the kernel (path tables) or
`catalog.create` (names). Identity columns (`generatedAlwaysAs=IdentityGenerator(start, step)` or
`generatedByDefaultAs=...`) are written as delta-spark writes them: `delta.identity.start / step /
allowExplicitInsert` column metadata, which makes the protocol carry `identityColumns`; writers then generate
the values (see `spark/writing/native_write.py`). Argument errors are delta-spark's Python ones (TypeError /
ValueError with its wording); table-level errors carry its error classes (`error_classes.py`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, TypeVar

from ...errors import DeltaError, SchemaError
from ..common import error_classes as ec
from ..common.schema import table_uri

#: what `execute` returns: the Spark `DeltaTable` (tables.py hands its class in, being above this module)
TableT = TypeVar("TableT")


@dataclass
class IdentityGenerator:
    """delta-spark's identity column spec: values start at `start` and grow by `step` (non-zero)."""

    start: int = 1
    step: int = 1


def active_session(spark: Any) -> Any:
    """`spark`, else the active SparkSession of this thread (classic or Connect), as delta-spark does."""
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        try:
            from pyspark.sql.connect.session import SparkSession as RemoteSession

            session = RemoteSession.getActiveSession()
        except Exception:  # pragma: no cover - no Connect extra
            session = None
    if session is None:
        raise DeltaError("no SparkSession was given and none is active: pass one (DeltaTable.create(spark))")
    return session


def _type_error(msg: str, objs: list[Any]) -> NoReturn:
    raise TypeError(msg + "".join(f" Found {obj} with type {type(obj)}" for obj in objs))


def _columns(cols: tuple[Any, ...], what: str) -> list[str]:
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    for c in cols:
        if type(c) is not str:
            _type_error(f"{what} column must be str.", [c])
    return list(cols)


def _check_identity(gen: IdentityGenerator) -> None:
    if gen.step == 0:
        raise ValueError("Column identity generation requires step to be non-zero.")


class DeltaTableBuilder(Generic[TableT]):
    """delta-spark's `DeltaTableBuilder`: location, columns, partitioning or clustering, properties, comment.

    `table(spark, location)` opens the created table (`DeltaTable.create` passes `DeltaTable`)."""

    def __init__(self, spark: Any, mode: str, table: Callable[[Any, str], TableT]) -> None:
        self._spark = active_session(spark)
        self._mode = mode
        self._table = table
        self._location: str | None = None
        self._fields: list[dict[str, Any]] = []
        self._partitions: list[str] = []
        self._clustering: list[str] = []
        self._properties: dict[str, str] = {}
        self._comment: str | None = None
        self._name: str | None = None

    def tableName(self, identifier: str) -> DeltaTableBuilder[TableT]:
        if type(identifier) is not str:
            _type_error("Identifier must be str.", [identifier])
        self._name = identifier
        return self

    def location(self, location: str) -> DeltaTableBuilder[TableT]:
        if type(location) is not str:
            _type_error("Location must be str.", [location])
        self._location = location
        return self

    def comment(self, comment: str) -> DeltaTableBuilder[TableT]:
        if type(comment) is not str:
            _type_error("Table comment must be str.", [comment])
        self._comment = comment
        return self

    def addColumn(
        self,
        colName: str,
        dataType: Any,
        nullable: bool = True,
        generatedAlwaysAs: str | IdentityGenerator | None = None,
        generatedByDefaultAs: IdentityGenerator | None = None,
        comment: str | None = None,
    ) -> DeltaTableBuilder[TableT]:
        """One column; `generatedAlwaysAs` a SQL expression (generated column) or an IdentityGenerator
        (GENERATED ALWAYS AS IDENTITY), `generatedByDefaultAs` an IdentityGenerator (BY DEFAULT)."""
        from pyspark.sql.types import DataType, LongType

        from ..kinds import kind_of

        if type(colName) is not str:
            _type_error("Column name must be str.", [colName])
        if type(dataType) is not str and not isinstance(dataType, DataType):
            _type_error("Column data type must be str or DataType.", [dataType])
        if type(nullable) is not bool:
            _type_error("Column nullable must be bool.", [nullable])
        if generatedAlwaysAs is not None and generatedByDefaultAs is not None:
            raise ValueError(
                "generatedByDefaultAs and generatedAlwaysAs cannot both be set.",
                [generatedByDefaultAs, generatedAlwaysAs],
            )
        identity: IdentityGenerator | None = None
        explicit_insert = False
        if generatedAlwaysAs is not None:
            if isinstance(generatedAlwaysAs, IdentityGenerator):
                _check_identity(generatedAlwaysAs)
                identity = generatedAlwaysAs
            elif type(generatedAlwaysAs) is not str:
                _type_error("Generated always as expression must be str or IdentityGenerator.", [generatedAlwaysAs])
        elif generatedByDefaultAs is not None:
            if not isinstance(generatedByDefaultAs, IdentityGenerator):
                _type_error("Generated by default expression must be IdentityGenerator.", [generatedByDefaultAs])
            _check_identity(generatedByDefaultAs)
            identity, explicit_insert = generatedByDefaultAs, True
        if comment is not None and type(comment) is not str:
            _type_error("Comment must be str or None.", [colName])
        typ = dataType if isinstance(dataType, DataType) else \
            kind_of(self._spark).types.parse_columns(f"x {dataType}").fields[0].dataType
        meta: dict[str, Any] = {}
        if comment is not None:
            meta["comment"] = comment
        if isinstance(generatedAlwaysAs, str):
            meta["delta.generationExpression"] = generatedAlwaysAs
        if identity is not None:
            if not isinstance(typ, LongType):
                raise SchemaError(
                    ec.classed(
                        ec.IDENTITY_UNSUPPORTED_DATA_TYPE,
                        f"DataType {typ.simpleString()} "
                        f"is not supported for IDENTITY columns (column {colName}: use "
                        "BIGINT).",
                    )
                )
            meta["delta.identity.start"] = int(identity.start)
            meta["delta.identity.step"] = int(identity.step)
            meta["delta.identity.allowExplicitInsert"] = explicit_insert
        self._fields.append({"name": colName, "type": typ.jsonValue(), "nullable": nullable, "metadata": meta})
        return self

    def addColumns(self, cols: Any) -> DeltaTableBuilder[TableT]:
        """Columns of a StructType or of a list of StructFields (their metadata kept)."""
        from pyspark.sql.types import StructField, StructType

        if isinstance(cols, list):
            for col in cols:
                if type(col) is not StructField:
                    _type_error("Column in existing schema must be StructField.", [col])
            cols = StructType(cols)
        if type(cols) is not StructType:
            _type_error("Schema must be StructType or a list of StructField.", [cols])
        for f in cols.fields:
            self._fields.append(f.jsonValue())
        return self

    def partitionedBy(self, *cols: Any) -> DeltaTableBuilder[TableT]:
        self._partitions.extend(_columns(cols, "Partitioning"))
        return self

    def clusterBy(self, *cols: Any) -> DeltaTableBuilder[TableT]:
        """A clustered table (protocol "Clustered Table"): OPTIMIZE clusters its files by these columns."""
        self._clustering.extend(_columns(cols, "Clustering"))
        return self

    def property(self, key: str, value: str) -> DeltaTableBuilder[TableT]:
        if type(key) is not str or type(value) is not str:
            _type_error("Key and value of property must be string.", [key, value])
        self._properties[key] = value
        return self

    def _check(self) -> None:
        if self._location is None and self._name is None:
            raise DeltaError("a table needs .tableName(name) or .location(path)")
        if not self._fields:
            raise DeltaError("a table needs at least one column (addColumn)")
        if self._clustering and self._partitions:
            raise DeltaError(
                ec.classed(
                    ec.CLUSTER_BY_WITH_PARTITIONED_BY,
                    "Clustering and partitioning cannot both be specified (clusterBy and partitionedBy). "
                    "Please remove PARTITIONED BY if you want to create a Delta table with clustering.",
                )
            )
        if len(self._clustering) > ec.MAX_CLUSTERING_COLUMNS:
            raise DeltaError(
                ec.classed(
                    ec.CLUSTER_BY_INVALID_NUM_COLUMNS,
                    "CLUSTER BY supports up to "
                    f"{ec.MAX_CLUSTERING_COLUMNS} clustering columns, but the table has "
                    f"{len(self._clustering)} clustering columns. Please remove the extra "
                    "clustering columns.",
                )
            )

    def execute(self) -> TableT:
        from ...kernel.schema.types import parse_schema_string
        from ...operations.write.api import create_table
        from ...table import DeltaTable as KernelTable

        self._check()
        schema = parse_schema_string(json.dumps({"type": "struct", "fields": self._fields}))
        if self._name is not None:  # a catalog table (managed without .location): spark/catalog.py
            from ..catalog.tables import TableSpec, create, split_name

            spec = TableSpec(
                schema=schema,
                location=self._location,
                partition_by=self._partitions or None,
                cluster_by=self._clustering or None,
                properties=dict(self._properties) or None,
                comment=self._comment,
            )
            how = {"error": "create", "ignore": "ignore", "overwrite": "create_or_replace", "replace": "replace"}
            ref = create(self._spark, split_name(self._spark, self._name), spec, how[self._mode], label=self._name)
            return self._table(self._spark, ref.location)
        assert self._location is not None
        uri = table_uri(self._location)
        exists = KernelTable.is_deltatable(uri)
        if self._mode == "replace" and not exists:
            raise DeltaError(f"cannot replace: no Delta table at {self._location}")
        mode = {"error": "error", "ignore": "ignore", "overwrite": "overwrite", "replace": "overwrite"}[self._mode]
        if not (mode == "ignore" and exists):
            create_table(
                uri,
                schema,
                mode=mode,
                partition_by=self._partitions or None,
                name=self._name,
                description=self._comment,
                configuration=dict(self._properties) or None,
                cluster_by=self._clustering or None,
            )
        return self._table(self._spark, self._location)


__all__ = ["DeltaTableBuilder", "IdentityGenerator", "active_session"]
