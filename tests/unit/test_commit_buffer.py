"""The one-buffer commit reader (kernel/log/commit_buffer.py) against the general line-by-line reader.

`read_commits` takes the fast path for canonical logs and the general path otherwise; both must produce the
same batch (adds, removes, cdc, their versions and log order, tags, the decoded other actions) on any log,
and the same replay. Random logs come from hypothesis; the declining shapes are pinned one by one.
"""

from __future__ import annotations

import json
import pathlib
import sys
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from helpers import add_action, commit_info, metadata_action, protocol_action, remove_action

from deltakernel.errors import CorruptLogError
from deltakernel.kernel.log import commit_buffer, replay
from deltakernel.storage import LocalStorage
from deltakernel.table import DeltaTable


def _write_log(root: pathlib.Path, commits: list[bytes]) -> LocalStorage:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    for v, blob in enumerate(commits):
        (log / f"{v:020d}.json").write_bytes(blob)
    return LocalStorage(str(root))


def _metas(storage: LocalStorage) -> list[Any]:
    return [m for m in storage.list_from("_delta_log/") if m.key.endswith(".json")]


def _both(storage: LocalStorage, hint: list[str] | None = None, file_actions: bool = True) -> tuple[Any, Any]:
    metas = _metas(storage)
    blobs = storage.read_many([m.key for m in metas])
    versions = [int(m.key.rsplit("/", 1)[-1][:20]) for m in metas]
    general = replay._read_general(storage, metas, versions, blobs, hint, file_actions)
    index = commit_buffer.index_commits(blobs)
    fast = None if index is None else replay._read_indexed(index, versions, hint, file_actions)
    return fast, general


def _same(fast: Any, general: Any) -> None:
    assert fast.versions == general.versions
    assert fast.rare == general.rare
    assert fast.cdc_versions == general.cdc_versions
    for name in ("adds", "removes", "cdcs"):
        a, b = getattr(fast, name), getattr(general, name)
        assert a.schema == b.schema, name
        assert a.to_pylist() == b.to_pylist(), name


def _line(action: dict[str, Any]) -> str:
    return json.dumps(action, separators=(",", ":"))


_DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40,
       "cardinality": 3}


@st.composite
def _log(draw: st.DrawFn) -> tuple[list[bytes], bool]:
    """Random commits: file actions with or without stats / DVs / tags / row ids, the other actions,
    and (when `canonical` is false) line shapes only the general path reads."""
    partitioned = draw(st.booleans())
    canonical = draw(st.booleans())
    pcols = ["p"] if partitioned else []
    names = st.sampled_from(["a.parquet", "b.parquet", "p=1/c.parquet", "d%20e.parquet", "ü/f.parquet"])
    commits: list[bytes] = []
    for v in range(draw(st.integers(1, 6))):
        actions: list[dict[str, Any]] = [commit_info(ts=1_700_000_000_000 + v)]
        if v == 0:
            actions += [protocol_action(), metadata_action([("x", "long"), ("p", "string")], pcols)]
        for _ in range(draw(st.integers(0, 6))):
            kind = draw(st.sampled_from(["add", "remove", "cdc", "txn", "domain", "unknown"]))
            path = draw(names)
            pv = {"p": draw(st.sampled_from(["1", "2", None]))} if partitioned else {}
            dv = _DV if draw(st.integers(0, 4)) == 0 else None
            if kind == "add":
                a = add_action(path, size=draw(st.integers(0, 10**12)), partition_values=pv,
                               stats={"numRecords": draw(st.integers(0, 9))} if draw(st.booleans()) else None,
                               deletion_vector=dv, data_change=draw(st.booleans()))
                if draw(st.integers(0, 3)) == 0:
                    a["add"]["tags"] = {"INSERTION_TIME": str(v), "k": "v\"q"}
                if draw(st.integers(0, 3)) == 0:
                    a["add"]["baseRowId"] = draw(st.integers(0, 1000))
                    a["add"]["defaultRowCommitVersion"] = v
                actions.append(a)
            elif kind == "remove":
                actions.append(remove_action(path, deletion_vector=dv, partition_values=pv or None))
            elif kind == "cdc":
                actions.append({"cdc": {"path": f"_change_data/{path}", "partitionValues": pv, "size": 7,
                                        "dataChange": False}})
            elif kind == "txn":
                actions.append({"txn": {"appId": draw(st.sampled_from(["a", "b"])), "version": v}})
            elif kind == "domain":
                actions.append({"domainMetadata": {"domain": "d", "configuration": "{}", "removed": False}})
            else:
                actions.append({"someFutureAction": {"add": {"path": "not-a-file"}}})
        lines = [_line(a) for a in actions]
        if not canonical:
            i = draw(st.integers(0, len(lines) - 1))
            shape = draw(st.sampled_from(["space", "blank", "crlf", "indent"]))
            if shape == "space":
                lines[i] = lines[i].replace('":', '": ', 1)
            elif shape == "blank":
                lines.insert(i, "   ")
            elif shape == "indent":
                lines[i] = "  " + lines[i]
            else:
                lines = [x + "\r" for x in lines]
        sep_end = "\n" if draw(st.booleans()) else ""
        commits.append(("\n".join(lines) + sep_end).encode())
    return commits, canonical


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_log())
def test_fast_path_matches_general_path(log: tuple[list[bytes], bool]) -> None:
    commits, canonical = log
    with tempfile.TemporaryDirectory() as d:
        storage = _write_log(pathlib.Path(d), commits)
        fast, general = _both(storage)
        if fast is not None:
            _same(fast, general)
        else:
            assert not canonical, "a canonical log must take the fast path"
        through = replay.read_commits(storage, _metas(storage))
        _same(through, general)
        rare_only = replay.read_commits(storage, _metas(storage), file_actions=False)
        assert rare_only.rare == general.rare


