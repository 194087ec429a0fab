"""Admin commands answer the same with or without a service (issue 19 item 8).

Written from the commands' documented use, not from their output today: ``lcg dump --to DIR``
writes one layout whether a service runs or not, a layout ``lcg publish --stream-root DIR``
takes as is (the reference's ``knowledge_dump_wal`` writes a new stream with a fresh
generation, lcg-api.md §3.9, §5.6), and the example in its ``--help`` works; ``lcg status`` and
``lcg verify`` name a group whose stream was never applied (not ok, exit 1), and ``lcg verify
--group`` of a group that does not exist is an error naming the groups that do; ``lcg mcp``
beside a running ``lcg serve`` reaches the workspace through it; ``lcg eval check`` answers
the same through the running service as without one. Real ``lcg serve`` and ``lcg mcp``
subprocesses, the MCP SDK client, real git; the ``lcg`` commands run in this process
(``lcg.cli.main.main``, conftest's ``lcg_main``); the hash embedder is the test double.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import subprocess
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import _service_fixtures as sf
from lcg.ingest.assertion import assert_entity
from replica_support import GIT_ENV, open_publisher, write_batch

G = "team"
GOLDEN = [
    {"read": "entities", "query": "Entity 1", "expect": {"relevant": ["Entity 1"]}},
    {"read": "passages", "query": "entity 1 neighbours", "expect": {"relevant": ["notes.md"]}},
    {"read": "neighbors", "entity": "Entity 1", "expect": {"entities": ["Entity 0", "Entity 2"]}},
    {"read": "by_source", "source": "notes.md", "expect": {"entities": []}},
]


def _layout(root: Path) -> list[str]:
    """The directories under ``root`` that hold stream segments, relative to it."""
    return sorted(str(p.parent.relative_to(root)) for p in root.rglob("*.jsonl"))


def _help_example(lcg_main: sf.LcgMain, command: str) -> list[str]:
    """The first example line of ``lcg <command> --help``, as arguments after ``lcg``."""
    done = lcg_main(None, command, "--help")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("Example:", 1)[1].strip().splitlines()
    words = shlex.split(lines[0].split("#", 1)[0])
    assert words[0] == "lcg", lines[0]
    return words[1:]


async def _mcp_names(ws: Path) -> list[str]:
    params = StdioServerParameters(
        command=str(sf.LCG), args=["mcp", "--scope", "read"], env=sf.serve_env(), cwd=str(ws)
    )
    with (ws / "mcp.log").open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                found = await s.call_tool("knowledge_get_nodes_by_group", {"group_ids": [G]})
                assert not found.is_error, found.content
                assert found.structured_content is not None
                return sorted(n["name"] for n in found.structured_content["nodes"])


def _check(lcg_main: sf.LcgMain, ws: Path) -> dict[str, object]:
    done = lcg_main(ws, "eval", "check", "--golden", str(ws / "golden.json"), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert isinstance(report, dict)
    return report


def test_admin_commands_answer_the_same_with_and_without_a_service(lcg_main: sf.LcgMain) -> None:
    with sf.temp_workspace("lcg-adm-") as ws:
        pub = open_publisher(ws)
        write_batch(pub, G, 3)
        write_batch(pub, "liminis", 1)  # the group the --help example names
        pub.close()
        (ws / "golden.json").write_text(json.dumps(GOLDEN))

        # ---- without a service
        offline = lcg_main(ws, "dump", "--group", G, "--to", "dumps/offline")
        assert offline.returncode == 0, offline.stderr
        check_offline = _check(lcg_main, ws)
        nosuch_offline = lcg_main(ws, "verify", "--group", "nosuch")

        # ---- beside a running service
        proc = sf.spawn_serve(ws)
        sock = ws / ".lcg" / "service.sock"
        try:
            sf.wait_healthy(sock, proc)
            live = lcg_main(ws, "dump", "--group", G, "--to", "dumps/live")
            assert live.returncode == 0, live.stderr
            example = lcg_main(ws, *_help_example(lcg_main, "dump"))
            assert example.returncode == 0, example.stderr
            check_live = _check(lcg_main, ws)
            nosuch_live = lcg_main(ws, "verify", "--group", "nosuch")
            names = asyncio.run(_mcp_names(ws))
            assert names == ["Entity 0", "Entity 1", "Entity 2"]
        finally:
            assert sf.stop_serve(proc, sock) == 0

        # One layout either way.
        assert _layout(ws / "dumps" / "offline") == _layout(ws / "dumps" / "live") == [G]
        # ... which a publication takes as is (dump, then publish).
        repo = ws / "pubrepo"
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        published = lcg_main(
            ws,
            "publish",
            "--group",
            G,
            "--repo",
            str(repo),
            "--stream-root",
            "dumps/live",
            env=GIT_ENV,
        )
        assert published.returncode == 0, published.stderr
        assert _layout(repo) == [G]

        # The same answers through the service as without one.
        assert check_live == check_offline
        assert check_offline["slots_ok"] is True and check_offline["questions"] == 4

        for done in (nosuch_offline, nosuch_live):
            assert done.returncode == 1, done.stdout + done.stderr
            assert "nosuch" in done.stderr and repr(G) in done.stderr, done.stderr
            assert "verify: ok" not in done.stdout


def test_status_and_verify_name_a_group_whose_stream_was_never_applied(
    lcg_main: sf.LcgMain,
) -> None:
    with sf.temp_workspace("lcg-adm-") as ws, sf.temp_workspace("lcg-adm-pub-") as other:
        mine = open_publisher(ws)
        assert_entity(mine, name="Ada", group_id="liminis")
        mine.close()
        theirs = open_publisher(other)
        assert_entity(theirs, name="Kepler", group_id="one")  # a one-event stream
        theirs.close()
        # A publisher's stream lands while no service runs: nothing has applied it here.
        shutil.copytree(other / ".lcg" / "wal" / "one", ws / ".lcg" / "wal" / "one")

        status = lcg_main(ws, "status")
        assert status.returncode == 1, status.stdout + status.stderr
        lines = [line for line in status.stdout.splitlines() if "'one'" in line]
        assert lines and "applied" in " ".join(lines), status.stdout
        verify = lcg_main(ws, "verify", "--group", "one")
        assert verify.returncode == 1, verify.stdout
        assert "'one'" in verify.stdout and "verify: FAILED" in verify.stdout

        # A service applies it when it starts; then both say so.
        proc = sf.spawn_serve(ws)
        sock = ws / ".lcg" / "service.sock"
        try:
            sf.wait_healthy(sock, proc)
            status = lcg_main(ws, "status")
            assert status.returncode == 0, status.stdout
        finally:
            assert sf.stop_serve(proc, sock) == 0
        status = lcg_main(ws, "status")
        assert status.returncode == 0, status.stdout
