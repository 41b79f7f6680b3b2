"""The Delta REST API's table operations, client against the test catalog: config, create (staging -> version 0
-> createTable), load, update (metadata), rename / exists / delete, auth, persistence."""

from __future__ import annotations

from pathlib import Path

import pytest
from uc_helpers import (
    COLUMNS,
    create_managed_table,
    local_path,
    properties_for,
    protocol_for,
    stage_commit,
    write_version0,
)
from uc_server.fixtures import CATALOG, SCHEMA, UC_TOKEN, client_for, start_server

from deltakernel.errors import DeltaError, TableNotFoundError
from deltakernel.unity import (
    AssertEtag,
    AssertTableUUID,
    DeltaProtocol,
    RemoveProperties,
    SetColumns,
    SetProperties,
    SetProtocol,
    SetTableComment,
    UCAlreadyExistsError,
    UCAuthenticationError,
    UCBadRequestError,
    UCCommitStateUnknownError,
    UCNotFoundError,
    UCTableNotFoundError,
)


def test_get_config_lists_the_table_endpoints(uc_client) -> None:
    cfg = uc_client.get_config(CATALOG)
    assert cfg.protocol_version == "1.0"
    assert cfg.supports("GET /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}")
    assert cfg.supports("POST /v1/catalogs/{catalog}/schemas/{schema}/staging-tables")
    assert uc_client.supports_delta_api(CATALOG)


def test_get_config_of_an_unknown_catalog(uc_client) -> None:
    with pytest.raises(UCNotFoundError) as exc:
        uc_client.get_config("nope")
    assert exc.value.status == 404 and exc.value.error_type == "NoSuchCatalogException"
    with pytest.raises(UCNotFoundError):
        uc_client.supports_delta_api("nope")  # an unknown catalog is not "an old server"


def test_managed_table_create_flow(uc_client) -> None:
    staging, loaded = create_managed_table(uc_client, CATALOG, SCHEMA, "t")
    assert staging.table_type == "MANAGED"
    assert "catalogManaged" in staging.required_protocol.writer_features
    assert staging.required_properties["io.unitycatalog.tableId"] == staging.table_id
    assert (local_path(staging.location) / "_delta_log" / f"{0:020d}.json").exists()
    again = uc_client.load_table(CATALOG, SCHEMA, "t")
    for got in (loaded, again):
        assert got.table_uuid == staging.table_id
        assert got.location == staging.location
        assert got.metadata.table_type == "MANAGED"
        assert got.latest_table_version == 0
        assert got.commits == ()
        assert got.metadata.columns == COLUMNS
        assert got.metadata.properties["delta.feature.catalogManaged"] == "supported"
        assert got.etag
    assert uc_client.table_exists(CATALOG, SCHEMA, "t")


def test_create_refuses_a_protocol_without_the_required_features(uc_client) -> None:
    staging = uc_client.create_staging_table(CATALOG, SCHEMA, "t")
    ts = write_version0(staging.location, staging)
    with pytest.raises(UCBadRequestError, match="catalogManaged"):
        uc_client.create_table(CATALOG, SCHEMA, "t", location=staging.location, table_type="MANAGED",
                               columns=COLUMNS, protocol=DeltaProtocol(3, 7, ("deletionVectors",), ()),
                               properties=properties_for(staging), last_commit_timestamp_ms=ts)
    with pytest.raises(UCBadRequestError, match="tableId"):
        uc_client.create_table(CATALOG, SCHEMA, "t", location=staging.location, table_type="MANAGED",
                               columns=COLUMNS, protocol=protocol_for(staging),
                               properties={"delta.enableInCommitTimestamps": "true"}, last_commit_timestamp_ms=ts)
    with pytest.raises(UCTableNotFoundError, match="staging"):  # no staging table at that location
        uc_client.create_table(CATALOG, SCHEMA, "t", location=staging.location + "-elsewhere",
                               table_type="MANAGED", columns=COLUMNS, protocol=protocol_for(staging),
                               properties=properties_for(staging), last_commit_timestamp_ms=ts)
    assert not uc_client.table_exists(CATALOG, SCHEMA, "t")
    uc_client.create_table(CATALOG, SCHEMA, "t", location=staging.location, table_type="MANAGED", columns=COLUMNS,
                           protocol=protocol_for(staging), properties=properties_for(staging),
                           last_commit_timestamp_ms=ts)
    with pytest.raises(UCBadRequestError, match="finalized"):  # a staging table is finalized at most once
        uc_client.create_table(CATALOG, SCHEMA, "t2", location=staging.location, table_type="MANAGED",
                               columns=COLUMNS, protocol=protocol_for(staging), properties=properties_for(staging),
                               last_commit_timestamp_ms=ts)


