"""Protocol gating and selection: supported features, the minimal protocol for a write."""
