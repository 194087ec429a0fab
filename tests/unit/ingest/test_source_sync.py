"""The workspace side of a source sync (``ingest/sources``): which episodes belong to a tree,
what one batch records, and what a whole sync does for a new, edited, unchanged or shrunk tree.
Real workspace (one per module, a group per test) and real files; the hash embedder and the
scripted extractor are TEST DOUBLES. The pure plan is tested in ``test_sources.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lcg.errors import InvalidParamsError
from lcg.events.model import EpisodeAdded, EpisodesDeleted, Event
from lcg.extract.extractor import ExtractionOutput
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest import episodes
from lcg.ingest.extraction import ExtractionService
from lcg.ingest.sources import (
    ChunkIn,
    DirectBackend,
    RemovalIn,
    SyncProgress,
    source_manifest,
    sync_chunks,
    sync_tree,
    tree_scope,
)
from lcg.ingest.sources.sync import ADD_BATCH_CHUNKS
from lcg.ingest.sources.tree import TreeScope, is_source_chunk
from lcg.workspace import Workspace

WHEN = "2024-03-01T10:00:00Z"
ID_A = "notes/a.md#0123456789ab"
ID_B = "notes/a.md#ba9876543210"


def _events(ws: Workspace, group_id: str) -> list[Event]:
    if group_id not in ws.store.groups():
        return []
    return list(ws.store.reader(group_id).events())


def _chunk(chunk_id: str = ID_A, text: str = "Alpha.", source: str = "notes/a.md") -> ChunkIn:
    return ChunkIn(chunk_id=chunk_id, source_file=source, chunk_text=text, reference_time=WHEN)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return root


# ---- which episodes a tree holds --------------------------------------------------------


def test_a_tree_is_named_by_its_folder_however_it_is_spelled(tmp_path: Path) -> None:
    root = _tree(tmp_path / "notes", {"a.md": "a"})
    scope = tree_scope(root)
    assert (scope.label, scope.prefix) == ("notes", "notes/")
    assert tree_scope(root / "." / ".." / "notes") == scope
    single = tree_scope(root / "a.md")
    assert (single.label, single.prefix) == ("a.md", "a.md:")


FOLDER = TreeScope(root="/x/notes", label="notes", prefix="notes/")
SINGLE = TreeScope(root="/x/a.md", label="a.md", prefix="a.md:")


@pytest.mark.parametrize(
    ("chunk_id", "description", "scope", "expected"),
    [
        (ID_A, f"notes/a.md:{ID_A}", FOLDER, "notes/a.md"),
        ("notes/a.md#0123456789ab~2", "notes/a.md:notes/a.md#0123456789ab~2", FOLDER, "notes/a.md"),
        ("intro", "notes/a.md:intro", FOLDER, None),  # a chunk id a sync never makes
        ("notes/a.md#0123456789AB", "notes/a.md:notes/a.md#0123456789AB", FOLDER, None),
        (ID_A, f"notes/b.md:{ID_B}", FOLDER, None),  # the description names another chunk
        ("notes2/a.md#0123456789ab", "notes2/a.md:notes2/a.md#0123456789ab", FOLDER, None),
        ("a.md#0123456789ab", "a.md:a.md#0123456789ab", SINGLE, "a.md"),
        ("a.md.bak#0123456789ab", "a.md.bak:a.md.bak#0123456789ab", SINGLE, None),
    ],
)
def test_an_episode_belongs_to_a_tree_by_its_chunk_id_and_source(
    chunk_id: str, description: str, scope: TreeScope, expected: str | None
) -> None:
    assert is_source_chunk(chunk_id, description, scope) == expected


def test_the_manifest_lists_only_the_trees_own_chunks(shared_ws: Workspace, group: str) -> None:
    sync_chunks(
        shared_ws, group, [_chunk(), _chunk("notes2/a.md#0123456789ab", source="notes2/a.md")], []
    )
    episodes.process_chunk(
        shared_ws, chunk_text="by hand", chunk_id="intro", source_file="notes/a.md", group_id=group
    )
    sync_chunks(shared_ws, group + "-other", [_chunk()], [])
    (held,) = source_manifest(shared_ws, group, FOLDER)
    assert (held.chunk_id, held.source_file) == (ID_A, "notes/a.md")
    assert held.content_hash == episodes.content_hash("Alpha.")


# ---- one batch --------------------------------------------------------------------------


def test_a_batch_adds_each_chunk_as_an_episode_of_its_source(
    shared_ws: Workspace, group: str
) -> None:
    res = sync_chunks(shared_ws, group, [_chunk(), _chunk(ID_B, "Beta.")], [])
    assert list(res.added) == [ID_A, ID_B] and res.pending == 2
    added = [e for e in _events(shared_ws, group) if isinstance(e, EpisodeAdded)]
    assert [(e.name, e.source, e.source_description) for e in added] == [
        (ID_A, "text", f"notes/a.md:{ID_A}"),
        (ID_B, "text", f"notes/a.md:{ID_B}"),
    ]
    assert [e.uuid for e in added] == list(res.added.values())
    assert added[0].content_hash == episodes.content_hash("Alpha.")
    assert added[0].valid_at == added[0].created_at == "2024-03-01T10:00:00.000000Z"


def test_a_batch_sent_again_records_nothing(shared_ws: Workspace, group: str) -> None:
    sync_chunks(shared_ws, group, [_chunk()], [])
    before = len(_events(shared_ws, group))
    again = sync_chunks(shared_ws, group, [_chunk()], [])
    assert (again.added, again.already_held) == ({}, 1)
    assert len(_events(shared_ws, group)) == before


def test_a_chunk_twice_in_one_batch_is_added_once(shared_ws: Workspace, group: str) -> None:
    res = sync_chunks(shared_ws, group, [_chunk(), _chunk()], [])
    assert (len(res.added), res.already_held) == (1, 1)


def test_a_held_id_with_other_text_is_added(shared_ws: Workspace, group: str) -> None:
    sync_chunks(shared_ws, group, [_chunk()], [])
    res = sync_chunks(shared_ws, group, [_chunk(text="Alpha, edited.")], [])
    assert list(res.added) == [ID_A], "the plan removes the old copy; the batch only adds"


def test_removals_delete_only_what_is_still_there_one_event_per_file(
    shared_ws: Workspace, group: str
) -> None:
    a = sync_chunks(shared_ws, group, [_chunk()], []).added[ID_A]
    b = sync_chunks(shared_ws, group, [_chunk("notes/b.md#0123456789ab", "B", "notes/b.md")], [])
    b_uuid = next(iter(b.added.values()))
    res = sync_chunks(
        shared_ws,
        group,
        [],
        [
            RemovalIn(source_file="notes/a.md", episode_uuids=[a, a, "gone-uuid"]),
            RemovalIn(source_file="notes/b.md", episode_uuids=[b_uuid]),
        ],
    )
    assert res.removed == 2
    deleted = [e for e in _events(shared_ws, group) if isinstance(e, EpisodesDeleted)]
    assert [(e.by, e.key, e.episode_uuids) for e in deleted] == [
        ("source", "notes/a.md", [a]),
        ("source", "notes/b.md", [b_uuid]),
    ]
    assert (
        sync_chunks(
            shared_ws, group, [], [RemovalIn(source_file="notes/a.md", episode_uuids=[a])]
        ).removed
        == 0
    )


def test_an_empty_batch_records_nothing(shared_ws: Workspace, group: str) -> None:
    res = sync_chunks(shared_ws, group, [], [])
    assert (res.added, res.removed) == ({}, 0)
    assert _events(shared_ws, group) == []


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (_chunk(text=""), "chunk_text must be non-empty"),
        (_chunk(chunk_id=""), "every chunk needs a chunk_id and a source_file"),
        (_chunk(source=""), "every chunk needs a chunk_id and a source_file"),
        (ChunkIn(chunk_id=ID_A, source_file="s", chunk_text="t", reference_time="soon"), "soon"),
    ],
)
def test_a_bad_chunk_refuses_the_whole_batch(
    shared_ws: Workspace, group: str, bad: ChunkIn, message: str
) -> None:
    with pytest.raises(InvalidParamsError, match=message):
        sync_chunks(shared_ws, group, [_chunk(ID_B, "Fine."), bad], [])
    assert _events(shared_ws, group) == []


def _service(answer: ExtractionOutput | None, fail: bool = False) -> ExtractionService:
    extractor = ScriptedExtractor(default=answer, fail=lambda _req: fail)
    return ExtractionService(extractor, concurrency=1)


@pytest.mark.parametrize(
    ("service", "counts"),
    [
        (None, (0, 0, 2)),
        (ExtractionService(None), (0, 0, 2)),  # lite mode
        (_service(ExtractionOutput()), (2, 0, 0)),
        (_service(ExtractionOutput(), fail=True), (0, 2, 0)),
    ],
)
def test_added_chunks_are_extracted_when_an_extractor_is_configured(
    shared_ws: Workspace, group: str, service: ExtractionService | None, counts: tuple[int, ...]
) -> None:
    res = sync_chunks(shared_ws, group, [_chunk(), _chunk(ID_B, "Beta.")], [], service)
    assert (res.extracted, res.extraction_failed, res.pending) == counts
    if service is not None:
        service.close()


# ---- a whole sync -----------------------------------------------------------------------


def _sync(ws: Workspace, group: str, root: Path) -> Any:
    return sync_tree(DirectBackend(ws), root, group)


def test_a_new_tree_adds_every_file_and_an_unchanged_one_records_nothing(
    shared_ws: Workspace, group: str, tmp_path: Path
) -> None:
    root = _tree(tmp_path / "notes", {"a.md": "# A\n\nalpha\n", "sub/b.txt": "beta\n"})
    first = _sync(shared_ws, group, root)
    assert (first.files_new, first.chunks_added, first.pending) == (2, 2, 2)
    assert (first.root, first.source) == (str(root.resolve()), "notes/")
    before = len(_events(shared_ws, group))
    again = _sync(shared_ws, group, root)
    assert (again.files_unchanged, again.chunks_added, again.chunks_unchanged) == (2, 0, 2)
    assert len(_events(shared_ws, group)) == before


def test_an_edit_replaces_exactly_the_chunks_whose_text_changed(
    shared_ws: Workspace, group: str, tmp_path: Path
) -> None:
    root = _tree(tmp_path / "notes", {"a.md": "# One\n\nfirst\n\n# Two\n\nsecond\n"})
    _sync(shared_ws, group, root)
    old = {c.chunk_id: c.episode_uuid for c in source_manifest(shared_ws, group, tree_scope(root))}
    (root / "a.md").write_text("# One\n\nfirst\n\n# Two\n\nsecond, edited\n")
    report = _sync(shared_ws, group, root)
    assert (report.files_changed, report.chunks_added, report.chunks_removed) == (1, 1, 1)
    new = {c.chunk_id: c.episode_uuid for c in source_manifest(shared_ws, group, tree_scope(root))}
    kept = set(old) & set(new)
    assert len(kept) == 1 and all(old[k] == new[k] for k in kept), "the unchanged chunk stays"
    tail = _events(shared_ws, group)[-3:]
    assert [type(e).__name__ for e in tail] == [
        "EpisodeAdded",
        "EpisodesDeleted",
        "SourceRegistered",  # the source's last sync, once the change is recorded
    ], "add first"


def test_a_removed_file_removes_its_chunks(
    shared_ws: Workspace, group: str, tmp_path: Path
) -> None:
    root = _tree(tmp_path / "notes", {"a.md": "alpha\n", "b.md": "beta\n"})
    _sync(shared_ws, group, root)
    (root / "b.md").unlink()
    report = _sync(shared_ws, group, root)
    assert (report.files_removed, report.files_unchanged, report.chunks_removed) == (1, 1, 1)
    held = source_manifest(shared_ws, group, tree_scope(root))
    assert [c.source_file for c in held] == ["notes/a.md"]
    (deleted,) = [e for e in _events(shared_ws, group) if isinstance(e, EpisodesDeleted)]
    assert (deleted.by, deleted.key) == ("source", "notes/b.md")


def test_two_trees_of_one_group_do_not_touch_each_other(
    shared_ws: Workspace, group: str, tmp_path: Path
) -> None:
    notes = _tree(tmp_path / "notes", {"a.md": "alpha\n"})
    docs = _tree(tmp_path / "docs", {"a.md": "alpha\n"})
    _sync(shared_ws, group, notes)
    report = _sync(shared_ws, group, docs)
    assert (report.files_new, report.files_removed) == (1, 0)
    (notes / "a.md").unlink()
    gone = sync_tree(DirectBackend(shared_ws), notes, group, prune=True)  # notes/ is empty now
    assert gone.chunks_removed == 1
    assert [c.source_file for c in source_manifest(shared_ws, group, tree_scope(docs))] == [
        "docs/a.md"
    ]


def test_a_large_sync_is_sent_in_bounded_batches_with_progress_after_each(
    shared_ws: Workspace, group: str, tmp_path: Path
) -> None:
    n = ADD_BATCH_CHUNKS + 1
    root = _tree(tmp_path / "notes", {f"{i:03}.md": f"note number {i}\n" for i in range(n)})
    frames: list[SyncProgress] = []
    report = sync_tree(DirectBackend(shared_ws), root, group, progress=frames.append)
    assert report.chunks_added == n
    assert [(f.chunks_done, f.chunks_total, f.files_done, f.files_total) for f in frames] == [
        (ADD_BATCH_CHUNKS, n, ADD_BATCH_CHUNKS, n),
        (n, n, n, n),
    ]
    episodes = [e for e in _events(shared_ws, group) if isinstance(e, EpisodeAdded)]
    assert len(episodes) == n, "one episode per chunk, whatever the batching"
