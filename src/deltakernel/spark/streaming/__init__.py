"""Spark Structured Streaming with Delta tables: the streaming source (`source.py`, planned by `log_walk.py`
with delta-spark's offsets in `offsets.py`) and the exactly-once sink (`sink.py`)."""