def test_create_twice_and_unknown_names(uc_client) -> None:
    create_managed_table(uc_client, CATALOG, SCHEMA, "t")
    with pytest.raises(UCAlreadyExistsError):
        uc_client.create_staging_table(CATALOG, SCHEMA, "t")
    with pytest.raises(UCTableNotFoundError) as exc:
        uc_client.load_table(CATALOG, SCHEMA, "missing")
    assert isinstance(exc.value, TableNotFoundError)  # deltakernel's own "no table" error
    with pytest.raises(UCNotFoundError) as exc2:
        uc_client.load_table(CATALOG, "nope", "t")
    assert exc2.value.error_type == "NoSuchSchemaException"
    with pytest.raises(UCTableNotFoundError):
        uc_client.get_staging_table_credentials("00000000-0000-0000-0000-000000000000")


def test_external_table_takes_no_catalog_commits(uc_client, tmp_path: Path) -> None:
    loc = (tmp_path / "ext").as_uri()
    loaded = uc_client.create_table(CATALOG, SCHEMA, "ext", location=loc, table_type="EXTERNAL", columns=COLUMNS,
                                    protocol=DeltaProtocol(1, 2), properties={}, last_commit_timestamp_ms=1)
    assert loaded.metadata.table_type == "EXTERNAL" and loaded.latest_table_version is None
    with pytest.raises(UCBadRequestError, match="managed"):
        uc_client.add_commit(CATALOG, SCHEMA, "ext", table_uuid=loaded.table_uuid, commit=stage_commit(loc, 1))


def test_metadata_updates_change_the_etag(uc_client) -> None:
    _, loaded = create_managed_table(uc_client, CATALOG, SCHEMA, "t")
    uuid_req = [AssertTableUUID(loaded.table_uuid)]
    cols = {"type": "struct", "fields": [*COLUMNS["fields"],
                                         {"name": "v", "type": "string", "nullable": True, "metadata": {}}]}
    after = uc_client.update_table(CATALOG, SCHEMA, "t", uuid_req, [
        SetProperties({"owner.team": "x", "k": "1"}), SetTableComment("hello"), SetColumns(cols)])
    assert after.etag != loaded.etag
    assert after.metadata.properties["owner.team"] == "x" and after.metadata.columns == cols
    after2 = uc_client.update_table(CATALOG, SCHEMA, "t", uuid_req, [
        RemoveProperties(("k",)),
        SetProtocol(DeltaProtocol(3, 7, ("catalogManaged", "vacuumProtocolCheck", "deletionVectors"),
                                  ("catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck", "deletionVectors")))])
    assert "k" not in after2.metadata.properties
    assert after2.metadata.properties["delta.feature.deletionVectors"] == "supported"
    with pytest.raises(UCBadRequestError, match="server-derived"):
        uc_client.update_table(CATALOG, SCHEMA, "t", uuid_req, [SetProperties({"delta.minReaderVersion": "1"})])


def test_update_requires_assert_table_uuid(uc_client) -> None:
    _, loaded = create_managed_table(uc_client, CATALOG, SCHEMA, "t")
    with pytest.raises(UCBadRequestError, match="assert-table-uuid"):
        uc_client.update_table(CATALOG, SCHEMA, "t", [AssertEtag(loaded.etag)], [SetTableComment("x")])
    with pytest.raises(UCBadRequestError, match="non-empty"):
        uc_client.update_table(CATALOG, SCHEMA, "t", [AssertTableUUID(loaded.table_uuid)], [])


