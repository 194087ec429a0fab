"""Declared structure past the first sync (issue 29 "Must show", ADR 0203), through the real
``lcg ingest``, ``lcg serve``, ``lcg watch``, ``lcg replay``, ``lcg publish`` and
``lcg follow`` on a real git work tree: a rename of a file others link to by path, a replay
giving the same graph, a replica serving the same graph as the primary, and ``lcg watch``
ending a removed link's edge and drawing the edge a new file resolves. Hash embedder (the test
double), no LLM."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from lcg.rpc import Client
from replica_support import GIT_ENV, git, make_repos

G = "team"

NOTES = {
    "plan.md": "---\ntitle: Plan\nid: STORY-1\ntags: [moon]\n---\n"
    "The plan: see [the log](notes/log.md) and [[Epic]]. Also [[Later]].\n",
    "notes/log.md": '---\nparent: "[[Epic]]"\n---\n# Log\n\nWhat STORY-1 planned.\n',
    "epic.md": "# Epic\n\nThe whole mission, in [[Log]].\n",
    "code/main.py": "import helper\n\nhelper.run()\n",
    "code/helper.py": "def run() -> None:\n    print('run')\n",
}


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def ws() -> Iterator[Path]:
    path = sf.short_tmp("lcg-e2e-decl-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _vault(root: Path, files: dict[str, str] = NOTES) -> Path:
    """The files, committed into a fresh git work tree."""
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the notes")
    return root


def _ingest(lcg_main: sf.LcgMain, ws: Path, vault: Path) -> str:
    done = lcg_main(ws, "ingest", str(vault), "--group", G)
    assert done.returncode == 0, done.stderr
    return done.stdout


class _Services:
    """The ``lcg serve`` processes a test starts, each stopped by ``stop`` or at the end."""

    def __init__(self) -> None:
        self.running: list[tuple[subprocess.Popen[bytes], Path, Client]] = []

    def start(self, ws: Path) -> Client:
        proc = sf.spawn_serve(ws)
        sock = ws / ".lcg" / "service.sock"
        sf.wait_healthy(sock, proc)
        client = Client(sock, timeout=120)
        self.running.append((proc, sock, client))
        return client

    def stop(self) -> None:
        while self.running:
            proc, sock, client = self.running.pop()
            client.close()
            assert sf.stop_serve(proc, sock) == 0


@pytest.fixture
def services() -> Iterator[_Services]:
    held = _Services()
    try:
        yield held
    finally:
        held.stop()


def _attrs(row: dict[str, Any]) -> dict[str, Any]:
    attrs = row.get("attributes") or {}
    return json.loads(attrs) if isinstance(attrs, str) else dict(attrs)


def _graph(client: Client) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """The group's nodes and edges as served, every field that says what they are."""
    nodes = client.call("knowledge_get_nodes_by_group", {"group_ids": [G]})["nodes"]
    edges = client.call("knowledge_get_edges_by_group", {"group_ids": [G]})["edges"]
    return (
        {
            (
                n["uuid"],
                n["name"],
                tuple(sorted(n["labels"])),
                json.dumps(_attrs(n), sort_keys=True),
            )
            for n in nodes
        },
        {
            (
                e["uuid"],
                e["relation_type"],
                e["source_node_uuid"],
                e["target_node_uuid"],
                e["fact"],
                e.get("invalid_at"),
            )
            for e in edges
        },
    )


def _named(client: Client) -> set[tuple[str, str, str]]:
    """(source name, relation type, target name) of the group's current declared edges."""
    nodes = client.call("knowledge_get_nodes_by_group", {"group_ids": [G]})["nodes"]
    names = {n["uuid"]: n["name"] for n in nodes}
    edges = client.call("knowledge_get_edges_by_group", {"group_ids": [G]})["edges"]
    return {
        (
            names.get(e["source_node_uuid"], "?"),
            e["relation_type"],
            names.get(e["target_node_uuid"], "?"),
        )
        for e in edges
        if not e.get("invalid_at")
    }


def _node_names(client: Client) -> set[str]:
    nodes = client.call("knowledge_get_nodes_by_group", {"group_ids": [G]})["nodes"]
    return {n["name"] for n in nodes}


def test_a_renamed_file_linked_by_path_is_unresolved_never_a_node(
    ws: Path, tmp_path: Path, services: _Services, lcg_main: sf.LcgMain
) -> None:
    vault = _vault(tmp_path / "vault")
    client = services.start(ws)
    out = _ingest(lcg_main, ws, vault)
    assert "1 unresolved" in out  # [[Later]]
    assert ("Plan", "LINKS_TO", "Log") in _named(client)
    log = next(
        n
        for n in client.call("knowledge_get_nodes_by_group", {"group_ids": [G]})["nodes"]
        if n["name"] == "Log"
    )

    git(vault, "mv", "notes/log.md", "notes/journal.md")
    git(vault, "commit", "-q", "-m", "rename the log")
    out = _ingest(lcg_main, ws, vault)
    # The path link no longer resolves: counted, no edge, and no node for the missing path;
    # the wiki link by title resolves again to the same entity under its new path.
    assert "2 unresolved" in out, out
    edges = _named(client)
    assert ("Plan", "LINKS_TO", "Log") not in edges
    assert ("Epic", "LINKS_TO", "Log") in edges and ("Log", "PART_OF", "Epic") in edges
    names = _node_names(client)
    assert not {"log", "log.md", "notes/log.md", "journal"} & names, names
    moved = next(
        n
        for n in client.call("knowledge_get_nodes_by_group", {"group_ids": [G]})["nodes"]
        if n["name"] == "Log"
    )
    assert moved["uuid"] == log["uuid"] and _attrs(moved)["path"] == "notes/journal.md"

    # Mending the link by its new path draws the edge again.
    plan = (vault / "plan.md").read_text()
    (vault / "plan.md").write_text(plan.replace("notes/log.md", "notes/journal.md"))
    out = _ingest(lcg_main, ws, vault)
    assert "1 unresolved" in out, out
    assert ("Plan", "LINKS_TO", "Log") in _named(client)


