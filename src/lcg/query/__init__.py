"""The query side: what reads the projections for clients — hybrid search and its ranking
(time priors, passage rules, current truth, group isolation), the Cypher guard and the
sandbox that runs clients' Cypher, and the graph reads the read methods answer with.

It stands above ``lcg.projections`` (the write side, which never imports it) and
``lcg.workspace`` (it opens its sandbox on an open workspace); ``ingest``, ``eval`` and
``rpc`` read through it (ADR 0226). The face is lazy (as ``lcg.rpc``'s): a name is imported
from its module on first use, so the sandbox's worker, started as
``lcg.query.sandbox.zygote``, loads no search and no workspace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lcg.lazy import lazy_face

if TYPE_CHECKING:
    from lcg.query import reads as graph_reads
    from lcg.query.cypher import check_read_only
    from lcg.query.open_sandbox import open_cypher_sandbox
    from lcg.query.sandbox import CypherSandbox, SandboxLimits, Target
    from lcg.query.search import (
        DEFAULT_HALF_LIFE_DAYS,
        DEFAULT_WEIGHTS,
        FUSIONS,
        FloorReport,
        PassageRow,
        PassageWeights,
        Searcher,
        is_file_chunk,
        parse_time,
        rrf_fuse,
    )

__all__ = [
    "DEFAULT_HALF_LIFE_DAYS",
    "DEFAULT_WEIGHTS",
    "FUSIONS",
    "CypherSandbox",
    "FloorReport",
    "PassageRow",
    "PassageWeights",
    "SandboxLimits",
    "Searcher",
    "Target",
    "check_read_only",
    "graph_reads",
    "is_file_chunk",
    "open_cypher_sandbox",
    "parse_time",
    "rrf_fuse",
]

#: Module holding each name of the face; the names of ``_NAMESPACES`` are that module
#: itself (``graph_reads``: the graph reads, a namespace, ``lcg.query.reads``).
_HOMES: dict[str, str] = {
    "CypherSandbox": "lcg.query.sandbox",
    "DEFAULT_HALF_LIFE_DAYS": "lcg.query.search",
    "DEFAULT_WEIGHTS": "lcg.query.search",
    "FUSIONS": "lcg.query.search",
    "FloorReport": "lcg.query.search",
    "PassageRow": "lcg.query.search",
    "PassageWeights": "lcg.query.search",
    "SandboxLimits": "lcg.query.sandbox",
    "Searcher": "lcg.query.search",
    "Target": "lcg.query.sandbox",
    "check_read_only": "lcg.query.cypher",
    "graph_reads": "lcg.query.reads",
    "is_file_chunk": "lcg.query.search",
    "open_cypher_sandbox": "lcg.query.open_sandbox",
    "parse_time": "lcg.query.search",
    "rrf_fuse": "lcg.query.search",
}
_NAMESPACES: frozenset[str] = frozenset({"graph_reads"})


__getattr__, __dir__ = lazy_face(__name__, _HOMES, __all__, modules=_NAMESPACES)
