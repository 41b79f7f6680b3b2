"""Geospatial filters for the embedded API: `intersects(column, bbox)`.

Why a predicate object and not a string: deltalake's tuple filters have no spatial operator, and pyarrow
expressions cannot be inspected for skipping. `intersects` returns a kernel predicate that `DeltaTable`'s
`filters=` accepts as is, alone or combined with others (`deltakernel.kernel.expressions.predicate.And`):

    from deltakernel import DeltaTable
    from deltakernel.geo import intersects
    DeltaTable(path).to_pyarrow_table(filters=intersects("geom", (-10.0, 35.0, 30.0, 60.0)))

Semantics (exact, documented): a row is kept when its geometry's bounding box meets the box
(xmin, ymin, xmax, ymax) - PostGIS's `&&`, the bounding-box stage of `ST_Intersects`; refine with a
geometry library when exact intersection matters. NULL geometries are not kept, empty ones never meet a box.
A box with xmin > xmax wraps across the antimeridian ([xmin, +inf) and (-inf, xmax] in x). Files are skipped
with the geometry bounding-box statistics (`minValues`/`maxValues` WKT points), only where they provably
miss the box. Only `geometry(<crs>)` columns: on `geography` columns edges are geodesics, which a planar
box test would get wrong, so the filter is refused (InvalidFilterError).
"""

from __future__ import annotations

from collections.abc import Sequence

from .kernel.expressions.predicate import Column, GeoIntersects
from .kernel.geo.bbox import check_box


def intersects(column: str | Sequence[str], bbox: Sequence[float]) -> GeoIntersects:
    """Rows whose geometry's bounding box meets `bbox` = (xmin, ymin, xmax, ymax); see the module doc."""
    path = tuple(column.split(".")) if isinstance(column, str) else tuple(column)
    return GeoIntersects(Column(path), check_box(tuple(bbox)))  # type: ignore[arg-type]


__all__ = ["intersects"]
