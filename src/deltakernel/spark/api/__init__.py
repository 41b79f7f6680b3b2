"""delta-spark's user API on Spark: `DeltaTable` (`tables.py`), `DeltaTableBuilder` / `IdentityGenerator`
(`builder.py`) and `df.writeTo(...)` for Delta tables (`writer_v2.py`). The same code serves both session kinds."""
