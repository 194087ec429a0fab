"""``lcg search QUERY``: the passages (or entities, or facts) that answer a question.

Through the workspace's service: the one running, or one served here while it runs. Passages
print as their file, heading path and score, with a snippet whose query words are marked on a
terminal; ``--json`` prints a list of hits for scripts.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

import msgspec

from lcg.cli._common import add_command, config_from, emit_json
from lcg.cli._holder import service
from lcg.cli._terminal import safe
from lcg.events import attributes_of, chunk_file

__all__ = ["Hit", "entity_line", "fact_line", "hit_of", "register", "snippet"]

_SUMMARY = "Search the workspace: passages by default, or entities or facts."
_DETAILS = """
Passages are ranked by the hybrid full-text + vector search of knowledge_search_passages with
its defaults, so an agent asking over MCP or the socket gets the same hits: a similarity floor
calibrated for the embedder (--min-score overrides it; a hint says when it left passages out),
and a bonus for recent passages that chunks of files do not get (a file's age says nothing of
its relevance). Each hit names its file and heading path. --entities and --facts ask the
graph: what the files of an ingested folder declare, with no LLM (a document per file named
by its title; links, parents, supersessions, tags and imports between them, each marked
declared), and what extraction (an LLM) or assertions add.
"""
_EXAMPLE = """
lcg search "when did Apollo 11 land"
lcg search "rotate keys" --group work -n 3 --json
lcg search "Neil Armstrong" --entities
"""


class Hit(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A passage hit as ``--json`` prints it."""

    source_file: str
    chunk_id: str
    heading: str
    score: float
    #: What the hits are ordered by (the fused BM25 + vector value; ADR 0173).
    fused_score: float
    text: str
    group_id: str
    episode_uuid: str
    reference_time: str | None
    #: The file of the document that supersedes this one (ADR 0211); left out when none.
    superseded_by: str | None = None


def hit_of(row: dict[str, Any]) -> Hit:
    """A passage row (``knowledge_search_passages``) as a hit."""
    from lcg.ingest import heading_of

    name = str(row.get("name", ""))
    description = str(row.get("source_description", ""))
    source_file = chunk_file(name, description)
    content = str(row.get("content", ""))
    return Hit(
        source_file=source_file or description,
        chunk_id=name,
        heading=heading_of(content),
        score=round(float(row.get("score", 0.0)), 4),
        fused_score=round(float(row.get("fused_score", row.get("score", 0.0))), 4),
        text=content,
        group_id=str(row.get("group_id", "")),
        episode_uuid=str(row.get("uuid", "")),
        reference_time=row.get("valid_at") or row.get("created_at"),
        superseded_by=row.get("superseded_by"),
    )


#: What ``--entities`` / ``--facts`` say when nothing matches: where the graph's rows come from.
_NONE = {
    "entities": "no entities match (the graph holds a document per file of an ingested folder "
    "and the tags they declare, `lcg ingest` writes them with no LLM, and what extraction or "
    "assertions add)",
    "facts": "no facts match (the graph holds the links, parents, supersessions, tags and "
    "imports the files of an ingested folder declare, `lcg ingest` writes them with no LLM, "
    "and what extraction or assertions add)",
}


def _attributes(row: dict[str, Any]) -> dict[str, Any]:
    """A row's attributes as a mapping (a read may give them as JSON text)."""
    raw = row.get("attributes")
    return raw if isinstance(raw, dict) else attributes_of(raw)


def _declared(row: dict[str, Any]) -> dict[str, Any] | None:
    """The attributes of a declared row (ADR 0203), else ``None``."""
    attrs = _attributes(row)
    return attrs if attrs.get("origin") == "declared" else None


def entity_line(row: dict[str, Any]) -> str:
    """An entity on one line: its name, its labels, its summary, for a declared document
    the file that declares it (``source/path``), and what supersedes it (ADR 0211); control
    characters escaped."""
    parts = [" ".join(str(row.get("name", "")).split())]
    labels = [str(x) for x in row.get("labels") or [] if x != "Entity"]
    if labels:
        parts.append(f"[{', '.join(labels)}]")
    summary = " ".join(str(row.get("summary") or "").split())
    if summary:
        parts.append(summary)
    declared = _declared(row)
    if declared is not None and declared.get("path"):
        parts.append(f"declared in {declared.get('source', '')}/{declared['path']}")
    successor = _attributes(row).get("superseded_by")
    if successor:
        parts.append(f"superseded by {successor}")
    return safe("  ".join(parts))


def fact_line(row: dict[str, Any]) -> str:
    """A fact on one line: its sentence, then its relation type, marked ``declared`` when the
    files declare it; control characters escaped."""
    fact = " ".join(str(row.get("fact", "")).split())
    relation = str(row.get("relation_type") or row.get("name") or "")
    mark = ", ".join(x for x in (relation, "declared" if _declared(row) else "") if x)
    return safe(f"{fact}  [{mark}]" if mark else fact)


