"""Geospatial helpers the kernel needs without a geometry library: WKB bounding boxes (`wkb.py`) and
bounding-box tests that are sound across the antimeridian (`bbox.py`)."""
