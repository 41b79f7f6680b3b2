"""Vended temporary credentials: the three endpoints, credentials -> deltakernel storage options (S3, Azure,
GCS), refresh before expiry, and a managed table on S3 (moto) written and read with STS session credentials the
catalog vended."""

from __future__ import annotations

import json

import pytest
from uc_helpers import COLUMNS, properties_for, protocol_for
from uc_server import MotoStsVendor, StaticVendor
from uc_server.fixtures import CATALOG, SCHEMA, client_for, start_server

from deltakernel.storage import storage_for_uri
from deltakernel.unity import (
    READ,
    READ_WRITE,
    StorageCredential,
    UCBadRequestError,
    VendedCredentials,
    select_credential,
    to_storage_options,
)

S3_CONFIG = {"s3.access-key-id": "AKIA", "s3.secret-access-key": "s3cr3t-value", "s3.session-token": "T0KVAL"}


def _cred(prefix: str, config: dict[str, str], exp_ms: int = 10**13) -> StorageCredential:
    return StorageCredential(prefix, READ_WRITE, config, exp_ms)


def test_s3_credentials_become_aws_options_over_the_users_own() -> None:
    base = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "static",
            "aws_secret_access_key": "static-secret"}
    out = to_storage_options(_cred("s3://b/t", S3_CONFIG), base)
    assert out == {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_REGION": "us-east-1", "aws_access_key_id": "AKIA",
                   "aws_secret_access_key": "s3cr3t-value", "aws_session_token": "T0KVAL"}


def test_azure_and_gcs_credentials() -> None:
    az = to_storage_options(_cred("abfss://c@a.dfs.core.windows.net/t", {"azure.sas-token": "sv=1&sig=x"}),
                            {"azure_storage_account_name": "a", "azure_storage_account_key": "k"})
    assert az == {"azure_storage_account_name": "a", "azure_storage_sas_token": "sv=1&sig=x"}
    gcs = to_storage_options(_cred("gs://b/t", {"gcs.oauth-token": "ya29.x"}), {"google_service_account": "f.json"})
    assert gcs == {"google_bearer_token": "ya29.x"}
    # and deltakernel's object stores accept them
    storage_for_uri("gs://b/t", gcs)
    storage_for_uri("az://c/t", az)


def test_longest_prefix_wins() -> None:
    creds = [_cred("s3://b/", {**S3_CONFIG, "s3.access-key-id": "bucket"}),
             _cred("s3://b/warehouse/t1", {**S3_CONFIG, "s3.access-key-id": "table"}),
             _cred("s3://b/warehouse/t10", {**S3_CONFIG, "s3.access-key-id": "other"})]
    assert select_credential(creds, "s3://b/warehouse/t1").config["s3.access-key-id"] == "table"
    assert select_credential(creds, "s3://b/warehouse/t1/").config["s3.access-key-id"] == "table"
    assert select_credential(creds, "s3://b/elsewhere").config["s3.access-key-id"] == "bucket"
    assert select_credential(creds, "s3://other/x") is None
    assert "s3cr3t-value" not in repr(creds[0]) and "T0KVAL" not in repr(creds[0])


def test_the_three_credential_endpoints(uc_server, uc_client) -> None:
    vendor = StaticVendor(S3_CONFIG)
    uc_server.set_vendor(vendor)
    staging = uc_client.create_staging_table(CATALOG, SCHEMA, "t")
    assert staging.storage_credentials[0].prefix == staging.location + "/"
    assert uc_client.get_staging_table_credentials(staging.table_id)[0].operation == READ_WRITE
    from uc_helpers import write_version0

    ts = write_version0(staging.location, staging)
    uc_client.create_table(CATALOG, SCHEMA, "t", location=staging.location, table_type="MANAGED", columns=COLUMNS,
                           protocol=protocol_for(staging), properties=properties_for(staging),
                           last_commit_timestamp_ms=ts)
    (read,) = uc_client.get_table_credentials(CATALOG, SCHEMA, "t", READ)
    assert read.operation == READ and read.config["s3.secret-access-key"] == "s3cr3t-value"
    (path,) = uc_client.get_temporary_path_credentials("s3://b/ext/path", READ_WRITE)
    assert path.prefix == "s3://b/ext/path/"
    assert [op for _, op in vendor.calls] == [READ_WRITE, READ_WRITE, READ, READ_WRITE]
    with pytest.raises(UCBadRequestError):
        uc_client.get_table_credentials(CATALOG, SCHEMA, "t", "WRITE_ONLY")


def test_vended_credentials_refresh_before_expiry(uc_server, uc_client) -> None:
    now = [1_000_000.0]
    vendor = StaticVendor(S3_CONFIG, lifetime=300.0, clock=lambda: now[0])
    uc_server.set_vendor(vendor)
    from uc_helpers import create_managed_table

    staging, _ = create_managed_table(uc_client, CATALOG, SCHEMA, "t")
    creds = uc_client.table_credentials(CATALOG, SCHEMA, "t", staging.location, base_options={"AWS_REGION": "r"},
                                        skew=60.0, clock=lambda: now[0])
    first = creds.storage_options()
    assert first["aws_session_token"].startswith("T0KVAL-") and first["AWS_REGION"] == "r"
    assert creds.expires_at == pytest.approx(now[0] + 300.0)
    now[0] += 200  # 100 s left: still valid beyond the skew -> cached
    assert creds.storage_options() == first and creds.vends == 1
    now[0] += 50  # 50 s left: inside the 60 s skew -> re-vended before it expires
    second = creds.storage_options()
    assert creds.vends == 2 and second["aws_session_token"] != first["aws_session_token"]


