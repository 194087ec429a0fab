"""The README's MCP client configuration works as pasted (issue 28 item 7).

The JSON block under "Your agent (MCP)" is read from README.md; its two paths (the ``lcg``
command and the workspace after ``-C``) are replaced by this environment's, everything else is
kept, and the command is started the way an editor starts it: a stdio subprocess spoken to by
the official MCP SDK client, from a folder that is not the workspace. Hash embedder: the test
double.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import _service_fixtures as sf
from lcg.rpc.mcp_server import default_registry, visible_tools

README = sf.REPO / "README.md"


def _readme_config() -> dict[str, Any]:
    text = README.read_text(encoding="utf-8")
    section = text.split("### Your agent (MCP)", 1)[1].split("\n## ", 1)[0].split("\n### ")[0]
    blocks = re.findall(r"```json\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the MCP section shows one JSON block to paste"
    config: dict[str, Any] = json.loads(blocks[0])
    return config


def test_the_readme_mcp_block_starts_a_server_with_read_and_write_tools() -> None:
    servers = _readme_config()["mcpServers"]
    assert list(servers) == ["lcg"]
    entry = servers["lcg"]
    args: list[str] = entry["args"]
    # The advice the README gives: a workspace named with -C, and read and write scopes.
    assert args[args.index("mcp") + 1 :] == ["--scope", "read,write"]
    expected = [s.name for s in visible_tools(default_registry(), ("read", "write"))]
    assert "knowledge_query_cypher" not in expected and "knowledge_close" not in expected

    with sf.temp_workspace("lcg-readme-mcp-") as root:
        ws, elsewhere = root / "ws", root / "elsewhere"
        ws.mkdir()
        elsewhere.mkdir()
        pasted = [str(ws) if i > 0 and args[i - 1] == "-C" else a for i, a in enumerate(args)]
        assert pasted != args  # the workspace path was the one to replace

        async def session() -> None:
            params = StdioServerParameters(
                command=str(sf.LCG), args=pasted, env=sf.serve_env(), cwd=str(elsewhere)
            )
            with (root / "mcp.log").open("a") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write) as s:
                        await s.initialize()
                        names = [t.name for t in (await s.list_tools()).tools]
                        assert names == expected
                        added = await s.call_tool(
                            "knowledge_process_chunk",
                            {
                                "chunk_text": "Apollo 11 landed in the Sea of Tranquility.",
                                "chunk_id": "a#0",
                                "source_file": "apollo.md",
                            },
                        )
                        assert not added.is_error, added.content
                        found = await s.call_tool(
                            "knowledge_search_passages", {"query": "Sea of Tranquility"}
                        )
                        assert found.structured_content is not None
                        assert [p["name"] for p in found.structured_content["passages"]] == ["a#0"]

        asyncio.run(asyncio.wait_for(session(), 300))
        # The server wrote into the workspace it was given, not where it was started.
        assert (ws / ".lcg").is_dir() and not (elsewhere / ".lcg").exists()
