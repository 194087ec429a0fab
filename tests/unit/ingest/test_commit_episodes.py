"""``ingest/sources/commits``: a tree's git commits as episodes (issue 29 item 2, ADR 0205).

Real repositories made with real ``git`` in the test (dated commits, a sub-folder tree, a
merge, a rename, a deletion, ``git gc``), read by lcg with no process started; a real
workspace (one per module, a group per test) for the sync: each commit a chunk of the tree's
``<label>/.git/commits`` source, sent once, removed when it leaves the window. The hash
embedder is a TEST DOUBLE.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from lcg.events.model import EpisodeAdded, EpisodesDeleted, Event
from lcg.ingest.sources import (
    CommitWindow,
    DirectBackend,
    StoredChunk,
    commit_mentions,
    read_commits,
    source_manifest,
    sync_tree,
    tree_scope,
)
from lcg.ingest.sources.commits import MAX_MESSAGE_CHARS, plan_commits
from lcg.workspace import Workspace

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str, date: str = "2021-02-03T04:05:06Z") -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Ann Lee",
        "GIT_AUTHOR_EMAIL": "ann@example.com",
        "GIT_COMMITTER_NAME": "Ann Lee",
        "GIT_COMMITTER_EMAIL": "ann@example.com",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return done.stdout.decode().strip()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _commit(repo: Path, message: str, date: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message, date=date)
    return _git(repo, "rev-parse", "HEAD")


def _history(tmp_path: Path) -> Path:
    """root → side branch → main edit → merge → rename → deletion, in repo/ with a docs/."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _write(repo / "README.md", "# Readme\n")
    _write(repo / "docs" / "export.md", "# Exports\n\nAll formats in one module.\n")
    _write(repo / "docs" / "old.md", "# Old\n")
    _commit(repo, "Start the project", "2020-01-01T09:00:00+05:30")
    _git(repo, "checkout", "-q", "-b", "side")
    _write(repo / "docs" / "side.md", "# Side\n")
    _commit(repo, "Side note", "2020-02-01T00:00:00Z")
    _git(repo, "checkout", "-q", "main")
    _write(repo / "README.md", "# Readme\n\nEdited.\n")
    _commit(repo, "Edit the readme", "2020-03-01T00:00:00Z")
    _git(repo, "merge", "-q", "--no-edit", "side", date="2020-04-01T00:00:00Z")
    _git(repo, "mv", "docs/export.md", "docs/exports.md")
    _commit(
        repo,
        "Split the exports\n\nOne module per format: the CSV writer kept breaking the JSON one.",
        "2020-05-01T00:00:00-07:00",
    )
    (repo / "docs" / "old.md").unlink()
    _commit(repo, "Withdraw the old note", "2020-06-01T00:00:00Z")
    return repo


EXPECTED = [
    ("Withdraw the old note", ("docs/old.md",)),
    ("Split the exports", ("docs/export.md", "docs/exports.md")),
    ("Merge branch 'side'", ("docs/side.md",)),  # what the merge brought, against main
    ("Edit the readme", ("README.md",)),
    ("Side note", ("docs/side.md",)),
    ("Start the project", ("README.md", "docs/export.md", "docs/old.md")),
]


def _summary(root: Path, window: CommitWindow | None = None) -> list[tuple[str, tuple[str, ...]]]:
    log = read_commits(root, window or CommitWindow())
    return [(c.message.partition("\n")[0], c.files) for c in log.commits]


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_the_commits_that_touched_a_tree_newest_first(tmp_path: Path, packed: bool) -> None:
    repo = _history(tmp_path)
    if packed:
        _git(repo, "gc", "-q")
        assert not any((repo / ".git" / "objects").glob("[0-9a-f][0-9a-f]"))
    assert _summary(repo) == EXPECTED
    log = read_commits(repo, CommitWindow())
    split = log.commits[1]
    assert split.sha == _git(repo, "rev-parse", "HEAD~1")
    assert split.author == "Ann Lee"  # no e-mail address
    assert split.authored_at == datetime(2020, 5, 1, tzinfo=timezone(timedelta(hours=-7)))
    assert split.authored_at.utcoffset() == timedelta(hours=-7)
    assert split.message.endswith("kept breaking the JSON one.")


def test_a_sub_folder_tree_has_only_its_commits_with_its_own_paths(tmp_path: Path) -> None:
    repo = _history(tmp_path)
    assert _summary(repo / "docs") == [
        ("Withdraw the old note", ("old.md",)),
        ("Split the exports", ("export.md", "exports.md")),
        ("Merge branch 'side'", ("side.md",)),
        ("Side note", ("side.md",)),
        ("Start the project", ("export.md", "old.md")),
    ]


