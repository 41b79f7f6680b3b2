"""The Delta log: actions, listing a log segment, vectorized replay, commit timestamps and time travel."""
