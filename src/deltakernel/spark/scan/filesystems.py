"""Whether Spark's JVM has a Hadoop filesystem for a table's storage (S3A jars for s3://, ...).

Reads and writes both ask (`reader.py`: native plan or the Python data source; `native_write.py`: Spark's
Parquet writer or mapInArrow); without one, the table goes through the kernel's own storage and a warning says so
once per scheme.
"""

from __future__ import annotations

import logging
from typing import Any

from ...storage.local import LocalStorage
from ..common.schema import spark_path
from ..kinds import kind_of

_log = logging.getLogger(__name__)
_WARNED: set[str] = set()


def hadoop_can_read(spark: Any, storage: Any) -> bool:
    """Whether Spark's JVM has a Hadoop filesystem for the table's scheme (S3A jars for s3://, ...).

    Without one, the table is still read and written through the kernel's own storage (Python data source,
    mapInArrow); a warning says so once per scheme."""
    if isinstance(storage, LocalStorage):
        return True
    scheme = spark_path(storage, "").split("://", 1)[0]
    try:
        if kind_of(spark).sources.has_hadoop_filesystem(scheme, spark_path(storage, "_delta_log")):
            return True
        raise RuntimeError(f"no Hadoop filesystem for {scheme}")
    except Exception:
        if scheme not in _WARNED:
            _WARNED.add(scheme)
            _log.warning("deltakernel: Spark has no Hadoop filesystem for %s:// (e.g. the S3A jars for s3); "
                         "Delta tables there are read and written through deltakernel's own storage "
                         "(Python data source / mapInArrow), not Spark's native Parquet path", scheme)
        return False


__all__ = ["hadoop_can_read"]
