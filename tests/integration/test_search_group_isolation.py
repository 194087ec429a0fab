"""Issue 23 item 2 on a real ``lcg serve``: one group's data never breaks another group's reads.

A group's text projection is damaged the way the issue's ``0999-01-01`` chunk damaged it: a
passage's stored reference time no longer parses, so that group's part of every passage
search raises. The damage is written by the text projection's own code (so any checksum it
keeps is valid) while the service is stopped; the stream is untouched. Searching many groups
then answers the healthy group's hits and names the broken group in ``failed_groups`` (ADR
0151); it used to fail the whole call. The hash embedder is a TEST DOUBLE; Kuzu, the socket
and the projections are real.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _service_fixtures import RawConnection, spawn_serve, stop_serve, temp_workspace, wait_healthy
from lcg.projections.ops import TIME_PART, Upsert
from lcg.projections.text import TextProjection

TEXT = "the lighthouse keeper wrote a long letter about the storm"
QUERY = "lighthouse keeper letter"
#: The passages' cosines under the hash embedder are under the default floor of 0.5 (ADR 0173);
#: these tests are of the groups' isolation, so every passage is kept.
FLOOR = {"min_score": 0.0}


def _chunk(c: RawConnection, group: str) -> None:
    c.result(
        "knowledge_process_chunk",
        {
            "chunk_text": TEXT,
            "chunk_id": f"{group}#0",
            "source_file": f"{group}.txt",
            "reference_time": "2024-05-01T09:00:00Z",
            "group_id": group,
        },
    )


def _damage_times(ws: Path, group: str, uuid: str) -> None:
    """Give one passage of ``group`` a stored reference time that does not parse, through the
    text projection's own apply and save (its position is kept)."""
    text = TextProjection(ws / ".lcg" / "text")
    try:
        pos = text.position(group)
        seq, generation = pos.seq, pos.generation
        assert seq is not None and generation is not None
        op = Upsert(kind="episode", group_id=group, uuid=uuid, parts={TIME_PART: "not a time"})
        text.apply(group, generation, seq, [op])
    finally:
        text.close()


@pytest.fixture(scope="module")
def service() -> Iterator[RawConnection]:
    with temp_workspace("lcg-iso-") as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = spawn_serve(ws)
        try:
            wait_healthy(sock, proc)
            with RawConnection(sock) as c:
                for group in ("good", "broken"):
                    _chunk(c, group)
                    c.result("knowledge_assert_entity", {"name": "Keeper", "group_id": group})
                found = c.result("knowledge_search_passages", {"query": QUERY, **FLOOR})
                assert sorted(p["group_id"] for p in found["passages"]) == ["broken", "good"]
                assert "failed_groups" not in found  # absent when every group answered
                broken = next(p["uuid"] for p in found["passages"] if p["group_id"] == "broken")
        finally:
            assert stop_serve(proc, sock) == 0
        _damage_times(ws, "broken", broken)
        proc = spawn_serve(ws)
        try:
            wait_healthy(sock, proc)
            with RawConnection(sock) as c:
                yield c
        finally:
            stop_serve(proc, sock)


def _answer(c: RawConnection, params: dict[str, Any]) -> dict[str, Any]:
    answer = c.request("knowledge_search_passages", {"query": QUERY, **FLOOR, **params})
    assert "result" in answer, answer  # before ADR 0151: an error for every group
    return dict(answer["result"])


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"group_ids": ["good", "broken"]},
        {"fusion": "rrf", "valid_after": "2020-01-01T00:00:00Z"},
        {"as_of": "2025-01-01T00:00:00Z", "recency_half_life_days": 30},
    ],
    ids=["every-group", "both-named", "rrf-bounded", "weighted-as-of"],
)
def test_a_broken_group_is_named_and_the_others_answer(
    service: RawConnection, params: dict[str, Any]
) -> None:
    result = _answer(service, params)
    assert [p["group_id"] for p in result["passages"]] == ["good"]
    assert result["count"] == 1
    (failed,) = result["failed_groups"]
    assert failed["group_id"] == "broken"
    assert "not a time" in failed["reason"]
    assert "lcg replay --group broken --force-clear" in failed["reason"]


def test_a_search_of_the_broken_group_alone_still_fails(service: RawConnection) -> None:
    # Nothing answered: the failure is the call's own (as before), not an empty success.
    answer = service.request("knowledge_search_passages", {"query": QUERY, "group_ids": "broken"})
    assert "error" in answer, answer


def test_reads_that_do_not_touch_the_damage_are_unchanged(service: RawConnection) -> None:
    # The entity search reads no passage times: both groups answer, no failed_groups key.
    result = service.result("knowledge_find_entities", {"query": "Keeper"})
    assert sorted(n["group_id"] for n in result["nodes"]) == ["broken", "good"]
    assert "failed_groups" not in result
    healthy = _answer(service, {"group_ids": ["good"]})
    assert [p["group_id"] for p in healthy["passages"]] == ["good"]
    assert "failed_groups" not in healthy
