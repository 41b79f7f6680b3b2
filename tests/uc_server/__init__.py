"""A Unity-Catalog-compatible test server (Delta REST API + preview commits API), kept in the test tree.

`UCTestServer` (server.py: HTTP, bearer tokens, fault injection), `CatalogStore` (store.py: SQLite state and the
catalog's rules), vendors of temporary credentials (vending.py), pytest fixtures (fixtures.py).
"""

from .server import ENDPOINTS, FAULT_KINDS, Fault, Logged, UCTestServer
from .store import ApiError, CatalogStore, Policy
from .vending import MotoStsVendor, StaticVendor, no_credentials

__all__ = ["ENDPOINTS", "FAULT_KINDS", "ApiError", "CatalogStore", "Fault", "Logged", "MotoStsVendor", "Policy",
           "StaticVendor", "UCTestServer", "no_credentials"]