def test_a_replay_after_a_sync_gives_the_same_graph(
    ws: Path, tmp_path: Path, services: _Services, lcg_main: sf.LcgMain
) -> None:
    vault = _vault(tmp_path / "vault")
    _ingest(lcg_main, ws, vault)  # each command serves the workspace itself while it runs
    (vault / "epic.md").write_text("# Epic\n\nThe whole mission, no link now.\n")
    (vault / "notes" / "log.md").unlink()
    (vault / "later.md").write_text("---\naliases: [Later]\n---\n# After\n\nSee STORY-1.\n")
    _ingest(lcg_main, ws, vault)
    client = services.start(ws)
    before = _graph(client)
    edges = _named(client)
    assert {("Plan", "LINKS_TO", "After"), ("main", "IMPORTS", "helper")} <= edges, edges
    assert ("Plan", "LINKS_TO", "Epic") in edges and ("Epic", "LINKS_TO", "Log") not in edges
    services.stop()
    done = lcg_main(ws, "replay", "--group", G, "--force-clear")
    assert done.returncode == 0, done.stdout + done.stderr
    client = services.start(ws)
    assert _graph(client) == before


def test_a_replica_following_the_group_serves_the_same_graph(
    ws: Path, tmp_path: Path, services: _Services, lcg_main: sf.LcgMain
) -> None:
    repos = make_repos(tmp_path)
    vault = _vault(tmp_path / "vault")
    _ingest(lcg_main, ws, vault)
    # A second sync that ends edges and draws new ones: the replica applies both.
    (vault / "epic.md").write_text("# Epic\n\nThe whole mission, no link now.\n")
    (vault / "later.md").write_text("# Later\n\nAfter STORY-1.\n")
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "later")
    _ingest(lcg_main, ws, vault)
    done = lcg_main(ws, "publish", "--group", G, "--repo", str(repos.pub), "--json")
    assert done.returncode == 0, done.stderr
    max_seq = json.loads(done.stdout)["max_seq"]
    repos.push()

    rws = sf.short_tmp("lcg-e2e-rep-")
    sock = rws / ".lcg" / "service.sock"
    with (rws / "follow.log").open("ab") as log:
        proc = subprocess.Popen(
            [str(sf.LCG), "-C", str(rws), "follow", str(repos.replica), "--pull-every", "0.2"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=sf.serve_env(),
            cwd=str(rws),
        )
    try:
        sf.wait_healthy(sock, proc)
        with Client(sock, timeout=120) as c:

            def applied() -> bool:
                status = c.call("knowledge_replica_status", {})["groups"].get(G)
                return status is not None and status["applied_seq"] == max_seq

            sf.eventually(applied, lambda: (rws / "follow.log").read_text(), proc=proc)
            replica = _graph(c)
            edges = _named(c)
        assert sf.stop_serve(proc, sock) == 0
        assert {("Plan", "LINKS_TO", "Later"), ("Log", "PART_OF", "Epic")} <= edges, edges
        assert ("Epic", "LINKS_TO", "Log") not in edges
        assert _graph(services.start(ws)) == replica
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        shutil.rmtree(rws, ignore_errors=True)


def test_watch_ends_a_removed_link_and_draws_one_a_new_file_resolves(
    ws: Path, tmp_path: Path
) -> None:
    vault = _vault(tmp_path / "vault")
    proc, log = sf.spawn_lcg(ws, "watch", str(vault), "--group", G)
    try:
        sf.eventually(lambda: "watching 1 tree" in log.read_text(), log.read_text, proc=proc)
        with Client(ws / ".lcg" / "service.sock", timeout=120) as c:
            assert ("Plan", "LINKS_TO", "Log") in _named(c)
            assert "Later" not in _node_names(c)
            plan = NOTES["plan.md"].replace("see [the log](notes/log.md) and ", "see ")
            (vault / "plan.md").write_text(plan)
            sf.eventually(
                lambda: ("Plan", "LINKS_TO", "Log") not in _named(c), log.read_text, proc=proc
            )
            (vault / "later.md").write_text("# Later\n\nComes after the plan.\n")
            sf.eventually(
                lambda: ("Plan", "LINKS_TO", "Later") in _named(c), log.read_text, proc=proc
            )
            assert ("Plan", "LINKS_TO", "Epic") in _named(c)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
