"""The Cypher sandbox of an open workspace: its read model's place, limits and targets."""

from __future__ import annotations

from lcg.events import LCG_DIR
from lcg.query.sandbox import CypherSandbox, SandboxLimits, Target
from lcg.workspace import Workspace

__all__ = ["CYPHER_DIR", "open_cypher_sandbox"]

#: The sandbox's read model, under ``.lcg/`` (derived from the streams, so disposable: a
#: damaged one is deleted and rebuilt; a restart reopens it and applies only what is new).
CYPHER_DIR = "cypher"


def open_cypher_sandbox(ws: Workspace, *, start: bool = True) -> CypherSandbox:
    """The sandbox of ``ws``, its worker started now (``start``) or by the first query; every
    purge of the service's graph is passed on to it."""

    def targets() -> dict[str, Target]:
        out: dict[str, Target] = {}
        for group_id, (seq, generation) in ws.graph.committed_positions().items():
            floor = ws.projector.cleared_through(group_id)
            out[group_id] = Target(generation, seq, -1 if floor is None else floor)
        return out

    sandbox = CypherSandbox(
        ws.config.workspace / LCG_DIR / CYPHER_DIR,
        ws.config.wal_dir,
        targets,
        SandboxLimits(memory_mb=ws.config.cypher_memory_mb, max_bytes=ws.config.cypher_max_bytes),
    )
    ws.graph.on_purge = sandbox.mark_dirty
    if start:
        sandbox.start()
    return sandbox
