"""``make demo`` / ``lcg demo``: a service on the embedded defaults, fed with the Apollo corpus.

Starts ``lcg serve`` in a demo workspace (unless one already answers there), ingests the
Apollo articles of the repository's ``examples/apollo/`` as chunks (lite mode unless an extraction
provider is configured), asserts a few entities and relationships, prints some searches and
the status, and leaves the service running.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

from lcg.cli._service import ProgressBar, live_client
from lcg.cli._terminal import safe
from lcg.config import Config
from lcg.errors import LcgError
from lcg.rpc import Client, TransportError

__all__ = ["main", "register"]

_HELP = """Start a demo service on the embedded defaults and fill it with the Apollo corpus.

Example:
  lcg demo                          # workspace ./demo-workspace, data from examples/apollo
  lcg demo --workspace /tmp/demo --limit 50
"""


class _Article(msgspec.Struct):
    title: str
    prose: str


#: The corpus shipped in the repository (``examples/apollo/``, CC BY-SA 4.0; see its README).
EXAMPLE_CORPUS = Path(__file__).resolve().parents[3] / "examples" / "apollo"


def _find_corpus(explicit: str | None) -> Path:
    """The folder holding ``corpus_prose.jsonl``: ``--data DIR``, else the repository's copy."""
    where = Path(explicit) if explicit else EXAMPLE_CORPUS
    if (where / "corpus_prose.jsonl").is_file():
        return where.resolve()
    if explicit:
        raise SystemExit(
            f"Error: {where} holds no corpus_prose.jsonl; pass --data DIR (a folder holding one)"
        )
    raise SystemExit(
        f"Error: the Apollo corpus is not at {where} (it ships in the repository's "
        "examples/apollo/; an installed package has no copy): pass --data DIR, the folder "
        "holding corpus_prose.jsonl"
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


def _start_service(workspace: Path) -> subprocess.Popen[bytes]:
    workspace.mkdir(parents=True, exist_ok=True)
    log = open(workspace / "serve.log", "ab")  # noqa: SIM115 - handed to the child
    # ``python -m lcg`` runs in the child itself, so its pid is the service's.
    return subprocess.Popen(
        [sys.executable, "-m", "lcg", "-C", str(workspace), "serve"],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ},
    )


def _wait_started(proc: subprocess.Popen[bytes], client: Client, log: Path) -> None:
    """Wait until the started service is healthy; stop at once if it exits instead."""
    deadline = time.monotonic() + 600
    while True:
        try:
            client.wait_ready(timeout=1.0, starting=True)
            return
        except TransportError:
            if proc.poll() is not None:
                raise SystemExit(
                    f"Error: lcg serve exited with status {proc.returncode} before it was "
                    f"ready; its log is {log}"
                ) from None
            if time.monotonic() > deadline:
                raise
        except LcgError as exc:
            # It answered, with an error (degraded, or a fault of the service itself).
            raise LcgError(
                f"lcg serve (pid {proc.pid}) is not healthy: {exc}; its log is {log}"
            ) from exc


def service_pid(socket_path: Path) -> int | None:
    """The pid of the process listening on ``socket_path`` (Linux ``SO_PEERCRED``), or None."""
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        return None  # not Linux: the kernel offers no peer pid this way
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(socket_path))
            raw = sock.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
        except OSError:
            return None
    pid: int = struct.unpack("3i", raw)[0]
    return pid or None


def lcg_command() -> str:
    """How to run ``lcg`` from here: bare ``lcg`` only when that is this installation's."""
    script = Path(sys.executable).parent / "lcg"
    on_path = shutil.which("lcg")
    if on_path and script.exists() and Path(on_path).resolve() == script.resolve():
        return "lcg"
    if not script.exists():
        return f"{sys.executable} -m lcg"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def _show(title: str, rows: list[dict[str, Any]], fields: tuple[str, ...]) -> None:
    print(f"\n{title}")
    if not rows:
        print("  (no results)")
    for row in rows:
        parts = []
        for f in fields:
            value = row.get(f, "")
            text = f"{value:.3f}" if isinstance(value, float) else " ".join(str(value).split())
            parts.append(text[:80] + ("..." if len(text) > 80 else ""))
        print(f"  - {safe(' | '.join(parts))}")


_ENTITIES = [
    ("Neil Armstrong", "Person", "American astronaut, first person to walk on the Moon."),
    ("Buzz Aldrin", "Person", "American astronaut, lunar module pilot of Apollo 11."),
    ("Apollo 11", "Mission", "The first crewed Moon landing, July 1969."),
    ("NASA", "Organization", "The United States space agency."),
    ("Saturn V", "Spacecraft", "The rocket that launched the Apollo missions."),
]
_RELATIONSHIPS = [
    ("Neil Armstrong", "COMMANDED", "Apollo 11", "Neil Armstrong commanded Apollo 11."),
    ("Buzz Aldrin", "FLEW_ON", "Apollo 11", "Buzz Aldrin flew on Apollo 11."),
    ("NASA", "OPERATED", "Apollo 11", "NASA operated the Apollo 11 mission."),
    ("Apollo 11", "LAUNCHED_ON", "Saturn V", "Apollo 11 was launched on a Saturn V."),
]


def _print_status(workspace: Path, lcg: str) -> None:
    """Print what ``lcg status`` prints (the real command, against the running service)."""
    print(f"\n$ {lcg} -C {workspace} status")
    done = subprocess.run(
        [sys.executable, "-m", "lcg", "-C", str(workspace), "status"],
        capture_output=True,
        text=True,
        check=False,
    )
    sys.stdout.write(done.stdout)
    if done.returncode not in (0, 1):
        sys.stdout.write(done.stderr)


