"""``ingest/sources/gitread``: a repository's history read as data (ADR 0191). Real repositories
made with real ``git`` (loose objects, packs after ``git gc``, packed refs, merges), compared
with what ``git`` itself says; the layouts it does not read; damaged and hostile stores end the
walk quietly, never block and never recurse."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lcg.ingest.sources.gitread import GitRepository, blob_id


def _git(repo: Path, *args: str, date: str = "2021-02-03T04:05:06Z", data: bytes = b"") -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Ann",
        "GIT_AUTHOR_EMAIL": "ann@example.com",
        "GIT_COMMITTER_NAME": "Ann",
        "GIT_COMMITTER_EMAIL": "ann@example.com",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, input=data
    )
    return done.stdout.decode().strip()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _commit(repo: Path, message: str, date: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message, date=date)


def _history(tmp_path: Path) -> Path:
    """root (3 files) → side branch edit → main edit → merge → removal → re-add."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _write(repo / "a.md", "a")
    _write(repo / "d" / "b.md", "b")
    _write(repo / "d" / "e" / "c.md", "c")
    _commit(repo, "root", "2020-01-01T00:00:00Z")
    _git(repo, "checkout", "-q", "-b", "side")
    _write(repo / "d" / "b.md", "b, on the side")
    _commit(repo, "side", "2020-03-01T00:00:00Z")
    _git(repo, "checkout", "-q", "main")
    _write(repo / "a.md", "a, edited")
    _commit(repo, "main", "2020-02-01T00:00:00Z")
    _git(repo, "merge", "-q", "--no-edit", "side", date="2020-04-01T00:00:00Z")
    (repo / "d" / "e" / "c.md").unlink()
    _commit(repo, "remove", "2020-05-01T00:00:00Z")
    _write(repo / "d" / "e" / "c.md", "c again")
    _commit(repo, "re-add", "2020-06-01T00:00:00Z")
    return repo


def _walk(repo: Path, **kw: object) -> list[tuple[str, str, tuple[str, ...]]]:
    opened = GitRepository.open(repo)
    assert opened is not None
    with opened:
        return [
            (c.message.strip(), c.committed_at.isoformat() if c.committed_at else "", c.touched)
            for c in opened.iter_commits(**kw)  # type: ignore[arg-type]
        ]


EXPECTED = [
    ("re-add", "2020-06-01T00:00:00+00:00", ("d/e/c.md",)),
    ("remove", "2020-05-01T00:00:00+00:00", ("d/e/c.md",)),
    ("Merge branch 'side'", "2020-04-01T00:00:00+00:00", ()),
    ("side", "2020-03-01T00:00:00+00:00", ("d/b.md",)),
    ("main", "2020-02-01T00:00:00+00:00", ("a.md",)),
    ("root", "2020-01-01T00:00:00+00:00", ("a.md", "d/b.md", "d/e/c.md")),
]


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_the_history_as_git_log_lists_it(tmp_path: Path, packed: bool) -> None:
    repo = _history(tmp_path)
    if packed:
        _git(repo, "gc", "-q")
        _git(repo, "pack-refs", "--all")
        assert not any((repo / ".git" / "objects").glob("[0-9a-f][0-9a-f]"))
    assert _walk(repo) == EXPECTED
    listed = _git(repo, "log", "--format=%s", "--name-only").split()
    assert listed[0] == "re-add"  # git's order: newest committer time first, as read here
    opened = GitRepository.open(repo / "d")  # from a folder inside the work tree
    assert opened is not None
    with opened:
        commit = next(opened.iter_commits())
        assert commit.author == "Ann <ann@example.com>"
        assert commit.sha == _git(repo, "rev-parse", "HEAD")
        assert commit.parents == (_git(repo, "rev-parse", "HEAD~1"),)
        heads = opened.head_blobs(["a.md", "d/b.md", "d", "missing.md"])
    assert heads == {
        "a.md": _git(repo, "rev-parse", "HEAD:a.md").encode(),
        "d/b.md": _git(repo, "rev-parse", "HEAD:d/b.md").encode(),
    }