def test_rename_and_delete(uc_client) -> None:
    create_managed_table(uc_client, CATALOG, SCHEMA, "a")
    create_managed_table(uc_client, CATALOG, SCHEMA, "b")
    with pytest.raises(UCAlreadyExistsError):
        uc_client.rename_table(CATALOG, SCHEMA, "a", "b")
    uc_client.rename_table(CATALOG, SCHEMA, "a", "c")
    assert not uc_client.table_exists(CATALOG, SCHEMA, "a") and uc_client.table_exists(CATALOG, SCHEMA, "c")
    uc_client.delete_table(CATALOG, SCHEMA, "c")
    assert not uc_client.table_exists(CATALOG, SCHEMA, "c")
    with pytest.raises(UCTableNotFoundError):
        uc_client.delete_table(CATALOG, SCHEMA, "c")


def test_bearer_token_is_required(uc_server) -> None:
    for token in (None, "wrong"):
        client = client_for(uc_server, token=token)
        with pytest.raises(UCAuthenticationError) as exc:
            client.load_table(CATALOG, SCHEMA, "t")
        assert exc.value.status == 401 and isinstance(exc.value, DeltaError)
        with pytest.raises(UCAuthenticationError):
            client.get_config(CATALOG)
    assert all(r.status == 401 for r in uc_server.requests)


def test_state_survives_a_server_restart(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        client = client_for(server)
        staging, loaded = create_managed_table(client, CATALOG, SCHEMA, "t")
        c1 = stage_commit(staging.location, 1)
        after = client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c1)
    finally:
        server.stop()
    server = start_server(tmp_path)  # same SQLite file, new port
    try:
        again = client_for(server).load_table(CATALOG, SCHEMA, "t")
        assert again.commits == (c1,) and again.latest_table_version == 1 and again.etag == after.etag
    finally:
        server.stop()


def test_no_shared_protocol_version_means_an_unsupported_server(uc_client) -> None:
    with pytest.raises(UCBadRequestError) as exc:
        uc_client.get_config(CATALOG, protocol_versions="2.3")
    assert exc.value.error_type == "InvalidParameterValueException"


def test_rate_limited_reads_wait_retry_after_and_retry(uc_server) -> None:
    waits: list[float] = []
    client = client_for(uc_server, sleep=waits.append)  # record the backoff instead of sleeping
    create_managed_table(client, CATALOG, SCHEMA, "t")
    uc_server.inject("loadTable", "error_before", status=429, error_type="TooManyRequestsException", times=2)
    assert client.load_table(CATALOG, SCHEMA, "t").latest_table_version == 0
    assert [r.status for r in uc_server.requests if r.operation == "loadTable"] == [429, 429, 200]
    assert waits == [0.2, 0.4]  # exponential backoff (no Retry-After header sent)


