"""The vector backlog counts only a lag that exists (ADR 0201, 0206): when any write's
catch-up makes a group's vectors whole — not only the background drainer's step — the group's
count ends with it. Before, a sync that left its vectors to the drainer, followed at once by a
write that embedded inline, left ``vectors_pending`` at its count forever (at 0 vectors/s) in
health, ``lcg status`` and the searches' notes. Real workspace, hash embedder (TEST DOUBLE)."""

from __future__ import annotations

from pathlib import Path

from lcg.config import Config
from lcg.ingest.sources import ChunkIn, sync_chunks
from lcg.workspace import Workspace

G = "backlog"
WHEN = "2024-05-01T12:00:00Z"
ENV = {"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off", "LCG_WAL_FSYNC": "off"}


def _chunk(i: int) -> ChunkIn:
    return ChunkIn(
        chunk_id=f"notes/n{i}.md#{i:012x}",
        source_file=f"notes/n{i}.md",
        chunk_text=f"note {i} about the orbit",
        reference_time=WHEN,
    )


def test_a_write_that_catches_the_vectors_up_ends_the_backlog(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace.open(Config.from_env(root, env={**ENV, "LIMINIS_WORKSPACE_ROOT": str(root)}))
    try:
        backlog = ws.vectors.backlog
        backlog.drained_in_background = True  # as a service does: vectors left to its drainer
        done = sync_chunks(ws, G, [_chunk(i) for i in range(3)], [])
        assert done.vectors_deferred == 3
        assert backlog.pending() == {G: 3} and backlog.total() == 3
        # A write that embeds inline (no drainer: as a one-shot command) catches the group's
        # vectors up in its own catch-up.
        backlog.drained_in_background = False
        sync_chunks(ws, G, [_chunk(3)], [])
        assert G not in ws.projector.embedder_failures
        assert backlog.pending() == {} and backlog.total() == 0
    finally:
        ws.close()
