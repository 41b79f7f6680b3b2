"""Spark tests run on both session kinds: a classic SparkSession (py4j) and a Spark Connect session.

One JVM serves both: the classic session (local[2], 2 shuffle partitions) starts with Spark's Connect server
plugin on a free loopback port, and the Connect session is a gRPC client of that server in this process - so the
suite pays for one Spark start. `spark` is parametrized over the two kinds; a test that cannot run over Connect
carries `@pytest.mark.classic_only("why")` (a module: `pytestmark`) and is skipped there with that reason.
`classic_spark` / `connect_spark` give one kind. Skipped without pyspark/Java; Connect cases are skipped when
pyspark's connect extra (grpcio) is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KINDS = ("classic", "connect")


def _java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(shutil.which("java")) or bool(home and (Path(home) / "bin" / "java").exists())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _connect_available() -> bool:
    try:
        import grpc  # noqa: F401
        import pyspark.sql.connect.session  # noqa: F401
    except Exception:
        return False
    return True


_CONNECT_PORT = _free_port()


@pytest.fixture(scope="session")
def classic_spark():
    pytest.importorskip("pyspark")
    if not _java_available():
        pytest.skip("Java is not installed")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import deltakernel.spark as dks

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("deltakernel-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # 2g: the one JVM runs ~780 cases of both session kinds; with 1g its old generation peaked at 99.9% and a
        # clean-clone run once lost the JVM (docs/decisions.md, issue 25)
        .config("spark.driver.memory", "2g")
    )
    if _connect_available():  # the same JVM serves the Connect session (see the module docstring)
        builder = (builder.config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
                   .config("spark.connect.grpc.binding.address", "127.0.0.1")
                   .config("spark.connect.grpc.binding.port", str(_CONNECT_PORT)))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    dks.enable(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_spark(classic_spark):
    if not _connect_available():
        pytest.skip("pyspark's connect extra (grpcio) is not installed")
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    import deltakernel.spark as dks

    # pyspark's generic builder refuses a remote session next to a classic one; Connect's own builder does not
    session = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{_CONNECT_PORT}").getOrCreate()
    os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)  # per case, by `spark` below
    for key, value in (("spark.sql.shuffle.partitions", "2"), ("spark.sql.session.timeZone", "UTC")):
        session.conf.set(key, value)
    dks.enable(session)
    yield session
    try:
        session.client.close()
    except Exception:
        pass


@pytest.fixture(params=KINDS)
def spark(request, monkeypatch):
    """The session of this case's kind (the test runs once per kind). pyspark's `functions` build Connect or
    classic Columns by `SPARK_CONNECT_MODE_ENABLED` (set in a process whose session is remote): set for the
    Connect cases only, so each case runs as in a process with that one kind of session."""
    if request.param == "connect":
        marker = request.node.get_closest_marker("classic_only")
        if marker is not None:
            pytest.skip("classic only: " + (marker.args[0] if marker.args else "needs the driver JVM"))
        session = request.getfixturevalue("connect_spark")
        monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
        return session
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
    return request.getfixturevalue("classic_spark")


def pytest_configure(config):
    config.addinivalue_line("markers", "classic_only(reason): Spark case that cannot run over Spark Connect")
