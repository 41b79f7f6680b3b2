"""One SparkSession for every Spark test (local[2], 2 shuffle partitions); skipped without pyspark/Java."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(shutil.which("java")) or bool(home and (Path(home) / "bin" / "java").exists())


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    if not _java_available():
        pytest.skip("Java is not installed")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import deltakernel.spark as dks

    session = (
        SparkSession.builder.master("local[2]")
        .appName("deltakernel-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    dks.enable(session)
    yield session
    session.stop()
