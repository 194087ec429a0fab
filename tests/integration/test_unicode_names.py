"""Issue 23 item 7 on a real ``lcg serve``: Unicode names match as people mean them.

``ΟΔΥΣΣΕΥΣ`` asserted twice made two entities, and a relationship naming it was never found
(Kuzu's ``lower()`` and Python's disagree on the final sigma; ``İstanbul`` likewise); ``Zoë``
as NFC and as NFD were two entities; the group ``grüppe`` as NFC and as NFD were two streams
that status printed alike. Names are now found by one key folded in Python (NFC + casefold,
ADR 0151) and group ids enter in NFC. The hash embedder is a TEST DOUBLE; Kuzu, the socket,
the streams and the subprocess are real.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _service_fixtures import RawConnection, spawn_serve, stop_serve, temp_workspace, wait_healthy
from lcg.events.groups import list_groups


def nfd(text: str) -> str:
    """``text`` decomposed (as macOS file names spell it)."""
    return unicodedata.normalize("NFD", text)


def nfc(text: str) -> str:
    """``text`` composed."""
    return unicodedata.normalize("NFC", text)


class Service:
    """A running ``lcg serve`` and one connection to it."""

    def __init__(self, ws: Path, conn: RawConnection) -> None:
        self.ws = ws
        self.conn = conn

    def entity(self, name: str, group: str = "liminis", **extra: Any) -> dict[str, Any]:
        """Assert an entity; its result."""
        params = {"name": name, "group_id": group, **extra}
        return dict(self.conn.result("knowledge_assert_entity", params))

    def names(self, group: str = "liminis") -> list[str]:
        """The names of a group's entities, sorted."""
        nodes = self.conn.result("knowledge_get_nodes_by_group", {"group_ids": [group]})["nodes"]
        return sorted(n["name"] for n in nodes)


@pytest.fixture(scope="module")
def svc() -> Iterator[Service]:
    with temp_workspace("lcg-uni-") as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = spawn_serve(ws)
        try:
            wait_healthy(sock, proc)
            with RawConnection(sock) as c:
                yield Service(ws, c)
        finally:
            stop_serve(proc, sock)


@pytest.mark.parametrize(
    ("first", "again", "group"),
    [
        ("ΟΔΥΣΣΕΥΣ", "ΟΔΥΣΣΕΥΣ", "greek"),  # Kuzu: …σ, Python lower(): …ς
        ("ΟΔΥΣΣΕΥΣ", "οδυσσευς", "greek-lower"),  # the final sigma typed in lowercase
        ("İstanbul", "İstanbul", "turkish"),  # Kuzu: i, Python: i + U+0307
        ("İstanbul", "İSTANBUL", "turkish-upper"),
        (nfc("Zoë"), nfd("Zoë"), "nfc-nfd"),
        ("Straße", "STRASSE", "eszett"),  # full case folding: ß is ss
    ],
    ids=["sigma-twice", "sigma-lower", "dotted-i-twice", "dotted-i-upper", "zoe-nfd", "eszett"],
)
def test_one_name_however_spelled_is_one_entity(
    svc: Service, first: str, again: str, group: str
) -> None:
    made = svc.entity(first, group)
    found = svc.entity(again, group)
    assert made["created"] is True
    assert found["created"] is False and found["entity_uuid"] == made["entity_uuid"]
    assert svc.names(group) == [again]  # one entity; its name as last given, not folded


def test_a_relationship_finds_its_endpoints_by_the_folded_name(svc: Service) -> None:
    odysseus = svc.entity("ΟΔΥΣΣΕΥΣ", "odyssey")["entity_uuid"]
    istanbul = svc.entity("İstanbul", "odyssey")["entity_uuid"]
    ithaca = svc.entity("Ithaca", "odyssey")["entity_uuid"]
    for source, target in (("ΟΔΥΣΣΕΥΣ", "Ithaca"), ("οδυσσευς", "İSTANBUL")):
        answer = svc.conn.request(
            "knowledge_assert_relationship",
            {
                "source_name": source,
                "target_name": target,
                "predicate": "SAILED_TO",
                "group_id": "odyssey",
            },
        )
        assert "result" in answer, answer  # used to be "source entity … not found"
    edges = svc.conn.result("knowledge_get_edges_by_group", {"group_ids": ["odyssey"]})["edges"]
    ends = sorted((e["source_node_uuid"], e["target_node_uuid"]) for e in edges)
    assert ends == sorted([(odysseus, ithaca), (odysseus, istanbul)])


def test_a_group_id_in_nfc_and_in_nfd_is_one_group(svc: Service) -> None:
    composed, decomposed = nfc("grüppe"), nfd("grüppe")
    assert composed != decomposed
    svc.entity("Anna", composed)
    svc.entity("Bert", decomposed)
    assert svc.names(composed) == ["Anna", "Bert"]
    assert svc.names(decomposed) == ["Anna", "Bert"]
    status = svc.conn.result("knowledge_status", {})
    spelled = [g for g in status["wal_groups"] if nfc(g) == composed]
    assert spelled == [composed]  # one stream, named in NFC
    assert [g for g in list_groups(svc.ws / ".lcg" / "wal") if nfc(g) == composed] == [composed]
