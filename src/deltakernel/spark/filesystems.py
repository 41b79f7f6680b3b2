"""Whether Spark's JVM has a Hadoop filesystem for a table's storage (S3A jars for s3://, ...).

Reads and writes both ask (`reader.py`: native plan or the Python data source; `native_write.py`: Spark's
Parquet writer or mapInArrow); without one, the table goes through the kernel's own storage and a warning says so
once per scheme.
"""

from __future__ import annotations

import logging
from typing import Any

from ..storage.local import LocalStorage
from ._schema import spark_path
from .session import is_connect

_log = logging.getLogger(__name__)
_WARNED: set[str] = set()
_CONNECT_SCHEMES: dict[tuple[str, str], bool] = {}


def hadoop_can_read(spark: Any, storage: Any) -> bool:
    """Whether Spark's JVM has a Hadoop filesystem for the table's scheme (S3A jars for s3://, ...).

    Without one, the table is still read and written through the kernel's own storage (Python data source,
    mapInArrow); a warning says so once per scheme."""
    if isinstance(storage, LocalStorage):
        return True
    scheme = spark_path(storage, "").split("://", 1)[0]
    try:
        if is_connect(spark):
            return _connect_can_read(spark, storage, scheme)
        jvm = spark._jvm
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, spark._jsc.hadoopConfiguration())
        return True
    except Exception:
        if scheme not in _WARNED:
            _WARNED.add(scheme)
            _log.warning("deltakernel: Spark has no Hadoop filesystem for %s:// (e.g. the S3A jars for s3); "
                         "Delta tables there are read and written through deltakernel's own storage "
                         "(Python data source / mapInArrow), not Spark's native Parquet path", scheme)
        return False


def _connect_can_read(spark: Any, storage: Any, scheme: str) -> bool:
    """Over Spark Connect the server's JVM cannot be asked directly: analyse a text read of the table's log
    directory once per (server session, scheme); only a missing filesystem class means no (raised as such)."""
    key = (str(getattr(spark, "session_id", "")), scheme)
    if key not in _CONNECT_SCHEMES:
        try:
            spark.read.format("text").load(spark_path(storage, "_delta_log")).schema  # noqa: B018 (an RPC)
            _CONNECT_SCHEMES[key] = True
        except Exception as e:
            text = str(e)
            _CONNECT_SCHEMES[key] = not ("No FileSystem for scheme" in text or "UnsupportedFileSystemException" in
                                         text or ("ClassNotFoundException" in text and "FileSystem" in text))
    if not _CONNECT_SCHEMES[key]:
        raise RuntimeError(f"no Hadoop filesystem for {scheme}")
    return True


__all__ = ["hadoop_can_read"]
