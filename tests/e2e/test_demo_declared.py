"""The demo's Apollo corpus as a declared graph (issue 29 item 5, ADR 0209), with no LLM and the
hash test embedder.

The whole corpus through the real ``lcg demo``: every article is a Document and every restored
``[[link]]`` a LINKS_TO edge (Apollo 11 → Neil Armstrong among them), the demo prints Apollo
11's neighbourhood, ``lcg search --entities`` / ``--facts`` answer from the declared graph and
say so, and a second run appends nothing. Then the written folder through a plain
``lcg ingest`` in another workspace, and what ``lcg search`` says when nothing matches.
``lcg demo`` runs as a process (its service keeps running); ``lcg search`` and ``lcg ingest``
in this process (conftest's ``lcg_main``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import _service_fixtures as sf
from lcg.cli._demo_corpus import read_articles, write_corpus
from lcg.cli.demo import EXAMPLE_CORPUS
from lcg.rpc import Client


def _demo(ws: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sf.python(), "-m", "lcg.cli.demo", "--workspace", str(ws), "-s"],
        capture_output=True,
        text=True,
        env=sf.serve_env(),
        cwd=str(sf.REPO),
        timeout=600,
        check=False,
    )


def _document(client: Client, name: str) -> dict[str, Any]:
    nodes = client.call("knowledge_get_nodes_by_group", {"group_ids": ["apollo"]})["nodes"]
    found = [n for n in nodes if n["name"] == name and "Document" in n["labels"]]
    assert len(found) == 1, found
    return found[0]


def _attributes(row: dict[str, Any]) -> dict[str, Any]:
    raw = row["attributes"]
    parsed: dict[str, Any] = json.loads(raw) if isinstance(raw, str) else raw
    return parsed


def test_the_demo_corpus_is_a_linked_graph_with_no_llm(
    tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    expected = write_corpus(read_articles(EXAMPLE_CORPUS), tmp_path / "apollo")
    documents, links = len(expected.files), sum(expected.links.values())
    with sf.temp_workspace("lcg-demo-") as ws:
        sock = ws / ".lcg" / "service.sock"
        try:
            done = _demo(ws)
            out = done.stdout
            assert done.returncode == 0, out + done.stderr
            assert f"declared: {documents} documents, {links} links" in out
            assert "extraction pending (no LLM configured)" in out
            # The neighbourhood the demo prints: what Apollo 11 links to and what links to it.
            assert (
                "edges out of and" in out
                and "into Apollo 11  [Document]  declared in apollo/Apollo 11.md" in out
            ), out
            assert "  -> LINKS_TO    Neil Armstrong" in out
            assert "  <- LINKS_TO    Apollo program" in out
            assert "  <- COMMANDED   Neil Armstrong" in out  # an assertion joins the documents

            with Client(sock, timeout=120) as c:
                apollo = _document(c, "Apollo 11")
                attrs = _attributes(apollo)
                assert (attrs["origin"], attrs["source"], attrs["path"]) == (
                    "declared", "apollo", "Apollo 11.md",
                )  # fmt: skip
                armstrong = _document(c, "Neil Armstrong")
                got = c.call("knowledge_get_entity_neighbors", {"entity_uuid": apollo["uuid"]})
                links_to = [
                    e
                    for e in got["edges"]
                    if e["relation_type"] == "LINKS_TO"
                    and (e["source_node_uuid"], e["target_node_uuid"])
                    == (apollo["uuid"], armstrong["uuid"])
                ]
                assert len(links_to) == 1, got["edges"]
                assert links_to[0]["fact"] == "Apollo 11 links to Neil Armstrong"
                assert _attributes(links_to[0])["origin"] == "declared"
                # The asserted Neil Armstrong is the document: one entity of that name.
                nodes = c.call("knowledge_get_nodes_by_group", {"group_ids": ["apollo"]})
                assert [n["name"] for n in nodes["nodes"]].count("Neil Armstrong") == 1
                before = c.status()["wal_groups"]["apollo"]["max_seq"]

            entities = lcg_main(ws, "search", "Apollo 11", "--entities", "-n", "3")
            assert entities.returncode == 0, entities.stderr
            assert entities.stdout.splitlines()[0] == (
                "1. Apollo 11  [Document]  declared in apollo/Apollo 11.md"
            ), entities.stdout
            facts = lcg_main(ws, "search", "Apollo 11 links to Neil Armstrong", "--facts")
            assert facts.returncode == 0, facts.stderr
            assert "Apollo 11 links to Neil Armstrong  [LINKS_TO, declared]" in facts.stdout

            # A second run writes no file, syncs nothing and asserts nothing.
            again = _demo(ws)
            assert again.returncode == 0, again.stdout + again.stderr
            assert f"0 written, {documents} unchanged, 0 removed" in again.stdout
            assert "files 0 new, 0 changed" in again.stdout
            with Client(sock, timeout=120) as c:
                assert c.status()["wal_groups"]["apollo"]["max_seq"] == before
        finally:
            if sock.exists():
                with Client(sock, timeout=60) as c:
                    c.call("knowledge_close", {})


def test_lcg_ingest_of_the_written_folder_answers_search_from_the_declared_graph(
    tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    folder = tmp_path / "apollo"
    articles = [
        a
        for a in read_articles(EXAMPLE_CORPUS)
        if a.title in ("Apollo 11", "Neil Armstrong", "Buzz Aldrin")
    ]
    write_corpus(articles, folder)
    with sf.temp_workspace() as ws:
        ingested = lcg_main(ws, "ingest", str(folder), "--group", "apollo")
        assert ingested.returncode == 0, ingested.stderr
        # Each of the three mentions the other two.
        assert "declared: 3 documents, 6 links" in ingested.stdout, ingested.stdout
        # A group with nothing in it: the message says where the graph's rows come from.
        nothing = lcg_main(ws, "search", "Apollo 11", "--entities", "--group", "empty")
        assert nothing.returncode == 0, nothing.stderr
        assert nothing.stdout.startswith("no entities match (the graph holds a document per file")
        assert "`lcg ingest` writes them with no LLM" in nothing.stdout
        no_facts = lcg_main(ws, "search", "Apollo 11", "--facts", "--group", "empty")
        assert no_facts.stdout.startswith("no facts match (the graph holds the links")

        entities = lcg_main(ws, "search", "Apollo 11", "--entities", "-n", "1")
        assert entities.stdout == "1. Apollo 11  [Document]  declared in apollo/Apollo 11.md\n"
        facts = lcg_main(ws, "search", "Buzz Aldrin", "--facts", "-n", "10")
        assert "Apollo 11 links to Buzz Aldrin  [LINKS_TO, declared]" in facts.stdout, facts.stdout
