"""The agent gets what the shell gets (issue 28 item 5, ADR 0198), on the real embedded model.

A small tree of one's own notes, ingested with the default embedder (all-MiniLM-L6-v2 int8,
not the hash double: the floor under test is a property of that model's cosines), files of
very different ages. For a handful of natural questions, ``lcg search`` and an agent's
``knowledge_search_passages`` with default arguments through a real ``lcg mcp`` stdio
subprocess (the official MCP SDK client) return the same passages in the same order; and
the reference's floor of 0.5 drops answers the shell finds first.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import _service_fixtures as sf

MINILM = {"LCG_EMBEDDER": "local"}
DAY = 86_400.0

#: path → (text, age in days): the ages differ so that a recency prior would reorder them.
NOTES: dict[str, tuple[str, float]] = {
    "moon.md": (
        "# Apollo 11\n\nApollo 11 was the first crewed landing on the Moon, on July 20, 1969.\n\n"
        "## Crew\n\nNeil Armstrong and Buzz Aldrin walked on the surface while Michael Collins "
        "stayed in lunar orbit aboard Columbia.\n\n## Return\n\nThe crew splashed down in the "
        "Pacific Ocean on July 24 and spent three weeks in quarantine.\n",
        700.0,
    ),
    "bread.md": (
        "# Sourdough\n\nFeed the starter the night before. Mix flour, water and salt, fold the "
        "dough every half hour, then let it rise overnight in the fridge for twelve hours. Bake "
        "in a covered pot at 250 degrees.\n",
        1.0,
    ),
    "garden.md": (
        "# Vegetable patch\n\nTomatoes want six to eight hours of full sun and deep watering "
        "twice a week; mulch keeps the soil moist. The courgettes went by the fence.\n",
        30.0,
    ),
    "travel.md": (
        "# Lisbon, spring trip\n\nWe took tram 28 up to the castle and had grilled sardines at "
        "a small place in Alfama. The pastries in Belém were the best of the trip.\n",
        3.0,
    ),
    "car.txt": (
        "The car went in for its first service in March. Afterwards the GPS stopped working and "
        "the garage replaced the head unit under warranty.\n",
        120.0,
    ),
    "tools/orbit.py": (
        "import math\n\n\ndef orbital_period(a_km: float, mu: float = 4902.8) -> float:\n"
        '    """Period of a lunar orbit in seconds."""\n'
        "    return 2 * math.pi * math.sqrt(a_km**3 / mu)\n",
        400.0,
    ),
}

#: A question as a person asks it, and the file that answers it.
QUESTIONS = [
    ("who stayed behind in orbit during the moon landing", "notes/moon.md"),
    ("how long does the dough need to rise", "notes/bread.md"),
    ("how much sunlight do tomato plants need", "notes/garden.md"),
    ("where did we eat fish on holiday", "notes/travel.md"),
    ("what broke after the car was serviced", "notes/car.txt"),
]
N = 5


def _tree(root: Path) -> Path:
    notes = root / "notes"
    now = time.time()
    for rel, (text, age_days) in NOTES.items():
        path = notes / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        # Not a git tree: a file's reference time is its modification time.
        os.utime(path, (now - age_days * DAY, now - age_days * DAY))
    return notes


def _shell(ws: Path, question: str) -> list[dict[str, Any]]:
    done = sf.run_lcg(ws, "search", question, "-n", str(N), "--json", env=MINILM)
    assert done.returncode == 0, done.stderr
    hits: list[dict[str, Any]] = json.loads(done.stdout)
    return hits


async def _agent(ws: Path, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each call's result, through one ``lcg mcp`` session with the README's scope."""
    params = StdioServerParameters(
        command=str(sf.LCG),
        args=["-C", str(ws), "mcp", "--scope", "read,write"],
        env=sf.serve_env(MINILM),
        cwd=str(ws),
    )
    out: list[dict[str, Any]] = []
    with (ws / "mcp.log").open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                for arguments in calls:
                    result = await s.call_tool("knowledge_search_passages", arguments)
                    assert not result.is_error, result.content
                    assert result.structured_content is not None
                    out.append(result.structured_content)
    return out


def test_default_search_over_mcp_returns_what_lcg_search_prints() -> None:
    with sf.temp_workspace("lcg-agree-") as ws:
        notes = _tree(ws)
        done = sf.run_lcg(ws, "ingest", str(notes), env=MINILM)
        assert done.returncode == 0, done.stderr
        shell = {q: _shell(ws, q) for q, _file in QUESTIONS}
        # The natural questions find their file first (the shell's own job).
        for question, answer in QUESTIONS:
            assert shell[question], question
            assert shell[question][0]["source_file"] == answer, (question, shell[question])

        defaults = [{"query": q, "num_results": N} for q, _file in QUESTIONS]
        reference_floor = [{**call, "min_score": 0.5} for call in defaults]
        got = asyncio.run(asyncio.wait_for(_agent(ws, defaults + reference_floor), 300))
        agent, floored = got[: len(QUESTIONS)], got[len(QUESTIONS) :]

        for (question, _file), answer in zip(QUESTIONS, agent, strict=True):
            # The same passages, in the same order, with the same scores.
            assert [p["name"] for p in answer["passages"]] == [
                h["chunk_id"] for h in shell[question]
            ], question
            assert [round(p["score"], 4) for p in answer["passages"]] == [
                h["score"] for h in shell[question]
            ], question
        # The reference's floor (0.5, chosen for its own embedder) loses answers the shell
        # finds first, and says so.
        lost = [
            question
            for (question, _file), answer in zip(QUESTIONS, floored, strict=True)
            if shell[question][0]["chunk_id"] not in [p["name"] for p in answer["passages"]]
        ]
        assert lost, [h[0]["score"] for h in shell.values()]
        for (question, _file), answer in zip(QUESTIONS, floored, strict=True):
            if question in lost:
                assert answer["filtered_by_min_score"] >= 1, answer