@pytest.mark.parametrize("threads", [False, True])
def test_threaded_parse_of_many_blocks_keeps_line_order(tmp_path: pathlib.Path, threads: bool) -> None:
    """Enough lines for many 1 MiB blocks: rows stay in log order with their commit versions."""
    commits = []
    for v in range(30):
        acts = [commit_info(ts=v)] + ([protocol_action(), metadata_action([("x", "long")])] if v == 0 else [])
        acts += [add_action(f"f-{v}-{i}.parquet", stats={"numRecords": i, "pad": "x" * 200}) for i in range(400)]
        acts += [remove_action(f"f-{v - 1}-{i}.parquet") for i in range(0, 400, 7)] if v else []
        commits.append("".join(_line(a) + "\n" for a in acts).encode())
    storage = _write_log(tmp_path, commits)
    metas = _metas(storage)
    blobs = storage.read_many([m.key for m in metas])
    index = commit_buffer.index_commits(blobs)
    assert index is not None
    typ = replay._file_action_type([])
    parsed = index.parse_kind(1, "add", typ.field("add").type, threads=threads)
    assert parsed is not None and len(parsed[0]) == len(parsed[1]) == 30 * 400
    paths = [r["path"] for r in parsed[0].to_pylist()]
    assert paths == [f"f-{v}-{i}.parquet" for v in range(30) for i in range(400)]
    removes = index.parse_kind(2, "remove", typ.field("remove").type, threads=threads)
    assert removes is not None
    assert [r["path"] for r in removes[0].to_pylist()] == [
        f"f-{v - 1}-{i}.parquet" for v in range(1, 30) for i in range(0, 400, 7)]
    fast, general = _both(storage)
    _same(fast, general)


@pytest.mark.parametrize("concurrent_bytes", [0, 1 << 40])
def test_kinds_parsed_side_by_side_equal_the_general_path(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                                          concurrent_bytes: int) -> None:
    """Adds, removes and cdc lines parsed on threads side by side (every kind over the threshold) or one after
    the other give the batch the general path gives, rows in log order."""
    monkeypatch.setattr(commit_buffer, "CONCURRENT_BYTES", concurrent_bytes)
    commits = []
    for v in range(12):
        acts = [commit_info(ts=v)] + ([protocol_action(), metadata_action([("x", "long")])] if v == 0 else [])
        acts += [add_action(f"f-{v}-{i}.parquet", stats={"numRecords": i}) for i in range(50)]
        acts += [remove_action(f"f-{v - 1}-{i}.parquet") for i in range(0, 50, 3)] if v else []
        acts += [{"cdc": {"path": f"_change_data/c-{v}-{i}.parquet", "partitionValues": {}, "size": i,
                          "dataChange": False}} for i in range(v % 3)]
        commits.append("".join(_line(a) + "\n" for a in acts).encode())
    storage = _write_log(tmp_path, commits)
    fast, general = _both(storage)
    assert fast is not None
    _same(fast, general)
    assert fast.removes.column("path").to_pylist() == [
        f"f-{v - 1}-{i}.parquet" for v in range(1, 12) for i in range(0, 50, 3)]


