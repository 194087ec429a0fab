"""Names are found by their lookup key (ADR 0151), also in streams an older lcg wrote.

Before names were keyed, ``ΟΔΥΣΣΕΥΣ`` asserted twice made two entities. Such a stream replays
as it is (events are facts: both entities stay); a lookup by the name resolves to the older
one, the same after every replay, and asserting the name again updates it instead of being
refused as a rename onto a taken name. Real Kuzu and real streams; the hash embedder is a TEST
DOUBLE.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from lcg.config import Config
from lcg.events.model import EntityAsserted, EntityRecord
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion
from lcg.ingest.resolution import GroupLookup, name_key
from lcg.projections.graph import records as gr
from lcg.workspace import Workspace

GROUP = "greek"
OLDER = "00000000-0000-4000-8000-000000000001"
YOUNGER = "00000000-0000-4000-8000-000000000002"


def _legacy_duplicates(ws: Workspace) -> None:
    """What an older lcg recorded for ``ΟΔΥΣΣΕΥΣ`` asserted twice: two entities."""
    for uuid, name, at in (
        (YOUNGER, "ΟΔΥΣΣΕΥΣ", "2024-01-02T00:00:00.000000Z"),
        (OLDER, "ΟΔΥΣΣΕΥΣ", "2024-01-01T00:00:00.000000Z"),
    ):
        entity = EntityRecord(uuid=uuid, name=name, labels=["Entity"], created_at=at)
        ws.commit(GROUP, [EntityAsserted(group_id=GROUP, entity=entity, created=True)])


def _resolved(ws: Workspace) -> tuple[list[str], str | None]:
    with ws.reading():
        by_name = [e.uuid for e in gr.entities_by_name(ws.graph, GROUP, "οδυσσευς")]
        lookup = GroupLookup(ws, GROUP, lambda _name: None)
        match = lookup.resolve("Οδυσσευς", use_vectors=False)
    return by_name, None if match is None else match.candidate.uuid


def test_legacy_duplicates_replay_and_resolve_to_the_older_one(tmp_path: Path) -> None:
    config = Config.from_env(tmp_path, env={"LCG_EMBEDDER": "hash"})
    with Workspace.open(config, HashEmbedder()) as ws:
        _legacy_duplicates(ws)
        digests = ws.digests(GROUP)
        assert _resolved(ws) == ([OLDER, YOUNGER], OLDER)
    shutil.rmtree(config.db_dir)  # the graph is rebuilt from the stream at open
    with Workspace.open(config, HashEmbedder()) as ws:
        assert ws.digests(GROUP) == digests
        assert _resolved(ws) == ([OLDER, YOUNGER], OLDER)
        again = assertion.assert_entity(ws, name="ΟΔΥΣΣΕΥΣ", group_id=GROUP, summary="king")
        assert (again.entity_uuid, again.created) == (OLDER, False)


def test_the_resolution_key_folds_as_the_lookup_key() -> None:
    # The extraction's exact rule: NFKC and whitespace on top of the same NFC + casefold.
    assert name_key("ΟΔΥΣΣΕΥΣ") == name_key("οδυσσευς") == "οδυσσευσ"
    assert name_key("Zoe\u0308") == name_key("Zoë")
    assert name_key("J\u030c") == name_key("ǰ") == "ǰ"  # folded to j + U+030C, then NFC
    assert name_key("İstanbul") == name_key("İSTANBUL") != name_key("istanbul")
