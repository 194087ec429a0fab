"""Issue 27 item 5: groups are isolated by construction (ADR 0196), on a real ``lcg serve``.

A group whose stream is a copy of another's (``cp -r .lcg/wal/a .lcg/wal/b``, generation
sidecar and all) made the service degraded for everyone at open ("op for group 'a' in a batch
of group 'b'": every read and write refused), and an event of b naming a row of a replaced
or, on a purge of b, deleted it. Now b is refused alone: health names b and group a, a
answers and takes writes, b's writes are refused; accepting the loss lets b be purged, and
a's entities, relationships, passages and vectors are all still there; ``lcg verify`` finds
a equal and reports b. The same when the copy sorts, and replays, first; and a follower of a
publication holding such copies stops them alone.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

import _service_fixtures as sf
from _service_fixtures import (
    HASH_ENV,
    eventually,
    short_tmp,
    spawn_serve,
    stop_serve,
    temp_workspace,
    wait_healthy,
)
from lcg.events.codec import seal
from lcg.events.guarded import ReadLimits
from lcg.extract.embedders import HashEmbedder
from lcg.replication import Follower, replica_config
from lcg.rpc.client import Client
from lcg.rpc.errors import DEGRADED, RemoteError, TransportError
from lcg.workspace import Workspace
from replica_support import open_publisher, write_batch

PASSAGE = "Alice rowed across the harbour at dawn"


def _settled(sock: Path, proc: Any) -> dict[str, Any]:
    """``health_check`` once the service is past ``initializing`` (polled, never a fixed wait)."""
    health: dict[str, Any] = {}

    def settled() -> bool:
        try:
            with Client(sock, timeout=60) as c:
                health.update(c.health_check())
        except TransportError:  # not bound yet
            return False
        return health["state"] != "initializing"

    eventually(settled, "lcg serve past initializing", proc=proc)
    return health


def _write_a(c: Client) -> None:
    c.call("knowledge_assert_entity", {"name": "Alice", "group_id": "a", "summary": "a keeper"})
    c.call("knowledge_assert_entity", {"name": "Harbour", "group_id": "a", "summary": "old port"})
    c.call(
        "knowledge_assert_relationship",
        {
            "source_name": "Alice",
            "target_name": "Harbour",
            "predicate": "KEEPS",
            "group_id": "a",
            "fact": "Alice keeps the harbour light",
        },
    )
    c.call(
        "knowledge_process_chunk",
        {"chunk_text": PASSAGE, "chunk_id": "log-1", "source_file": "log.md", "group_id": "a"},
    )


def _view(c: Client, group: str = "a") -> dict[str, Any]:
    """What ``group`` answers: its rows, and what its searches find (BM25 and vectors)."""
    nodes = c.call("knowledge_get_nodes_by_group", {"group_ids": [group]})["nodes"]
    edges = c.call("knowledge_get_edges_by_group", {"group_ids": [group]})["edges"]
    found = c.call("knowledge_find_entities", {"query": "Alice", "group_ids": [group]})
    facts = c.call("knowledge_find_relationships", {"query": "harbour", "group_ids": [group]})
    passages = c.call(
        "knowledge_search_passages", {"query": PASSAGE, "group_ids": [group], "min_score": 0.0}
    )
    assert not found.get("failed_groups") and not passages.get("failed_groups")
    return {
        "nodes": sorted((n["uuid"], n["name"], n["summary"], n["group_id"]) for n in nodes),
        "edges": sorted((e["uuid"], e["fact"], e["group_id"]) for e in edges),
        "found": [n["uuid"] for n in found["nodes"]][:1],
        "facts": [f["uuid"] for f in facts["facts"]],
        # The cosine of the passage with itself: its vector is there.
        "passages": [(p["uuid"], round(p["score"], 3)) for p in passages["passages"]][:1],
    }


def _assert_whole(view: dict[str, Any]) -> None:
    assert [n[1] for n in view["nodes"]] in (["Alice", "Harbour"], ["Harbour", "Alice"])
    assert len(view["edges"]) == 1 and len(view["facts"]) == 1 and len(view["found"]) == 1
    assert view["passages"] and view["passages"][0][1] == 1.0, view["passages"]


@pytest.fixture
def served_a() -> Iterator[tuple[Path, dict[str, Any]]]:
    """A workspace whose group a was written through a real service; a's view then."""
    with temp_workspace("lcg-iso-") as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = spawn_serve(ws)
        try:
            wait_healthy(sock, proc)
            with Client(sock, timeout=120) as c:
                _write_a(c)
                view = _view(c)
        finally:
            assert stop_serve(proc, sock) == 0
        _assert_whole(view)
        yield ws, view