def test_catalogs_and_schemas_through_the_uc_api(uc_server, uc_client) -> None:
    """POST /catalogs and /schemas of the UC API (all.yaml) make what the Delta REST API then serves."""
    import json
    import urllib.request

    def post(path: str, body: dict) -> int:
        req = urllib.request.Request(uc_server.url + "/api/2.1/unity-catalog" + path, data=json.dumps(body).encode(),
                                     method="POST", headers={"Authorization": f"Bearer {UC_TOKEN}",
                                                             "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code

    assert post("/catalogs", {"name": "cat2"}) == 200
    assert post("/catalogs", {"name": "cat2"}) == 409
    assert post("/schemas", {"name": "s", "catalog_name": "cat2"}) == 200
    assert post("/schemas", {"name": "s", "catalog_name": "nope"}) == 404
    assert uc_client.supports_delta_api("cat2")
    create_managed_table(uc_client, "cat2", "s", "t")
    assert uc_client.load_table("cat2", "s", "t").latest_table_version == 0


def test_create_with_a_lost_answer_is_recovered_by_loading(uc_server, uc_client) -> None:
    """Create recovery: the first createTable was applied but its answer lost; the retry is refused (the name is
    taken, or the staging table finalized); loading the table and comparing its uuid with the staging id shows the create won."""
    staging = uc_client.create_staging_table(CATALOG, SCHEMA, "t")
    ts = write_version0(staging.location, staging)
    kw = dict(location=staging.location, table_type="MANAGED", columns=COLUMNS, protocol=protocol_for(staging),
              properties=properties_for(staging), last_commit_timestamp_ms=ts)
    assert not uc_client.resolve_create(CATALOG, SCHEMA, "t", staging.table_id)
    uc_server.inject("createTable", "drop_after")
    with pytest.raises(UCCommitStateUnknownError):
        uc_client.create_table(CATALOG, SCHEMA, "t", **kw)
    with pytest.raises((UCAlreadyExistsError, UCBadRequestError)):  # the name is taken / staging finalized
        uc_client.create_table(CATALOG, SCHEMA, "t", **kw)
    assert uc_client.resolve_create(CATALOG, SCHEMA, "t", staging.table_id)
    other = uc_client.create_staging_table(CATALOG, SCHEMA, "u")
    create_managed_table(uc_client, CATALOG, SCHEMA, "u2")
    assert not uc_client.resolve_create(CATALOG, SCHEMA, "u2", other.table_id)  # another table holds the name


def test_retry_after_is_honoured_and_capped(uc_server) -> None:
    from deltakernel.unity.transport import MAX_BACKOFF_SECONDS, _retry_after

    assert _retry_after({"retry-after": "3"}) == 3.0 and _retry_after({}) is None
    waits: list[float] = []
    client = client_for(uc_server, sleep=waits.append)
    client._t._pause(0, 3600.0)
    assert waits == [MAX_BACKOFF_SECONDS]


def test_malformed_updates_are_400_not_server_errors(uc_server, uc_client) -> None:
    """Requests the client would never send, sent raw: each is a 400 / 409 answer, never an unhandled error."""
    import json
    import urllib.request

    _, loaded = create_managed_table(uc_client, CATALOG, SCHEMA, "t")
    path = f"{uc_server.url}/api/2.1/unity-catalog/delta/v1/catalogs/{CATALOG}/schemas/{SCHEMA}/tables/t"
    uuid_req = {"type": "assert-table-uuid", "uuid": loaded.table_uuid}
    bodies = [
        {"requirements": [uuid_req], "updates": [{"action": "add-commit"}]},
        {"requirements": [uuid_req], "updates": [{"action": "add-commit", "commit": {"version": "1"}}]},
        {"requirements": [uuid_req], "updates": [{"action": "set-latest-backfilled-version"}]},
        {"requirements": [uuid_req], "updates": [{"action": "explode"}]},
        {"requirements": [uuid_req, uuid_req], "updates": [{"action": "set-table-comment", "comment": "x"}]},
        {"requirements": [{"type": "assert-nothing"}, uuid_req], "updates": [{"action": "set-table-comment",
                                                                             "comment": "x"}]},
        {"requirements": [uuid_req], "updates": [{"action": "set-properties", "updates": {"a": "1"}},
                                                 {"action": "remove-properties", "removals": ["a"]}]},
    ]
    for body in bodies:
        req = urllib.request.Request(path, data=json.dumps(body).encode(), method="POST", headers={
            "Authorization": f"Bearer {UC_TOKEN}", "Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(req, timeout=5)
        assert exc.value.code == 400, (body, exc.value.read())
    assert uc_client.load_table(CATALOG, SCHEMA, "t").latest_table_version == 0


def _self_signed(tmp_path: Path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 (its own CA) and its key, as PEM files."""
    crypto = pytest.importorskip("cryptography")  # noqa: F841 - comes with moto[server]
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "uc-test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


def test_https_with_a_private_ca(tmp_path: Path) -> None:
    from deltakernel.unity import UCConnectionError, UnityCatalogClient, resolve_config

    cert, key = _self_signed(tmp_path)
    server = start_server(tmp_path, tls=(cert, key))
    try:
        assert server.url.startswith("https://")
        opts = {"unity_catalog_url": server.url, "unity_catalog_token": UC_TOKEN}
        trusted = UnityCatalogClient(resolve_config({**opts, "unity_catalog_ca_file": cert}, env={}))
        assert trusted.get_config(CATALOG).protocol_version == "1.0"
        untrusted = UnityCatalogClient(resolve_config(opts, env={}), max_retries=0)
        with pytest.raises(UCConnectionError, match="CERTIFICATE_VERIFY_FAILED"):  # nothing sent to it
            untrusted.get_config(CATALOG)
    finally:
        server.stop()