_STOP = frozenset(
    "a an and are as at be by did do does for from has have how i in is it of on or that the "
    "this to was were what when where which who why will with".split()
)


def _terms(query: str) -> list[str]:
    words = [w.lower() for w in re.findall(r"\w+", query)]
    return [w for w in dict.fromkeys(words) if w not in _STOP and len(w) > 1]


def snippet(text: str, query: str, *, width: int = 220, mark: bool = False) -> str:
    """About ``width`` characters of ``text`` around its first query word, on one line, its
    control characters escaped (``safe``); with ``mark``, the query words in bold yellow (ANSI)."""
    from lcg.ingest import heading_of

    body = text.partition("\n\n")[2] if heading_of(text) else text
    # Escaped before the marks are added: the only escape sequences printed are our own.
    flat = safe(" ".join(body.split()))
    terms = _terms(query)
    pattern = (
        re.compile(r"\b(" + "|".join(map(re.escape, terms)) + r")\w*", re.I) if terms else None
    )
    found = pattern.search(flat) if pattern else None
    # The whole text when it fits; else a window that starts a little before the first word.
    start = 0 if len(flat) <= width else max(0, (found.start() if found else 0) - width // 3)
    if start:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    piece = flat[start : start + width]
    if start + width < len(flat):
        piece = piece.rsplit(" ", 1)[0] + " …"
    if start:
        piece = "… " + piece
    if mark and pattern:
        piece = pattern.sub(lambda m: f"\x1b[1;33m{m.group(0)}\x1b[0m", piece)
    return piece


def _search(args: argparse.Namespace, kind: str) -> tuple[list[dict[str, Any]], int]:
    """The rows found, and how many of the best passages the similarity floor left out;
    through the workspace's service, the one running or one served here meanwhile (ADR 0199)."""
    config = config_from(args, existing=True)
    groups = [args.group] if args.group else None
    with service(config, "search") as (client, _how):
        if kind == "entities":
            found = client.find_entities(args.query, group_ids=groups, num_results=args.n)
            return list(found["nodes"]), 0
        if kind == "facts":
            found = client.find_relationships(args.query, group_ids=groups, num_results=args.n)
            return list(found["facts"]), 0
        # The method's own defaults (ADR 0198): what an agent asking the same gets.
        found = client.search_passages(
            args.query, group_ids=groups, num_results=args.n, min_score=args.min_score
        )
        return list(found["passages"]), int(found.get("filtered_by_min_score", 0))


def _run(args: argparse.Namespace) -> int:
    kind = "entities" if args.entities else "facts" if args.facts else "passages"
    rows, filtered = _search(args, kind)
    if kind != "passages":
        if args.json:
            emit_json(rows)
            return 0
        if not rows:
            print(_NONE[kind])
        line = entity_line if kind == "entities" else fact_line
        for i, row in enumerate(rows, 1):
            print(f"{i}. {line(row)}")
        return 0
    hits = [hit_of(r) for r in rows]
    if args.json:
        emit_json(hits)
        if filtered:
            print(_floor_hint(filtered), file=sys.stderr)
        return 0
    if not hits:
        print("no passage matches")
    mark = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    for i, h in enumerate(hits, 1):
        where = safe(h.source_file + (f" › {h.heading}" if h.heading else ""))
        group = f" [{safe(h.group_id)}]" if not args.group else ""
        later = f"  superseded by {safe(h.superseded_by)}" if h.superseded_by else ""
        print(f"{i}. {where}  (rank {h.fused_score:.2f}, similarity {h.score:.2f}){group}{later}")
        print(f"   {snippet(h.text, args.query, mark=mark)}")
    if filtered:
        print(_floor_hint(filtered))
    return 0


def _floor_hint(filtered: int) -> str:
    """What ``lcg search`` says when the similarity floor left ``filtered`` passages out."""
    some = "1 passage" if filtered == 1 else f"{filtered} passages"
    return (
        f"({some} among the best matches left out: similarity under the floor; "
        "--min-score 0 shows them)"
    )


def _floor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value:g} is not from 0 to 1")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{value} is not from 1 to 100")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg search``."""
    p = add_command(
        subparsers, "search", summary=_SUMMARY, details=_DETAILS, example=_EXAMPLE, func=_run
    )
    p.add_argument("query", metavar="QUERY", help="what to look for, in words")
    p.add_argument("-g", "--group", metavar="G", help="search one group (default: every group)")
    p.add_argument("-n", type=_count, default=5, metavar="N", help="how many hits (default 5)")
    p.add_argument(
        "--min-score",
        type=_floor,
        metavar="F",
        help="similarity floor, 0-1 (default: the one calibrated for the embedder)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list of hits")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--entities", action="store_true", help="entities instead of passages")
    which.add_argument("--facts", action="store_true", help="facts instead of passages")
