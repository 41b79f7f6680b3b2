"""Checkpoints: reading (classic, multi-part, V2 with sidecars), writing, and expired-log cleanup."""
