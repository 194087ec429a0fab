"""``make demo`` / ``lcg demo``: a service on the embedded defaults, fed with the Apollo corpus.

Starts ``lcg serve`` in a demo workspace (unless one already answers there), ingests the
Apollo articles of ``../shared/data/apollo/`` as chunks (lite mode unless an extraction
provider is configured), asserts a few entities and relationships, prints some searches and
the status, and leaves the service running.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from lcg.cli._service import ProgressBar, live_client
from lcg.config import Config
from lcg.rpc.client import Client

__all__ = ["main", "register"]

_HELP = """Start a demo service on the embedded defaults and fill it with the Apollo corpus.

Example:
  lcg demo                          # workspace ./demo-workspace, data from ../shared/data/apollo
  lcg demo --workspace /tmp/demo --limit 50
"""


class _Article(msgspec.Struct):
    title: str
    prose: str


def _find_corpus(explicit: str | None) -> Path:
    candidates = [Path(explicit)] if explicit else []
    here = Path.cwd()
    candidates += [
        here / ".." / "shared" / "data" / "apollo",
        Path(__file__).resolve().parents[4] / ".." / "shared" / "data" / "apollo",
    ]
    for c in candidates:
        if (c / "corpus_prose.jsonl").is_file():
            return c.resolve()
    raise SystemExit(
        "Error: the Apollo corpus was not found; pass --data DIR (the folder holding "
        "corpus_prose.jsonl)"
    )


def _articles(corpus: Path, limit: int | None) -> list[_Article]:
    out: list[_Article] = []
    with open(corpus / "corpus_prose.jsonl", "rb") as fh:
        for line in fh:
            raw = msgspec.json.decode(line)
            if isinstance(raw, dict) and "_header" in raw:
                continue
            out.append(msgspec.convert(raw, _Article))
    return out[:limit] if limit else out


def _chunks(text: str, size: int = 4000) -> list[str]:
    paragraphs = [p.strip() for p in text.split("\n") if p.strip()]
    chunks: list[str] = []
    current = ""
    for para in paragraphs:
        if current and len(current) + len(para) + 1 > size:
            chunks.append(current)
            current = ""
        current = f"{current}\n{para}" if current else para
    if current:
        chunks.append(current)
    return chunks or [text]


def _start_service(workspace: Path) -> int:
    workspace.mkdir(parents=True, exist_ok=True)
    log = open(workspace / "serve.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [sys.executable, "-m", "lcg.cli.main", "-C", str(workspace), "serve"],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ},
    )
    return proc.pid


def _show(title: str, rows: list[dict[str, Any]], fields: tuple[str, ...]) -> None:
    print(f"\n{title}")
    if not rows:
        print("  (no results)")
    for row in rows:
        text = " | ".join(str(row.get(f, ""))[:90] for f in fields)
        print(f"  - {text}")


def run(workspace: Path, data: str | None, limit: int | None, silent: bool) -> int:
    """Run the demo; returns the exit status."""
    corpus = _find_corpus(data)
    config = Config.from_env(workspace)
    client = live_client(config)
    pid: int | None = None
    if client is None:
        print(f"starting lcg serve in {workspace} (log: {workspace / 'serve.log'}) ...")
        pid = _start_service(workspace)
        client = Client(config.socket_path, timeout=None)
        client.wait_ready(timeout=600)
    else:
        print(f"using the service already running in {workspace}")
    articles = _articles(corpus, limit)
    work = [(a, i, c) for a in articles for i, c in enumerate(_chunks(a.prose))]
    bar = ProgressBar("ingesting", silent=silent)
    pending = 0
    for n, (article, index, chunk) in enumerate(work, start=1):
        result = client.process_chunk(
            chunk_text=chunk,
            chunk_id=f"{article.title}#{index}",
            source_file=f"{article.title}.txt",
            group_id="apollo",
        )
        if result.get("extraction", {}).get("status") == "pending":
            pending += 1
        bar.update(n, len(work), article.title[:30])
        if not bar.enabled and (n % 50 == 0 or n == len(work)):
            print(f"  ingested {n}/{len(work)} chunks")
    bar.done()
    facts = [
        ("Neil Armstrong", "Person", "American astronaut, first person to walk on the Moon."),
        ("Buzz Aldrin", "Person", "American astronaut, lunar module pilot of Apollo 11."),
        ("Apollo 11", "Mission", "The first crewed Moon landing, July 1969."),
        ("NASA", "Organization", "The United States space agency."),
        ("Saturn V", "Spacecraft", "The rocket that launched the Apollo missions."),
    ]
    for name, label, summary in facts:
        client.assert_entity(name=name, labels=[label], summary=summary, group_id="apollo")
    for src, pred, dst, fact in [
        ("Neil Armstrong", "COMMANDED", "Apollo 11", "Neil Armstrong commanded Apollo 11."),
        ("Buzz Aldrin", "FLEW_ON", "Apollo 11", "Buzz Aldrin flew on Apollo 11."),
        ("NASA", "OPERATED", "Apollo 11", "NASA operated the Apollo 11 mission."),
        ("Apollo 11", "LAUNCHED_ON", "Saturn V", "Apollo 11 was launched on a Saturn V."),
    ]:
        client.assert_relationship(
            source_name=src, target_name=dst, predicate=pred, fact=fact, group_id="apollo"
        )
    print(
        f"\ningested {len(work)} chunks from {len(articles)} articles ({pending} new, pending "
        "extraction: no LLM configured)"
        if pending
        else f"\ningested {len(work)} chunks"
    )
    ents = client.find_entities(query="first man on the moon", group_ids=["apollo"], num_results=3)
    _show('find_entities "first man on the moon"', ents["nodes"], ("name", "summary"))
    facts_found = client.find_relationships(
        query="who commanded Apollo 11", group_ids=["apollo"], num_results=3
    )
    _show('find_relationships "who commanded Apollo 11"', facts_found["facts"], ("fact",))
    passages = client.search_passages(
        query="first crewed landing on the Moon", group_ids=["apollo"], num_results=3
    )
    _show(
        'search_passages "first crewed landing on the Moon"',
        passages["passages"],
        ("name", "score", "content"),
    )
    status = client.status()
    print(
        f"\nstatus: {status['entity_count']} entities, {status['relationship_count']} "
        f"relationships, {status['episode_count']} episodes, embedder "
        f"{status['embedding_model']}"
    )
    for gid, g in status.get("wal_groups", {}).items():
        print(
            f"  group {gid}: max_seq {g['max_seq']}, applied {g['applied_seq']}, "
            f"{g['hydration_status']}"
        )
    client.close()
    where = f" (pid {pid})" if pid else ""
    print(
        f"\nThe service keeps running{where} on {config.socket_path}.\n"
        f"Connect an MCP client with:  lcg mcp --connect {config.socket_path}\n"
        f"Stop it with:                kill {pid if pid else '<pid>'}  (or call knowledge_close)"
    )
    return 0


def _run_args(args: argparse.Namespace) -> int:
    ws = Path(args.workspace_dir or getattr(args, "workspace", None) or "demo-workspace")
    return run(ws.resolve(), args.data, args.limit, args.silent)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg demo``."""
    p = subparsers.add_parser(
        "demo",
        help="start a demo service and ingest the Apollo corpus",
        description=_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workspace", dest="workspace_dir", help="demo workspace directory")
    p.add_argument("--data", help="folder holding corpus_prose.jsonl")
    p.add_argument("--limit", type=int, help="ingest only the first N articles")
    p.add_argument("-s", "--silent", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_args)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m lcg.cli.demo`` (``make demo``)."""
    parser = argparse.ArgumentParser(
        prog="lcg demo", description=_HELP, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", dest="workspace_dir", default="demo-workspace")
    parser.add_argument("--data")
    parser.add_argument("--limit", type=int)
    parser.add_argument("-s", "--silent", action="store_true")
    args = parser.parse_args(argv)
    return _run_args(args)


if __name__ == "__main__":
    raise SystemExit(main())
