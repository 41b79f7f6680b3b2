"""Where the client finds the catalog: storage options, then the environment (deltalake's and UC's names)."""

from __future__ import annotations

import pytest

from deltakernel.errors import DeltaError
from deltakernel.unity import UCConfigurationError, parse_table_name, resolve_config
from deltakernel.unity.config import is_uc_option


def test_databricks_env_names() -> None:
    cfg = resolve_config({}, env={"DATABRICKS_HOST": "https://adb-1.azuredatabricks.net", "DATABRICKS_TOKEN": "t1"})
    assert cfg.base_url == "https://adb-1.azuredatabricks.net/api/2.1/unity-catalog"
    assert cfg.token == "t1"


def test_unity_catalog_env_names_and_full_url() -> None:
    cfg = resolve_config({}, env={"UNITY_CATALOG_URL": "http://localhost:8080/api/2.1/unity-catalog/",
                                  "UNITY_CATALOG_TOKEN": "t2"})
    assert cfg.base_url == "http://localhost:8080/api/2.1/unity-catalog"
    assert cfg.token == "t2"


def test_storage_options_win_over_environment_case_insensitively() -> None:
    cfg = resolve_config({"DATABRICKS_HOST": "uc.example.com", "databricks_token": "opt"},
                         env={"DATABRICKS_HOST": "https://env.example.com", "DATABRICKS_TOKEN": "env"})
    assert cfg.base_url == "https://uc.example.com/api/2.1/unity-catalog"  # bare host: https
    assert cfg.token == "opt"


def test_delta_rs_key_spellings() -> None:
    cfg = resolve_config({"unity_workspace_url": "https://w.example.com", "unity_access_token": "a"}, env={})
    assert (cfg.base_url, cfg.token) == ("https://w.example.com/api/2.1/unity-catalog", "a")


def test_missing_url_is_a_typed_error() -> None:
    with pytest.raises(UCConfigurationError) as exc:
        resolve_config({}, env={})
    assert isinstance(exc.value, DeltaError)


def test_plain_http_to_a_remote_host_is_refused_unless_allowed() -> None:
    with pytest.raises(UCConfigurationError, match="clear"):
        resolve_config({"databricks_host": "http://uc.example.com"}, env={})
    cfg = resolve_config({"databricks_host": "http://uc.example.com", "unity_allow_http_url": "true"}, env={})
    assert cfg.base_url.startswith("http://uc.example.com")


def test_timeouts_are_positive_and_the_token_is_never_printed() -> None:
    cfg = resolve_config({"databricks_host": "https://h", "databricks_token": "secret-token",
                          "unity_catalog_timeout": "2.5s"}, env={})
    assert cfg.timeout == 2.5 and cfg.connect_timeout > 0
    assert "secret-token" not in repr(cfg)
    with pytest.raises(UCConfigurationError):
        resolve_config({"databricks_host": "https://h", "unity_catalog_timeout": "0"}, env={})


def test_uc_option_keys_are_recognised() -> None:
    assert is_uc_option("DATABRICKS_TOKEN") and is_uc_option("unity_catalog_url")
    assert not is_uc_option("aws_access_key_id")


def test_table_names() -> None:
    assert parse_table_name("uc://main.default.t") == ("main", "default", "t")
    assert parse_table_name("main.default.`my.table`") == ("main", "default", "my.table")
    for bad in ("main.t", "a.b.c.d", "a..c"):
        with pytest.raises(UCConfigurationError):
            parse_table_name(bad)