def test_within_limits_the_walk_and_bounds_end_it(tmp_path: Path) -> None:
    repo = _history(tmp_path)
    got = _walk(repo, within={"a.md"})
    assert [t for _, _, t in got] == [(), (), (), (), ("a.md",), ("a.md",)]
    assert len(_walk(repo, limit=2)) == 2
    # Two tree entries cannot even hold the newest commit's diff: the walk ends, quietly.
    assert _walk(repo, entries=2) == []


def test_blob_id_is_gits(tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_bytes(b"some bytes\x00\xff\n")
    assert blob_id(note) == _git(tmp_path, "hash-object", str(note)).encode()
    (tmp_path / "link.md").symlink_to(note)
    assert blob_id(tmp_path / "link.md") is None
    assert blob_id(tmp_path / "missing.md") is None


def test_commit_times_are_untrusted_data(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _write(repo / "a.md", "a")
    _commit(repo, "sane", "2020-01-01T00:00:00Z")
    tree = _git(repo, "rev-parse", "HEAD^{tree}")
    parent = _git(repo, "rev-parse", "HEAD")
    lines = {
        "year 10000": b"committer Ann <ann@example.com> 253402300800 +0000",
        "offset +99:59": b"committer Ann <ann@example.com> 1600000000 +9959",
        "no time": b"committer Ann <ann@example.com>",
        "garbage": b"committer \xff\xfe not an ident at all",
        "negative": b"committer Ann <ann@example.com> -5 +0000",
        "huge": b"committer Ann <ann@example.com> " + b"9" * 400 + b" +0000",
    }
    for message, committer in lines.items():
        raw = (
            f"tree {tree}\nparent {parent}\n".encode()
            + b"author Ann <ann@example.com> 1600000000 +0000\n"
            + committer
            + f"\n\n{message}\n".encode()
        )
        parent = _git(repo, "hash-object", "-t", "commit", "--literally", "-w", "--stdin", data=raw)
    _git(repo, "update-ref", "HEAD", parent)
    got = {m: t for m, t, _ in _walk(repo)}
    assert got == {**dict.fromkeys(lines, ""), "sane": "2020-01-01T00:00:00+00:00"}


def _config(repo: Path, text: str) -> None:
    with (repo / ".git" / "config").open("a") as fh:
        fh.write(text)


UNREAD = {
    "worktree": lambda r: _config(r, "[core]\n\tworktree = /elsewhere\n"),
    "bare": lambda r: _config(r, "[core]\n\tbare = true\n"),
    "include": lambda r: _config(r, "[include]\n\tpath = other\n"),
    "includeIf": lambda r: _config(r, '[includeIf "gitdir:/"]\n\tpath = other\n'),
    "extensions": lambda r: _config(r, "[extensions]\n\tobjectFormat = sha256\n"),
    "format 2": lambda r: _config(r, "[core]\n\trepositoryformatversion = 2\n"),
    "shallow": lambda r: (r / ".git" / "shallow").write_text("x\n"),
    "alternates": lambda r: (r / ".git" / "objects" / "info" / "alternates").write_text("/x\n"),
    "linked work tree": lambda r: (r / ".git" / "commondir").write_text("..\n"),
    "config symlink": lambda r: _relink(r / ".git" / "config"),
    "unparsable config": lambda r: _config(r, "[core\n"),
}


def _relink(path: Path) -> None:
    target = path.with_name("config.real")
    path.rename(target)
    path.symlink_to(target)


@pytest.mark.parametrize("layout", list(UNREAD))
def test_a_layout_not_read_here_is_not_opened(tmp_path: Path, layout: str) -> None:
    repo = _history(tmp_path)
    assert GitRepository.open(repo) is not None
    UNREAD[layout](repo)
    assert GitRepository.open(repo) is None


def test_a_dotgit_file_or_link_or_an_own_git_dir_is_not_opened(tmp_path: Path) -> None:
    repo = _history(tmp_path)
    real = tmp_path / "real-gitdir"
    (repo / ".git").rename(real)
    (repo / ".git").write_text(f"gitdir: {real}\n")
    assert GitRepository.open(repo) is None
    (repo / ".git").unlink()
    (repo / ".git").symlink_to(real)
    assert GitRepository.open(repo) is None
    # A folder holding HEAD, objects and refs is a git directory: not walked past.
    (repo / ".git").unlink()
    assert GitRepository.open(real) is None
    assert GitRepository.open(real / "objects") is None


def test_a_damaged_store_ends_the_walk_quietly(tmp_path: Path) -> None:
    repo = _history(tmp_path)
    oldest = _git(repo, "rev-list", "--max-parents=0", "HEAD")
    loose = repo / ".git" / "objects" / oldest[:2] / oldest[2:]
    loose.chmod(0o644)
    loose.write_bytes(b"not zlib at all")
    # The walk stops at the first commit whose parent cannot be read ("side", whose parent is
    # the root): what it read before stands.
    assert _walk(repo) == EXPECTED[:3]


_FIFO_PROBE = """
import sys
from pathlib import Path
from lcg.ingest.sources.gitread import GitRepository
repo = GitRepository.open(Path(sys.argv[1]))
with repo:
    print(len(list(repo.iter_commits())), len(repo.head_blobs(["a.md"])))
"""


@pytest.mark.parametrize(
    ("where", "read"),
    [
        ("HEAD", ["0", "0"]),
        ("refs/heads/main", ["0", "0"]),
        # Only that pack is passed over: the real one is read.
        ("objects/pack/pack-x.pack", ["6", "1"]),
    ],
)
def test_a_fifo_in_the_git_directory_never_blocks(
    tmp_path: Path, where: str, read: list[str]
) -> None:
    repo = _history(tmp_path)
    _git(repo, "gc", "-q")
    fifo = repo / ".git" / where
    if where.endswith(".pack"):
        (repo / ".git" / "objects" / "pack" / "pack-x.idx").write_bytes(b"")
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    # In a subprocess, with a timeout as the failure signal: a blocked open never returns.
    done = subprocess.run(
        [sys.executable, "-c", _FIFO_PROBE, str(repo)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == read


def test_a_tree_a_thousand_folders_deep_is_walked_without_recursion(tmp_path: Path) -> None:
    # Made by git fast-import, objects only: no folder 1,000 deep on disk (which Python's own
    # recursive removal, pytest's cleanup included, could not delete).
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    deep = "/".join(["d"] * 1000) + "/deep.md"
    stream = (
        "commit refs/heads/main\n"
        "committer Ann <ann@example.com> 1577836800 +0000\n"
        "data 4\ndeep\n"
        f"M 100644 inline {deep}\n"
        "data 5\ndeep\n\n"
    )
    _git(repo, "fast-import", "--quiet", data=stream.encode())
    assert _walk(repo) == [("deep", "2020-01-01T00:00:00+00:00", (deep,))]
    opened = GitRepository.open(repo)
    assert opened is not None
    with opened:
        assert opened.head_blobs([deep]) == {deep: _git(repo, "rev-parse", f"HEAD:{deep}").encode()}


def test_times_come_back_in_utc(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _write(repo / "a.md", "a")
    _commit(repo, "zoned", "2020-01-01T12:00:00+05:30")
    opened = GitRepository.open(repo)
    assert opened is not None
    with opened:
        (commit,) = opened.iter_commits()
    assert commit.committed_at == datetime(2020, 1, 1, 6, 30, tzinfo=UTC)


def test_reading_starts_no_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _history(tmp_path)
    _git(repo, "gc", "-q")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a process was started: {args!r}")

    for name in ("fork", "posix_spawn", "posix_spawnp", "execv", "execve", "system"):
        monkeypatch.setattr(os, name, refuse)
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    assert _walk(repo) == EXPECTED
    opened = GitRepository.open(repo)
    assert opened is not None
    with opened:
        assert len(opened.head_blobs(["a.md", "d/b.md", "d/e/c.md"])) == 3
