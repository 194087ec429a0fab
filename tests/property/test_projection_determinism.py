"""Replay determinism: random writes applied incrementally, with the workspace closed and
reopened at random points, give the same three digests as one full replay of the stream."""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion, deletion, episodes, merge
from lcg.workspace import Workspace

NAMES = ["Ada", "Grace", "Linus", "Margaret", "Ken", "Barbara"]
PREDICATES = ["KNOWS", "WORKS_WITH", "MENTORS"]

op = st.one_of(
    st.tuples(st.just("entity"), st.sampled_from(NAMES), st.text(max_size=20)),
    st.tuples(
        st.just("edge"),
        st.sampled_from(NAMES),
        st.sampled_from(NAMES),
        st.sampled_from(PREDICATES),
    ),
    st.tuples(
        st.just("episode"),
        st.sampled_from(["c1", "c2", "c3", "c4"]),
        st.text(min_size=1, max_size=40),
    ),
    st.tuples(st.just("delete_chunk"), st.sampled_from(["c1", "c2", "c3", "c4"])),
    st.tuples(st.just("merge"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(
        st.just("purge"),
    ),
    st.tuples(
        st.just("reopen"),
    ),
)


def _config(ws: Path) -> Config:
    return Config.from_env(ws, env={"LCG_EMBEDDER": "hash", "LCG_WAL_MAX_EVENTS_PER_FILE": "7"})


def _apply(ws: Workspace, step: tuple[object, ...]) -> None:
    kind = step[0]
    g = "grp"
    if kind == "entity":
        assertion.assert_entity(ws, name=str(step[1]), group_id=g, summary=str(step[2]))
    elif kind == "edge":
        src, dst, pred = str(step[1]), str(step[2]), str(step[3])
        for name in (src, dst):
            if assertion.resolve_entity_by_name(ws, g, name) is None:
                assertion.assert_entity(ws, name=name, group_id=g)
        assertion.assert_relationship(
            ws, source_name=src, target_name=dst, predicate=pred, group_id=g
        )
    elif kind == "episode":
        episodes.process_chunk(
            ws, chunk_text=str(step[2]), chunk_id=str(step[1]), source_file="f.txt", group_id=g
        )
    elif kind == "delete_chunk":
        deletion.delete_chunk_episode(ws, str(step[1]), [g])
    elif kind == "merge":
        merge.merge_entities(
            ws, group_id=g, canonical_name=str(step[1]), alias_names=[str(step[2])]
        )
    elif kind == "purge":
        deletion.delete_by_group(ws, [g], confirm=True, dry_run=False)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(op, min_size=1, max_size=14))
def test_incremental_equals_full_replay(
    tmp_path_factory: object, steps: list[tuple[object, ...]]
) -> None:
    root = Path(tmp_path_factory.mktemp("det"))  # type: ignore[attr-defined]
    cfg = _config(root)
    ws = Workspace.open(cfg, HashEmbedder())
    try:
        for step in steps:
            if step[0] == "reopen":
                ws.close()
                ws = Workspace.open(cfg, HashEmbedder())
            else:
                _apply(ws, step)
        incremental = ws.digests("grp")
    finally:
        ws.close()
    for sub in ("db", "text", "vectors", "cache"):
        shutil.rmtree(root / ".lcg" / sub, ignore_errors=True)
    with Workspace.open(cfg, HashEmbedder()) as fresh:
        assert fresh.digests("grp") == incremental