def _assert_missing(client: Client) -> tuple[int, int]:
    """Assert the demo's entities and relationships that the group does not hold yet.

    A rerun finds them all and appends nothing (asserting again would append an event
    each, even with nothing changed). Returns how many of each were asserted.
    """
    nodes = client.call("knowledge_get_nodes_by_group", {"group_ids": ["apollo"]})["nodes"]
    have = {(n.get("name"), n.get("summary")) for n in nodes}
    entities = 0
    for name, label, summary in _ENTITIES:
        if (name, summary) not in have:
            client.assert_entity(name=name, labels=[label], summary=summary, group_id="apollo")
            entities += 1
    edges = client.call("knowledge_get_edges_by_group", {"group_ids": ["apollo"]})["edges"]
    facts = {e.get("fact") for e in edges}
    relationships = 0
    for src, pred, dst, fact in _RELATIONSHIPS:
        if fact not in facts:
            client.assert_relationship(
                source_name=src, target_name=dst, predicate=pred, fact=fact, group_id="apollo"
            )
            relationships += 1
    return entities, relationships


def run(workspace: Path, data: str | None, limit: int | None, silent: bool) -> int:
    """Run the demo; returns the exit status."""
    corpus = _find_corpus(data)
    config = Config.from_env(workspace)
    lcg = lcg_command()
    print(f"lcg demo: workspace {workspace}, corpus {corpus}")
    client = live_client(config)
    if client is None:
        log = workspace / "serve.log"
        print(f"starting lcg serve (log: {log}) ...")
        started = time.monotonic()
        proc = _start_service(workspace)
        client = Client(config.socket_path, timeout=None)
        _wait_started(proc, client, log)
        pid: int | None = proc.pid
        print(f"service healthy after {time.monotonic() - started:.1f} s (pid {pid})")
    else:
        pid = service_pid(config.socket_path)
        print(f"using the service already running in this workspace (pid {pid or 'unknown'})")
    articles = _articles(corpus, limit)
    work = [(a, i, c) for a in articles for i, c in enumerate(_chunks(a.prose))]
    print(f"ingesting {len(work)} chunks from {len(articles)} articles into group 'apollo' ...")
    bar = ProgressBar("ingesting", silent=silent)
    new = duplicate = 0
    status: str | None = None
    started = time.monotonic()
    for n, (article, index, chunk) in enumerate(work, start=1):
        result = client.process_chunk(
            chunk_text=chunk,
            chunk_id=f"{article.title}#{index}",
            source_file=f"{article.title}.txt",
            group_id="apollo",
        )
        status = result.get("extraction", {}).get("status")
        if status == "duplicate":
            duplicate += 1
        else:
            new += 1
        bar.update(n, len(work), article.title[:30])
        if not bar.enabled and not silent and (n % 50 == 0 or n == len(work)):
            print(f"  {n}/{len(work)} chunks")
    bar.done()
    took = time.monotonic() - started
    rate = len(work) / took if took > 0 else 0.0
    if status == "extracted":
        mode = "extracted"
    elif new == 0:
        mode = "nothing new to store"
    else:
        mode = "lite mode: stored and passage-searchable, extraction pending (no LLM configured)"
    print(
        f"ingested {len(work)} chunks in {took:.1f} s ({rate:.1f} chunks/s): {new} new, "
        f"{duplicate} already there; {mode}"
    )
    entities, relationships = _assert_missing(client)
    kept = (len(_ENTITIES) - entities, len(_RELATIONSHIPS) - relationships)
    print(
        f"asserted {entities} entities and {relationships} relationships"
        + (f" ({kept[0]} and {kept[1]} were already there)" if any(kept) else "")
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
    client.close()
    _print_status(workspace, lcg)
    stop = f"kill {pid}   (or call knowledge_close)" if pid else "call knowledge_close"
    print(
        f"\nThe service keeps running (pid {pid or 'unknown'}) on {config.socket_path}.\n"
        f"  see what it holds:      {lcg} -C {workspace} status\n"
        f"  connect an MCP client:  {lcg} mcp --connect {config.socket_path}\n"
        f"  stop it:                {stop}"
    )
    if lcg != "lcg" and " " not in lcg:
        print(
            f"  (`lcg` is not on your PATH: run it as {lcg}, or first "
            f"`. {Path(lcg).parent / 'activate'}` to use plain `lcg`)"
        )
    return 0


def _positive(text: str) -> int:
    """An argparse type: an integer >= 1 (0 would read as "no limit")."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number of articles")
    return value


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
    p.add_argument("--limit", type=_positive, metavar="N", help="ingest only the first N articles")
    p.add_argument("-s", "--silent", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_args)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m lcg.cli.demo`` (``make demo``)."""
    parser = argparse.ArgumentParser(
        prog="lcg demo", description=_HELP, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", dest="workspace_dir", default="demo-workspace")
    parser.add_argument("--data")
    parser.add_argument(
        "--limit", type=_positive, metavar="N", help="ingest only the first N articles"
    )
    parser.add_argument("-s", "--silent", action="store_true")
    args = parser.parse_args(argv)
    try:
        return _run_args(args)
    except LcgError as exc:
        # As `lcg demo` reports it: one line saying what failed, no traceback.
        print(f"Error: {safe(exc, lines=True)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
