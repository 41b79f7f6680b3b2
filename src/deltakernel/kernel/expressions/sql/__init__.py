"""The SQL front end of the kernel: Spark SQL expression text to an immutable AST (`ast.py`, `parsing.py`),
and from there, when exact, to the kernel predicate model (`translate.py`). Evaluating the AST over Arrow
data is engine work and lives in `deltakernel.sqleval`."""

from __future__ import annotations

from .ast import (
    COMPARISONS as COMPARISONS,
)
from .ast import (
    Between as Between,
)
from .ast import (
    Binary as Binary,
)
from .ast import (
    Case as Case,
)
from .ast import (
    Cast as Cast,
)
from .ast import (
    Col as Col,
)
from .ast import (
    Func as Func,
)
from .ast import (
    InList as InList,
)
from .ast import (
    IsNull as IsNull,
)
from .ast import (
    Like as Like,
)
from .ast import (
    Lit as Lit,
)
from .ast import (
    SqlExpr as SqlExpr,
)
from .ast import (
    Unary as Unary,
)
from .ast import (
    children as children,
)
from .ast import (
    conjuncts as conjuncts,
)
from .ast import (
    referenced_columns as referenced_columns,
)
from .parsing import (
    parse_sql as parse_sql,
)
from .parsing import (
    quote_column_identifiers as quote_column_identifiers,
)
from .translate import (
    to_predicate as to_predicate,
)
from .translate import (
    to_pyarrow_filter as to_pyarrow_filter,
)
