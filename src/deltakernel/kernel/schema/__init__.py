"""The Delta schema: type model, Arrow conversion, column mapping and file-to-table reconciliation."""

from .arrow import (
    VARIANT_ARROW_TYPE,
    from_arrow_field,
    from_arrow_schema,
    from_arrow_type,
    is_variant,
    to_arrow_field,
    to_arrow_schema,
    to_arrow_type,
)
from .column_mapping import (
    ColumnMappingMode,
    column_mapping_mode,
    field_id,
    logical_to_physical_names,
    physical_name,
    to_physical_arrow_schema,
    to_physical_schema,
)
from .reconcile import conform_batch, conform_table
from .types import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    parse_schema_string,
    parse_type,
    schema_to_json,
)

__all__ = [
    "VARIANT_ARROW_TYPE",
    "ArrayType",
    "ColumnMappingMode",
    "DataType",
    "DecimalType",
    "MapType",
    "PrimitiveType",
    "StructField",
    "StructType",
    "column_mapping_mode",
    "conform_batch",
    "conform_table",
    "field_id",
    "from_arrow_field",
    "from_arrow_schema",
    "from_arrow_type",
    "is_variant",
    "logical_to_physical_names",
    "parse_schema_string",
    "parse_type",
    "physical_name",
    "schema_to_json",
    "to_arrow_field",
    "to_arrow_schema",
    "to_arrow_type",
    "to_physical_arrow_schema",
    "to_physical_schema",
]
