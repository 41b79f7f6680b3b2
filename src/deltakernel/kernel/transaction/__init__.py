"""Transactions: optimistic commits, conflict rules."""
