"""An entity page's reads (issue 32 item 3, ADR 0224 addendum): whatever the size of its
neighbourhood, the page asks the service three bounded reads — the centre, its first hop and
one read for the second hop of all the neighbours it draws — never one read per neighbour.

The page's entity view runs in the test's process against a real ``lcg serve`` holding the
vault ``lcg ingest`` synced; its reads go over the real socket, counted on the way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _ui_fixtures as uf
from lcg.ui.entity import entity_route
from lcg.ui.reads import Reads
from lcg.ui.site import Query, Site


class _Counted(Reads):
    """The page's reads, each call recorded (method, parameters) before it is sent."""

    def __init__(self, socket_path: Path) -> None:
        super().__init__(socket_path)
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.asked.append((method, dict(params or {})))
        return super().call(method, params)


@pytest.fixture(scope="module")
def run() -> Iterator[uf.UiRun]:
    with uf.ui_run() as r:
        yield r


@pytest.mark.parametrize("named_group", [True, False])
def test_an_entity_page_asks_three_reads_however_many_neighbours(
    run: uf.UiRun, named_group: bool
) -> None:
    base = run.entity("Moon Base")
    reads = _Counted(run.workspace / ".lcg" / "service.sock")
    try:
        site = Site(run.workspace, reads)
        params = {"group": uf.GROUP} if named_group else {}
        answer = entity_route(site, Query(params, f"{base['uuid']}/graph.json"))
    finally:
        reads.close()
    assert answer.status == 200
    graph = answer.body.decode()
    assert '"Regolith"' in graph  # two hops: Moon Base -> Oxygen Plant -> Regolith
    methods = sorted(m for m, _ in reads.asked)
    assert methods == [
        "knowledge_get_entities_by_uuids",
        "knowledge_get_entities_neighbors",
        "knowledge_get_entities_neighbors",
    ], reads.asked
    hops = [p for m, p in reads.asked if m == "knowledge_get_entities_neighbors"]
    assert [len(p["entity_uuids"]) for p in hops][0] == 1
    assert len(hops[1]["entity_uuids"]) >= 3, hops  # every neighbour drawn, in one read
    assert all(p["group_ids"] == [uf.GROUP] for p in hops)
