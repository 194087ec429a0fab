"""Issue 23 item 1 through a real ``lcg serve``: no time a client can send poisons a group.

A relationship valid from year 0001 (the zero time many programs emit for "unknown") and a
chunk of year 0999 were acknowledged, then could never be applied (``strftime("%Y")`` wrote
them unpadded): every later write to the group was refused, ``lcg replay --force-clear``
failed, passage search failed for every group, and ``lcg wal verify`` said ok. Offsets that
carry years 1 and 9999 past the calendar in UTC were -32603. ADR 0150.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from _service_fixtures import spawn_serve, stop_serve, temp_workspace, wait_healthy
from lcg.rpc.client import Client
from lcg.rpc.errors import INVALID_PARAMS, RemoteError

GROUP = "liminis"
FIXTURES = Path(__file__).resolve().parents[2] / "wal-fixtures"


def _healthy(c: Client) -> None:
    health = c.call("health_check", {})
    assert health["state"] == "healthy", health


def _edges(c: Client, group: str = GROUP) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = c.call("knowledge_get_edges_by_group", {"group_ids": [group]})[
        "edges"
    ]
    return found


def test_year_0001_and_0999_are_applied_and_the_group_keeps_writing(lcg_main: sf.LcgMain) -> None:
    with temp_workspace() as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = spawn_serve(ws)
        try:
            wait_healthy(sock, proc)
            with Client(sock, timeout=60) as c:
                for name in ("Ada", "Bob"):
                    c.call("knowledge_assert_entity", {"name": name})
                made = c.call(
                    "knowledge_assert_relationship",
                    {
                        "source_name": "Ada",
                        "target_name": "Bob",
                        "predicate": "KNOWS",
                        "valid_at": "0001-01-01T00:00:00Z",
                    },
                )
                c.call(
                    "knowledge_process_chunk",
                    {
                        "chunk_text": "The annals of the year 999 mention a comet.",
                        "chunk_id": "annals-1",
                        "source_file": "annals.txt",
                        "group_id": "annals",
                        "reference_time": "0999-01-01T00:00:00Z",
                    },
                )
                # Applied: the rows are there, in four-digit years, and the groups stay healthy.
                (edge,) = _edges(c)
                assert edge["uuid"] == made["edge_uuid"]
                assert edge["valid_at"].startswith("0001-01-01")
                _healthy(c)
                # The groups keep taking writes, and passage search (no group_ids: every
                # group) answers with the year-999 chunk.
                c.call("knowledge_assert_entity", {"name": "Carol"})
                c.call(
                    "knowledge_process_chunk",
                    {
                        "chunk_text": "A second comet, a year later.",
                        "chunk_id": "annals-2",
                        "source_file": "annals.txt",
                        "group_id": "annals",
                    },
                )
                passages = c.call("knowledge_search_passages", {"query": "comet", "min_score": 0.0})
                assert {"annals-1", "annals-2"} <= {p["name"] for p in passages["passages"]}
                _healthy(c)
            # The stream holds the one spelling, and replays onto the running service.
            line = next((ws / ".lcg" / "wal" / GROUP).glob("*.jsonl")).read_text()
            assert '"valid_at":"0001-01-01T00:00:00.000000Z"' in line
            for group in (GROUP, "annals"):
                replay = lcg_main(ws, "replay", "--group", group, "--force-clear")
                assert replay.returncode == 0, replay.stdout + replay.stderr
            verified = lcg_main(ws, "wal", "verify")
            assert verified.returncode == 0, verified.stdout
            with Client(sock, timeout=60) as c:
                (edge,) = _edges(c)
                assert edge["valid_at"].startswith("0001-01-01")
                _healthy(c)
        finally:
            stop_serve(proc, sock)


#: Each method and the parameters that put a time past the calendar once converted to UTC.
OVERFLOWS = [
    (method, key, {**params, key: value})
    for value in ("9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00")
    for method, params, key in (
        (
            "knowledge_assert_relationship",
            {"source_name": "Ada", "target_name": "Bob", "predicate": "KNOWS"},
            "valid_at",
        ),
        (
            "knowledge_add_cross_group_edge",
            {"source": {"uuid": "-"}, "target": {"uuid": "-"}, "name": "KNOWS"},
            "valid_at",
        ),
        (
            "knowledge_process_chunk",
            {"chunk_text": "t", "chunk_id": "c", "source_file": "f.txt"},
            "reference_time",
        ),
        ("knowledge_add_episode", {"name": "n", "episode_body": "t"}, "reference_time"),
        ("knowledge_search_passages", {"query": "t"}, "as_of"),
    )
]


def test_times_past_the_calendar_in_utc_are_invalid_params() -> None:
    with temp_workspace() as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = spawn_serve(ws)
        try:
            wait_healthy(sock, proc)
            with Client(sock, timeout=60) as c:
                ada = c.call("knowledge_assert_entity", {"name": "Ada"})["entity_uuid"]
                c.call("knowledge_assert_entity", {"name": "Bob"})
                for method, key, params in OVERFLOWS:
                    if method == "knowledge_add_cross_group_edge":
                        params = {**params, "source": {"uuid": ada}, "target": {"uuid": ada}}
                    with pytest.raises(RemoteError) as refused:
                        c.call(method, params)
                    assert refused.value.code == INVALID_PARAMS, (method, refused.value)
                    assert key in str(refused.value), refused.value  # names the field
                _healthy(c)
            # Nothing was appended: two entities, no more lines.
            line_count = sum(
                len(p.read_bytes().splitlines()) for p in (ws / ".lcg" / "wal").rglob("*.jsonl")
            )
            assert line_count == 2
        finally:
            stop_serve(proc, sock)


def test_a_stream_written_with_unpadded_years_replays(lcg_main: sf.LcgMain) -> None:
    with temp_workspace() as ws:
        shutil.copytree(FIXTURES / "unpadded-years" / "wal", ws / ".lcg" / "wal")
        sock = ws / ".lcg" / "service.sock"
        proc = spawn_serve(ws)
        try:
            wait_healthy(sock, proc)
            with Client(sock, timeout=60) as c:
                _healthy(c)
                (edge,) = _edges(c)
                assert edge["valid_at"].startswith("0001-01-01")
                passages = c.call(
                    "knowledge_search_passages", {"query": "annals", "min_score": 0.0}
                )
                (passage,) = passages["passages"]
                assert passage["name"] == "old-chunk"
                c.call("knowledge_assert_entity", {"name": "Carol"})  # the group takes writes
            replay = lcg_main(ws, "replay", "--group", GROUP, "--force-clear")
            assert replay.returncode == 0, replay.stdout + replay.stderr
            # The old lines stay as they were written: upcast on read, never rewritten.
            on_disk = (ws / ".lcg" / "wal" / GROUP / "000000000000.jsonl").read_bytes()
            assert b'"valid_at":"1-01-01T00:00:00.000000Z"' in on_disk
        finally:
            stop_serve(proc, sock)


def test_wal_verify_reports_a_line_no_projection_can_apply(lcg_main: sf.LcgMain) -> None:
    with temp_workspace() as ws:
        shutil.copytree(FIXTURES / "unappliable-time" / "wal", ws / ".lcg" / "wal")
        shown = lcg_main(ws, "wal", "verify")
        assert shown.returncode == 1, shown.stdout
        assert "1 failed lines" in shown.stdout
        # By seq and file:line, with the field and what it must be.
        assert "seq 1" in shown.stdout and "000000000000.jsonl:2" in shown.stdout
        assert "$.edge.valid_at" in shown.stdout and "0001-9999" in shown.stdout
