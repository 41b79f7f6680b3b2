"""UPDATE's SET targets (`operations/dml/assignments.SetTargets`), the one resolver of the embedded and the Spark
UPDATE: quotes, case-insensitive names, nested fields, unknown and duplicated columns, IDENTITY columns."""

from __future__ import annotations

import pytest

from deltakernel.errors import ConstraintViolationError, SchemaError
from deltakernel.kernel.schema.types import PrimitiveType, StructField, StructType
from deltakernel.operations.dml.assignments import SetTargets
from deltakernel.operations.write.enforcement import IDENTITY_START, IDENTITY_STEP

LONG = PrimitiveType("long")
SCHEMA = StructType((
    StructField("id", LONG, True, {IDENTITY_START: 1, IDENTITY_STEP: 1}),
    StructField("fooBar", LONG),
    StructField("s", StructType((StructField("x", LONG),))),
    StructField("a.b", LONG),
))


def test_names_resolve_case_insensitively_without_their_quotes() -> None:
    targets = SetTargets(SCHEMA, quotes='`"')
    assert targets.resolve("FOOBAR").name == "fooBar"
    assert SetTargets(SCHEMA, quotes='`"').resolve('"fooBar"').name == "fooBar"
    assert SetTargets(SCHEMA, quotes="`").resolve("`foobar`").name == "fooBar"
    assert SetTargets(SCHEMA).resolve("a.b").name == "a.b"  # a top-level dotted name wins over nesting
    with pytest.raises(SchemaError, match="no such column"):  # Spark's keys: backticks only
        SetTargets(SCHEMA, quotes="`").resolve('"fooBar"')


def test_unknown_nested_duplicate_and_identity_targets() -> None:
    targets = SetTargets(SCHEMA, nested_hint=", e.g. with named_struct")
    with pytest.raises(SchemaError, match="no such column"):
        targets.resolve("nope")
    with pytest.raises(SchemaError, match=r"nested field 's.x'.*whole struct, e.g. with named_struct"):
        targets.resolve("s.x")
    targets.resolve("fooBar")
    with pytest.raises(SchemaError, match="assigned more than once"):
        targets.resolve("`FOOBAR`")
    with pytest.raises(ConstraintViolationError, match="IDENTITY"):
        targets.resolve("id")
