"""The kernel predicate model: the small expression AST that partition pruning and data skipping reason
about (`model.py`), and its translation from `pyarrow.compute` expressions (`pyarrow_decode.py`)."""

from __future__ import annotations

from .model import (
    COMPARISON_OPS as COMPARISON_OPS,
)
from .model import (
    EXPR_TYPES as EXPR_TYPES,
)
from .model import (
    FLIPPED as FLIPPED,
)
from .model import (
    NEGATED as NEGATED,
)
from .model import (
    AlwaysFalse as AlwaysFalse,
)
from .model import (
    AlwaysTrue as AlwaysTrue,
)
from .model import (
    And as And,
)
from .model import (
    Column as Column,
)
from .model import (
    Comparison as Comparison,
)
from .model import (
    Expr as Expr,
)
from .model import (
    GeoIntersects as GeoIntersects,
)
from .model import (
    In as In,
)
from .model import (
    IsNull as IsNull,
)
from .model import (
    Literal as Literal,
)
from .model import (
    Not as Not,
)
from .model import (
    Operand as Operand,
)
from .model import (
    Or as Or,
)
from .model import (
    arrow_expression as arrow_expression,
)
from .model import (
    coerce_literal as coerce_literal,
)
from .model import (
    conjunction as conjunction,
)
from .model import (
    from_dnf as from_dnf,
)
from .model import (
    referenced_columns as referenced_columns,
)
from .model import (
    split_conjuncts as split_conjuncts,
)
from .model import (
    to_pyarrow as to_pyarrow,
)
from .pyarrow_decode import (
    decode_pyarrow as decode_pyarrow,
)
from .pyarrow_decode import (
    from_pyarrow as from_pyarrow,
)