def test_a_copied_stream_is_refused_alone_and_purging_it_spares_the_original(
    served_a: tuple[Path, dict[str, Any]], lcg_main: sf.LcgMain
) -> None:
    ws, before = served_a
    wal = ws / ".lcg" / "wal"
    shutil.copytree(wal / "a", wal / "b")  # the generation sidecar comes along
    assert (wal / "b" / ".wal-generation.json").is_file()
    sock = ws / ".lcg" / "service.sock"
    proc = spawn_serve(ws)
    try:
        health = _settled(sock, proc)
        assert health["state"] == "degraded", health
        assert "group 'b': event seq 0 (EntityAsserted) names group 'a'" in health["reason"]
        assert "group 'a' is untouched" in health["reason"]
        with Client(sock, timeout=120) as c:
            groups = c.call("knowledge_status", {})["wal_groups"]
            assert groups["a"]["degraded_reason"] is None
            assert groups["a"]["hydration_status"] == "hydrated"
            assert "names group 'a'" in groups["b"]["degraded_reason"]
            assert _view(c) == before  # a answers as before the copy
            c.call("knowledge_assert_entity", {"name": "Carol", "group_id": "a"})
            before = _view(c)
            for method, params in (
                ("knowledge_assert_entity", {"name": "Mallory", "group_id": "b"}),
                ("knowledge_delete_by_group", {"group_ids": ["b"], "confirm": True}),
            ):
                with pytest.raises(RemoteError) as refused:
                    c.call(method, params)
                assert refused.value.code == DEGRADED
                assert "writes to group 'b' are refused" in str(refused.value.data)
        # A replay meets the same lines; accepting the loss skips what names group a.
        again = lcg_main(ws, "replay", "--group", "b", "--force-clear", "--json")
        assert again.returncode == 1 and json.loads(again.stdout)["success"] is False
        accepted = lcg_main(ws, "replay", "--group", "b", "--force-clear", "--accept-loss")
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
        with Client(sock, timeout=120) as c:
            assert c.health_check()["state"] == "healthy"
            c.call("knowledge_delete_by_group", {"group_ids": ["b"], "confirm": True})
            assert _view(c) == before  # entities, edges, passages and vectors all there
            assert c.call("knowledge_get_nodes_by_group", {"group_ids": ["b"]})["nodes"] == []
    finally:
        assert stop_serve(proc, sock) == 0
    verified = lcg_main(ws, "verify")
    assert verified.returncode == 1, verified.stdout
    lines = verified.stdout.splitlines()
    assert any(line.startswith("a ") and line.endswith(": ok") for line in lines), lines
    assert "the replay stops: group 'b': event seq 0" in verified.stdout


def test_a_copy_that_replays_first_is_refused_and_the_original_loads(
    served_a: tuple[Path, dict[str, Any]], lcg_main: sf.LcgMain
) -> None:
    source, before = served_a
    ws = short_tmp("lcg-iso-")
    try:
        # A fresh workspace whose streams are a and its copy, named to sort (and replay) first.
        wal = ws / ".lcg" / "wal"
        shutil.copytree(source / ".lcg" / "wal" / "a", wal / "a")
        shutil.copytree(source / ".lcg" / "wal" / "a", wal / "B-copy")
        sock = ws / ".lcg" / "service.sock"
        proc = spawn_serve(ws)
        try:
            health = _settled(sock, proc)
            assert health["state"] == "degraded", health
            assert (
                "group 'B-copy': event seq 0 (EntityAsserted) names group 'a'" in (health["reason"])
            )
            with Client(sock, timeout=120) as c:
                assert c.call("knowledge_status", {})["wal_groups"]["a"]["degraded_reason"] is None
                assert _view(c) == before
                c.call("knowledge_assert_entity", {"name": "Carol", "group_id": "a"})
        finally:
            assert stop_serve(proc, sock) == 0
        verified = lcg_main(ws, "verify")
        lines = verified.stdout.splitlines()
        assert any(line.startswith("a ") and line.endswith(": ok") for line in lines), lines
        assert "degraded: group 'B-copy'" in verified.stdout
    finally:
        shutil.rmtree(ws, ignore_errors=True)


def _rewritten(src: Path, dst: Path, group: str) -> None:
    """``src``'s stream as a hostile publisher rewrites it for ``group``: each line's group
    changed and its checksum redone, the sidecars copied."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".writer*"))
    for segment in dst.glob("*.jsonl"):
        lines = []
        for line in segment.read_bytes().splitlines():
            raw = json.loads(line)
            raw.pop("crc32")
            raw["group_id"] = group
            lines.append(seal(msgspec.json.encode(raw)))
        segment.write_bytes(b"".join(lines))


def test_a_follower_stops_the_copies_alone(tmp_path: Path) -> None:
    pub = open_publisher(tmp_path / "pubws")
    try:
        write_batch(pub, "a", 3)
        publication = tmp_path / "publication"
        shutil.copytree(
            pub.store.group_dir("a"), publication / "a", ignore=shutil.ignore_patterns(".writer*")
        )
        shutil.copytree(publication / "a", publication / "b")
        _rewritten(publication / "a", publication / "c", "c")
        config = replica_config(tmp_path / "replica", publication, env=HASH_ENV)
        ws = Workspace(config, HashEmbedder(), publication=ReadLimits())
        try:
            follower = Follower(ws, source_label=str(publication))
            for _ in range(2):  # stopped again on the next pass, a still following
                statuses = follower.sync()
                assert statuses["a"].state == "following", statuses["a"].reason
                assert ws.digests("a") == pub.digests("a")
                assert statuses["b"].state == "stopped"
                assert "group 'b': event seq 0" in (statuses["b"].reason or "")
                assert "names group 'a'" in (statuses["b"].reason or "")
                assert statuses["c"].state == "stopped"
                assert "which group 'a' holds" in (statuses["c"].reason or "")
        finally:
            ws.close()
    finally:
        pub.close()