def test_the_count_and_since_bound_the_window(tmp_path: Path) -> None:
    repo = _history(tmp_path)
    assert _summary(repo, CommitWindow(limit=2)) == EXPECTED[:2]
    assert _summary(repo, CommitWindow(limit=0)) == []
    since = datetime(2020, 3, 1, tzinfo=UTC)
    assert _summary(repo, CommitWindow(since=since)) == EXPECTED[:4]
    assert _summary(repo / "docs", CommitWindow(limit=1, since=since)) == [
        ("Withdraw the old note", ("old.md",))
    ]


def test_a_long_message_is_bounded(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _write(repo / "a.md", "a")
    _commit(repo, "Long\n\n" + "word " * 5000, "2020-01-01T00:00:00Z")
    (commit,) = read_commits(repo, CommitWindow()).commits
    assert len(commit.message) == MAX_MESSAGE_CHARS + 1 and commit.message.endswith("…")


def test_no_repository_or_an_unread_layout_has_no_commits(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    _write(plain / "a.md", "a")
    assert read_commits(plain, CommitWindow()).commits == []
    repo = _history(tmp_path)
    with (repo / ".git" / "config").open("a") as fh:
        fh.write("[core]\n\tworktree = .\n")
    log = read_commits(repo, CommitWindow())
    assert (log.commits, log.repository) == ([], False)


def test_reading_runs_nothing_the_repository_configures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _history(tmp_path)
    marker = tmp_path / "marker"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    script.chmod(0o755)
    for hook in ("post-checkout", "post-commit", "pre-commit", "reference-transaction"):
        shutil.copy(script, repo / ".git" / "hooks" / hook)
    with (repo / ".git" / "config").open("a") as fh:
        fh.write(f"[core]\n\tfsmonitor = {script}\n\thooksPath = {repo / '.git' / 'hooks'}\n")
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=False)
    assert marker.exists(), "the trap is armed: git itself runs it"
    marker.unlink()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a process was started: {args!r}")

    for name in ("fork", "posix_spawn", "posix_spawnp", "execv", "execve", "system"):
        monkeypatch.setattr(os, name, refuse)
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    assert _summary(repo, CommitWindow(limit=999)) == EXPECTED
    assert not marker.exists()


# ---- the sync ---------------------------------------------------------------------------


def _events(ws: Workspace, group_id: str) -> list[Event]:
    if group_id not in ws.store.groups():
        return []
    return list(ws.store.reader(group_id).events())


def _commit_episodes(ws: Workspace, group: str) -> dict[str, EpisodeAdded]:
    return {
        e.name: e
        for e in _events(ws, group)
        if isinstance(e, EpisodeAdded) and e.source_description.startswith("repo/.git/commits:")
    }


def test_each_commit_is_a_chunk_of_the_tree_sent_once(
    shared_ws: Workspace, group: str, tmp_path: Path
) -> None:
    repo = _history(tmp_path)
    report = sync_tree(DirectBackend(shared_ws), repo, group)
    assert (report.commits_read, report.commits_added, report.commits_removed) == (6, 6, 0)
    assert report.files_new == 3  # README.md, docs/exports.md, docs/side.md: no commits file
    episodes = _commit_episodes(shared_ws, group)
    split_sha = _git(repo, "rev-parse", "HEAD~1")
    split = episodes[f"repo/.git/commits#{split_sha[:12]}"]
    assert split.content.startswith(
        "Split the exports\n\nOne module per format: the CSV writer kept breaking the JSON one."
    )
    assert "Author: Ann Lee\nDate: 2020-05-01T00:00:00-07:00\n" in split.content
    assert "Files: docs/export.md, docs/exports.md" in split.content
    assert "ann@example.com" not in split.content
    assert split.valid_at == "2020-05-01T07:00:00.000000Z"
    held = source_manifest(shared_ws, group, tree_scope(repo))
    assert sum(c.source_file == "repo/.git/commits" for c in held) == 6

    before = len(_events(shared_ws, group))
    again = sync_tree(DirectBackend(shared_ws), repo, group)
    assert (again.commits_read, again.commits_added, again.chunks_added) == (6, 0, 0)
    assert again.files_removed == 0, "the commits are no file to remove"
    assert len(_events(shared_ws, group)) == before, "a re-sync appends nothing"


def test_a_new_commit_is_added_and_one_leaving_the_window_removed(
    shared_ws: Workspace, group: str, tmp_path: Path
) -> None:
    repo = _history(tmp_path)
    backend = DirectBackend(shared_ws)
    sync_tree(backend, repo, group, commits=CommitWindow(limit=3))
    _write(repo / "docs" / "new.md", "# New\n")
    sha = _commit(repo, "Add the new note", "2020-07-01T00:00:00Z")
    report = sync_tree(backend, repo, group, commits=CommitWindow(limit=3))
    assert (report.commits_added, report.commits_removed) == (1, 1)
    assert f"repo/.git/commits#{sha[:12]}" in {
        c.chunk_id for c in source_manifest(shared_ws, group, tree_scope(repo))
    }
    deleted = [e for e in _events(shared_ws, group) if isinstance(e, EpisodesDeleted)]
    assert [(e.key, len(e.episode_uuids)) for e in deleted] == [("repo/.git/commits", 1)]
    none = sync_tree(backend, repo, group, commits=None)
    assert (none.commits_read, none.commits_removed) == (0, 3)
    assert not any(
        c.source_file == "repo/.git/commits"
        for c in source_manifest(shared_ws, group, tree_scope(repo))
    )


def test_a_damaged_history_removes_nothing_the_group_holds(tmp_path: Path) -> None:
    repo = _history(tmp_path)
    scope = tree_scope(repo)
    held = plan_commits(scope, read_commits(repo, CommitWindow()), [])
    stored = [_stored(c.chunk.chunk_id, c.content_hash, f"u{i}") for i, c in enumerate(held.chunks)]
    # A copy (another repository to read) whose newest commit's parent is damaged: the walk
    # ends on it.
    copy = tmp_path / "copy" / "repo"
    shutil.copytree(repo, copy)
    parent = _git(copy, "rev-parse", "HEAD~1")
    damaged = copy / ".git" / "objects" / parent[:2] / parent[2:]
    damaged.chmod(0o644)
    damaged.write_bytes(b"not a zlib stream")
    log = read_commits(copy, CommitWindow())
    assert log.damaged and len(log.commits) < 6
    plan = plan_commits(scope, log, stored)
    assert plan.removals == [] and plan.adds == []
    whole = plan_commits(scope, read_commits(repo, CommitWindow(limit=2)), stored)
    assert len(whole.removals) == 4, "an undamaged walk removes what left the window"


def _stored(chunk_id: str, digest: str, uuid: str) -> StoredChunk:
    return StoredChunk(
        episode_uuid=uuid, chunk_id=chunk_id, source_file="repo/.git/commits", content_hash=digest
    )


def test_mentions_point_from_each_commit_to_the_files_the_tree_holds(tmp_path: Path) -> None:
    repo = _history(tmp_path)
    plan = plan_commits(tree_scope(repo), read_commits(repo, CommitWindow()), [])
    mentions = commit_mentions(plan, ["README.md", "docs/exports.md", "docs/side.md"])
    by_chunk: dict[str, list[str]] = {}
    for m in mentions:
        by_chunk.setdefault(m.chunk_id, []).append(m.target)
    first = {c.chunk.chunk_id: c.chunk.chunk_text.partition("\n")[0] for c in plan.chunks}
    assert {first[k]: v for k, v in by_chunk.items()} == {
        "Split the exports": ["docs/exports.md"],  # the renamed file under its new path
        "Merge branch 'side'": ["docs/side.md"],
        "Edit the readme": ["README.md"],
        "Side note": ["docs/side.md"],
        "Start the project": ["README.md"],  # old.md is withdrawn, export.md renamed
    }


def test_a_commits_episode_mentions_the_documents_of_the_files_it_touched(
    shared_ws: Workspace, group: str, tmp_path: Path
) -> None:
    repo = _history(tmp_path)
    backend = DirectBackend(shared_ws)
    sync_tree(backend, repo, group)
    split = f"repo/.git/commits#{_git(repo, 'rev-parse', 'HEAD~1')[:12]}"
    merge = f"repo/.git/commits#{_git(repo, 'rev-parse', 'HEAD~2')[:12]}"
    assert _mentioned(shared_ws, group, split) == {"docs/exports.md"}
    assert _mentioned(shared_ws, group, merge) == {"docs/side.md"}
    # side.md moves: the merge touched a path the tree no longer holds, so it mentions nothing.
    _git(repo, "mv", "docs/side.md", "docs/aside.md")
    sync_tree(backend, repo, group)
    assert _mentioned(shared_ws, group, merge) == set()
    assert _mentioned(shared_ws, group, split) == {"docs/exports.md"}
    sync_tree(backend, repo, group, commits=CommitWindow(limit=1))
    assert _mentioned(shared_ws, group, split) == set(), "its episode left the window"


def _mentioned(ws: Workspace, group: str, chunk_id: str) -> set[str]:
    with ws.reading():
        rows = ws.graph.query(
            "MATCH (p:Episodic)-[:MENTIONS]->(n:Entity) WHERE p.group_id = $g AND p.name = $c "
            "RETURN n.attributes",
            {"g": group, "c": chunk_id},
        )
    return {str(json.loads(str(a))["path"]) for (a,) in rows}
