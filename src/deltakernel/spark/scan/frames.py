"""The DataFrame a classic session's `load()` returns (`DeltaFrame`): Spark's plan over the Delta file index that
remembers its snapshot. Its Connect counterpart is `connect_plan.ConnectDeltaFrame` (also a `DeltaFrame` for
`isinstance`)."""

from __future__ import annotations

from typing import Any

from ...kernel.snapshot import Snapshot
from ..kinds.dataframe_subclass import PlainNew


def _frame_base() -> type:
    try:
        from pyspark.sql.classic.dataframe import DataFrame
    except ImportError:  # pragma: no cover - pyspark 3
        from pyspark.sql import DataFrame  # type: ignore[assignment]
    return DataFrame  # type: ignore[no-any-return]


class _DeltaFrameType(type):
    """`isinstance(df, DeltaFrame)` holds for the Spark Connect kind too (`scan/public_plan.ConnectDeltaFrame`)."""

    def __instancecheck__(cls, obj: Any) -> bool:
        if type.__instancecheck__(cls, obj):
            return True
        from .connect_plan import ConnectDeltaFrame

        return cls.__name__ == "DeltaFrame" and isinstance(obj, ConnectDeltaFrame)


class DeltaFrame(PlainNew, _frame_base(), metaclass=_DeltaFrameType):  # type: ignore[misc]
    """The DataFrame `load()` returns: a plain Spark plan over the Delta file index, remembering its snapshot.

    Filters need nothing special (Spark pushes them to the index); `skipped_files` reports the skipping. On a
    Spark Connect session `load()` returns a `ConnectDeltaFrame`, which is also a `DeltaFrame` for
    `isinstance` (same `snapshot` and `skipped_files`)."""

    def __init__(self, jdf: Any, spark: Any, snapshot: Snapshot) -> None:
        super().__init__(jdf, spark)
        self._dk_snapshot = snapshot

    @property
    def snapshot(self) -> Snapshot:
        return self._dk_snapshot

    @property
    def skipped_files(self) -> int:
        """Files of this table the kernel skipped for this frame's query (lists the scans if not yet planned)."""
        from .report import classic_scan_report

        return sum(r.files_total - r.files_kept for r in classic_scan_report(self, True))


__all__ = ["DeltaFrame"]
