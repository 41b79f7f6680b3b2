"""Test helpers: write a table's version 0 and staged commits on local storage, as a catalog committer would.

Kept here (not in the kernel) because this suite tests the HTTP side only; the kernel's committer does the real
staging later, through the adapter.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

from deltakernel.unity import Commit, DeltaProtocol, StagingTable

COLUMNS = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}


def local_path(uri: str) -> Path:
    return Path(url2pathname(urlparse(uri).path))


def protocol_for(staging: StagingTable) -> DeltaProtocol:
    req = staging.required_protocol
    return DeltaProtocol(3, 7, tuple(req.reader_features), tuple(req.writer_features))


def properties_for(staging: StagingTable) -> dict[str, str]:
    return {k: (v if v is not None else "x") for k, v in staging.required_properties.items()}


def write_version0(location: str, staging: StagingTable) -> int:
    """`_delta_log/00000000000000000000.json` with the required protocol and properties; its timestamp (ms)."""
    log = local_path(location) / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    ts = int(time.time() * 1000)
    proto = protocol_for(staging)
    actions = [
        {"commitInfo": {"timestamp": ts, "inCommitTimestamp": ts, "operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": list(proto.reader_features),
                      "writerFeatures": list(proto.writer_features)}},
        {"metaData": {"id": staging.table_id, "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(COLUMNS), "partitionColumns": [],
                      "configuration": properties_for(staging), "createdTime": ts}},
    ]
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return ts


def create_managed_table(client, catalog: str, schema: str, name: str):
    """staging table -> version 0 written -> createTable; (StagingTable, LoadTableResult)."""
    staging = client.create_staging_table(catalog, schema, name)
    ts = write_version0(staging.location, staging)
    loaded = client.create_table(catalog, schema, name, location=staging.location, table_type="MANAGED",
                                 columns=COLUMNS, protocol=protocol_for(staging),
                                 properties=properties_for(staging), last_commit_timestamp_ms=ts)
    return staging, loaded


def stage_commit(location: str, version: int, tag: str = "") -> Commit:
    """Write `_delta_log/_staged_commits/<version>.<uuid>.json` and describe it as a commit to ratify."""
    staged = local_path(location) / "_delta_log" / "_staged_commits"
    staged.mkdir(parents=True, exist_ok=True)
    ts = int(time.time() * 1000)
    name = f"{version:020d}.{uuid.uuid4()}.json"
    path = staged / name
    path.write_text(json.dumps({"commitInfo": {"timestamp": ts, "inCommitTimestamp": ts, "operation": "WRITE",
                                               "tag": tag}}) + "\n")
    st = os.stat(path)
    return Commit(version, ts, name, st.st_size, int(st.st_mtime * 1000))


def publish(location: str, commits) -> None:
    """Publish ratified commits: copy each staged file to `_delta_log/<version>.json`, in version order (an
    idempotent copy: an existing file is left alone)."""
    log = local_path(location) / "_delta_log"
    for c in sorted(commits, key=lambda c: c.version):
        target = log / f"{c.version:020d}.json"
        if not target.exists():
            target.write_bytes((log / "_staged_commits" / c.file_name).read_bytes())
