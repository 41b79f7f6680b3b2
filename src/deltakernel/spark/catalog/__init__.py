"""Delta tables in Spark's session catalog: `tables.py` (names -> `DeltaRef`, create / replace, saveAsTable, reads
by name, the catalog's display schema), `entry.py` (`CatalogEntry`, however it was looked up), `table_frames.py`
(the latest read plan per table and session, bounded; classic sessions' relation cache). How the catalog is asked
differs per session kind: `spark/kinds/` (`CatalogAccess`)."""
