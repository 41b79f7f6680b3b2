"""Small pieces every part of the Spark engine shares: `schema.py` (Arrow / Spark schemas, option helpers, table
URIs), `task_errors.py` (deltakernel errors raised in Spark tasks re-raised typed on the driver; PySpark's call-site
capture off per thread while deltakernel plans), `error_classes.py` (delta-spark's `[DELTA_*]` error classes and
Spark setting names), `time_bounds.py` (delta-spark's time-travel bounds), `geo_types.py` (which geospatial
columns Spark sees as its GEOMETRY / GEOGRAPHY types; Spark's values back to WKB for writes)."""