def test_an_expired_credential_is_not_revended_on_every_call() -> None:
    now = [1000.0]
    calls = []

    def vend():
        calls.append(1)
        return [_cred("s3://b/t", S3_CONFIG, exp_ms=int((now[0] - 10) * 1000))]  # already expired

    creds = VendedCredentials(vend, "s3://b/t", skew=60, min_interval=5, clock=lambda: now[0])
    for _ in range(3):
        creds.storage_options()
    assert len(calls) == 1
    now[0] += 5
    creds.storage_options()
    assert len(calls) == 2


@pytest.fixture()
def s3_uc(tmp_path, moto_endpoint, s3_bucket):
    server = start_server(tmp_path, vendor=MotoStsVendor(moto_endpoint))
    server.store.storage_root = f"s3://{s3_bucket}/uc"
    try:
        yield server
    finally:
        server.stop()


def test_managed_table_on_s3_with_vended_sts_credentials(s3_uc, moto_endpoint) -> None:
    client = client_for(s3_uc)
    base = {"AWS_ENDPOINT_URL": moto_endpoint, "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
    staging = client.create_staging_table(CATALOG, SCHEMA, "t")
    assert staging.location.startswith("s3://")
    cred = select_credential(staging.storage_credentials, staging.location)
    assert cred is not None and cred.config["s3.session-token"] and cred.expiration_time_ms > 0
    options = to_storage_options(cred, base)
    storage = storage_for_uri(staging.location, options)
    v0 = json.dumps({"commitInfo": {"timestamp": 1}}).encode()
    storage.put_if_absent(f"_delta_log/{0:020d}.json", v0)
    client.create_table(CATALOG, SCHEMA, "t", location=staging.location, table_type="MANAGED", columns=COLUMNS,
                        protocol=protocol_for(staging), properties=properties_for(staging),
                        last_commit_timestamp_ms=1)
    # a reader gets its own (READ) credentials for the registered table and sees the commit
    reader = client.table_credentials(CATALOG, SCHEMA, "t", staging.location, operation=READ, base_options=base)
    opts = reader.storage_options()
    assert opts["aws_session_token"] and len(s3_uc.state.vendor.calls) == 2  # vended again for the reader
    assert storage_for_uri(staging.location, opts).read(f"_delta_log/{0:020d}.json") == v0


def test_obstore_credential_provider_on_s3(s3_uc, moto_endpoint) -> None:
    """The same cache as an obstore `credential_provider`: the store asks it for (and refreshes) credentials."""
    obstore = pytest.importorskip("obstore")
    from obstore.store import S3Store

    client = client_for(s3_uc)
    staging = client.create_staging_table(CATALOG, SCHEMA, "t")
    creds = VendedCredentials(lambda: client.get_staging_table_credentials(staging.table_id), staging.location)
    bucket, _, prefix = staging.location[len("s3://"):].partition("/")
    store = S3Store(bucket, prefix=prefix, endpoint=moto_endpoint, region="us-east-1", client_options={
        "allow_http": True}, credential_provider=creds.obstore_credential_provider())
    obstore.put(store, "_delta_log/x.json", b"{}")
    assert bytes(obstore.get(store, "_delta_log/x.json").bytes()) == b"{}"
    assert creds.vends == 1


def test_staging_and_path_credentials_refresh(uc_server, uc_client) -> None:
    now = [5_000_000.0]
    vendor = StaticVendor(S3_CONFIG, lifetime=120.0, clock=lambda: now[0])
    uc_server.set_vendor(vendor)
    staging = uc_client.create_staging_table(CATALOG, SCHEMA, "t")
    creds = uc_client.staging_table_credentials(staging, clock=lambda: now[0])
    first = creds.storage_options()  # the credentials of the createStagingTable answer: no extra request
    assert len(vendor.calls) == 1 and creds.vends == 1
    now[0] += 90  # inside the 60 s skew of the 120 s credential
    second = creds.storage_options()
    assert len(vendor.calls) == 2 and second["aws_session_token"] != first["aws_session_token"]
    assert [r.operation for r in uc_server.requests][-1] == "getStagingTableCredentials"
    path = uc_client.path_credentials("s3://b/ext", clock=lambda: now[0])
    assert path.storage_options()["aws_access_key_id"].startswith("AKIA")
    assert vendor.calls[-1] == ("s3://b/ext", READ_WRITE)


def test_concurrent_callers_share_one_vend() -> None:
    import threading
    import time as _time

    calls = []

    def slow_vend():
        calls.append(1)
        _time.sleep(0.2)
        return [_cred("s3://b/t", S3_CONFIG)]

    creds = VendedCredentials(slow_vend, "s3://b/t")
    threads = [threading.Thread(target=creds.storage_options) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
