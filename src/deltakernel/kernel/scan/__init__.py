"""Scans: file planning with partition pruning and stats skipping, per-file reads, partition values."""