def test_declines_and_general_path_names_the_bad_file(tmp_path: pathlib.Path) -> None:
    good = "".join(_line(a) + "\n" for a in [commit_info(), protocol_action(),
                                              metadata_action([("x", "long")]), add_action("a.parquet")])
    storage = _write_log(tmp_path, [good.encode(), b'{"add":{"path":"b.parquet","size":"big"}}\n'])
    assert commit_buffer.index_commits(storage.read_many([m.key for m in _metas(storage)])) is not None
    with pytest.raises(CorruptLogError, match="00000000000000000001.json"):
        replay.read_commits(storage, _metas(storage))


def test_not_utf8_is_declined_and_named(tmp_path: pathlib.Path) -> None:
    good = "".join(_line(a) + "\n" for a in [commit_info(), protocol_action(), metadata_action([("x", "long")])])
    bad = b'{"add":{"path":"a.parquet","size":1,"zz":"\xff"}}\n'
    storage = _write_log(tmp_path, [good.encode(), bad])
    assert commit_buffer.index_commits([good.encode(), bad]) is None
    with pytest.raises(CorruptLogError, match="not UTF-8"):
        replay.read_commits(storage, _metas(storage))


def test_file_action_key_inside_another_action_is_not_a_file(tmp_path: pathlib.Path) -> None:
    """A non-file line with a top-level "add" key after its first key: the general path ignores it (the
    first key decides), the fast path must not parse it as a file."""
    lines = [commit_info(), protocol_action(), metadata_action([("x", "long")]), add_action("a.parquet")]
    text = "".join(_line(a) + "\n" for a in lines)
    text += '{"commitInfo":{"timestamp":1},"add":{"path":"ghost.parquet","size":1}}\n'
    storage = _write_log(tmp_path, [text.encode()])
    fast, general = _both(storage)
    assert fast is None
    assert general.adds.column("path").to_pylist() == ["a.parquet"]
    assert [u.rsplit("/", 1)[-1] for u in DeltaTable(str(tmp_path)).file_uris()] == ["a.parquet"]


def test_contains_matches_in() -> None:
    big = b"x" * (1 << 17) + b'"tags"' + b"y" * 10
    assert commit_buffer.contains(big, b'"tags"') and not commit_buffer.contains(big, b'"tagz"')
    assert commit_buffer.contains(b'a"tags"', b'"tags"') and not commit_buffer.contains(b"abc", b"zz")


def test_empty_commit_files(tmp_path: pathlib.Path) -> None:
    head = "".join(_line(a) + "\n" for a in [commit_info(), protocol_action(), metadata_action([("x", "long")])])
    storage = _write_log(tmp_path, [head.encode(), b"", b"\n\n", (_line(add_action("a.parquet")) + "\n").encode()])
    fast, general = _both(storage)
    assert fast is not None
    _same(fast, general)
    assert fast.adds.num_rows == 1


def test_local_read_joined_matches_the_generic_join(tmp_path: pathlib.Path) -> None:
    """LocalStorage reads commits into one buffer; the same bytes and ends as read_many + join, whatever the
    files' endings, and a file longer than its listed size falls back to the generic read."""
    blobs = [b'{"a":1}\n', b"", b'{"b":2}', b"\n\n", b'{"c":3}\r\n{"d":4}']
    storage = _write_log(tmp_path, blobs)
    metas = _metas(storage)
    keys, sizes = [m.key for m in metas], [m.size for m in metas]
    expected = commit_buffer.concatenate(blobs)
    buf, ends = storage.read_joined(keys, sizes)
    assert (bytes(buf), ends) == (expected[0], expected[1])
    stale = [max(0, s - 3) for s in sizes]  # the listing said less than the files hold
    buf, ends = storage.read_joined(keys, stale)
    assert (bytes(buf), ends) == (expected[0], expected[1])
    generic = super(LocalStorage, storage).read_joined(keys, sizes)
    assert (bytes(generic[0]), generic[1]) == (expected[0], expected[1])
