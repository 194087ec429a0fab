"""Write a synthetic reference workspace (the reference's Cypher stream) for the import bench.

    PYTHONPATH=wal-fixtures python bench/reference_stream.py ROOT [LINES] [DIM]

``ROOT/.lcg/wal/liminis/`` receives ``LINES`` five-key lines (lcg-api §5.5; default 7,300)
in two segment files, written from the reference's ingest templates (§5.2): per episode a few
entities (new ones created with their name vector, known ones given a longer summary), edges
(the ``RelatesToNode_`` row with its fact vector, the direct relationship, the two hops), the
episode with its content vector and its mentions; now and then a label, attribute or
relation-type update and an episode delete. Vectors have ``DIM`` (default 768, bge-base)
components. The stream is the same for the same arguments.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

# The reference's templates (lcg-api §5.2) are the fixture generator's: one spelling of each.
# ``wal-fixtures/`` is on pytest's path; run as a script, put it on PYTHONPATH.
from make_reference_streams import (
    DIRECT,
    E_CREATE,
    E_SUMMARY,
    EP_CREATE,
    EP_DELETE,
    HOPS,
    MENTION,
    RN_CREATE,
    SET_LABELS,
    SET_RT,
)

GROUP = "liminis"

_WORDS = (
    "orbit lander module thruster telemetry payload booster capsule docking hatch crater "
    "regolith ascent descent gimbal sextant beacon antenna reactor coolant valve"
).split()


class _Writer:
    def __init__(self, rng: random.Random, dim: int, limit: int) -> None:
        self.rng = rng
        self.dim = dim
        self.limit = limit
        self.lines: list[str] = []

    @property
    def full(self) -> bool:
        return len(self.lines) >= self.limit

    def vector(self) -> list[float]:
        return [round(self.rng.uniform(-1, 1), 6) for _ in range(self.dim)]

    def line(self, cypher: str, params: dict[str, Any]) -> None:
        if self.full:
            return
        seq = len(self.lines)
        ts = f"2024-05-01T{seq // 3600 % 24:02d}:{seq // 60 % 60:02d}:{seq % 60:02d}.000000+00:00"
        record = {"seq": seq, "ts": ts, "db": "", "cypher": cypher, "params": params}
        self.lines.append(json.dumps(record, separators=(",", ":")))


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _episode(w: _Writer, n: int, known: list[str]) -> None:
    rng = w.rng
    when = f"2024-{1 + n // 2000 % 12:02d}-{1 + n % 28:02d}T10:00:00Z"
    chosen: list[str] = []
    for i in range(3):
        if known and (i == 2 or rng.random() < 0.3):
            uuid = rng.choice(known)
            w.line(E_SUMMARY, {"uuid": uuid, "summary": _text(rng, 12)})
        else:
            uuid = f"e-{n}-{i}"
            w.line(E_CREATE, {
                "uuid": uuid, "name": f"{rng.choice(_WORDS)} {n}-{i}", "group_id": GROUP,
                "labels": ["Entity"], "created_at": when, "name_embedding": w.vector(),
                "summary": _text(rng, 8), "attributes": "{}",
            })  # fmt: skip
            known.append(uuid)
        if uuid not in chosen:
            chosen.append(uuid)
    for j, (src, dst) in enumerate(zip(chosen, chosen[1:], strict=False)):
        fact = _text(rng, 10)
        common = {
            "uuid": f"r-{n}-{j}",
            "name": f"{src} \u2192 {dst}",
            "group_id": GROUP,
            "fact": fact,
            "valid_at": when,
            "invalid_at": None,
            "attributes": "{}",
        }
        w.line(RN_CREATE, {**common, "created_at": when, "fact_embedding": w.vector(),
                           "relation_type": "RELATED_TO"})  # fmt: skip
        w.line(DIRECT, {**common, "src": src, "dst": dst})
        w.line(HOPS, {"src": src, "rn": common["uuid"], "dst": dst})
    ep = f"ep-{n}"
    w.line(EP_CREATE, {
        "uuid": ep, "name": f"chunk-{n}", "group_id": GROUP, "created_at": when,
        "source": "text", "source_description": f"notes/{n % 50}.md", "content": _text(rng, 60),
        "content_embedding": w.vector(), "valid_at": when, "entity_edges": chosen,
    })  # fmt: skip
    for en in chosen:
        w.line(MENTION, {"ep": ep, "en": en, "group_id": GROUP})
    if n % 10 == 9:
        w.line(SET_LABELS, {"uuid": chosen[0], "labels": ["Entity", "Thing"]})
        w.line(SET_RT, {"uuid": f"r-{n}-0", "rt": "PART_OF"})
    if n % 25 == 24:
        w.line(EP_DELETE, {"uuid": f"ep-{n - 1}"})


def write_reference_stream(root: Path, lines: int = 7300, dim: int = 768) -> int:
    """Write the stream under ``root/.lcg/wal/liminis/``; the number of lines written."""
    w = _Writer(random.Random(7), dim, lines)
    known: list[str] = []
    n = 0
    while not w.full:
        _episode(w, n, known)
        n += 1
    gdir = root / ".lcg" / "wal" / GROUP
    gdir.mkdir(parents=True, exist_ok=True)
    half = len(w.lines) // 2
    for name, part in (
        ("20240501_090000_aaaaaa_0000.jsonl", w.lines[:half]),
        ("20240502_090000_bbbbbb_0000.jsonl", w.lines[half:]),
    ):
        (gdir / name).write_text("".join(line + "\n" for line in part), encoding="utf-8")
    return len(w.lines)


if __name__ == "__main__":
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 7300
    width = int(sys.argv[3]) if len(sys.argv) > 3 else 768
    print(write_reference_stream(Path(sys.argv[1]), count, width))
