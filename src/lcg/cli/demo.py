"""``make demo`` / ``lcg demo``: a service on the embedded defaults, fed with the Apollo corpus.

Starts ``lcg serve`` in a demo workspace (unless one already answers there), writes the Apollo
articles of the repository's ``examples/apollo/`` as a folder of linked Markdown files in the
workspace (``_demo_corpus``: the article links restored as ``[[Title]]``, ADR 0209) and syncs it
into group ``apollo`` as ``lcg ingest`` does (lite mode unless an extraction provider is
configured), so the declared pass makes a document per article and a ``LINKS_TO`` edge per
link. It asserts a few entities and relationships, prints a document's neighbourhood, some
searches and the status, and leaves the service running.
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

from lcg.cli._demo_corpus import CORPUS_FILE, read_articles, write_corpus
from lcg.cli._service import ProgressBar, live_client
from lcg.cli._sync import SyncBar, service_backend, summary_line
from lcg.cli._terminal import safe
from lcg.cli.search import entity_line, fact_line
from lcg.client import Client, TransportError
from lcg.config import Config
from lcg.errors import LcgError

__all__ = ["main", "register"]

_HELP = """Start a demo service on the embedded defaults and fill it with the Apollo corpus.

The articles are written as Markdown files in WORKSPACE/apollo/ (front matter: title, and the
revision id as id) and synced into group 'apollo' as `lcg ingest` does, so each article is a
Document and each link between articles a LINKS_TO edge, with no LLM. The captured prose lost
Wikipedia's link markup: the demo restores a link as [[Title]] at the first whole-word mention
of another article's exact title (longest titles first), where Wikipedia links a first
mention. That is a reconstruction: see examples/apollo/README.md and ADR 0209.

Example:
  lcg demo                          # workspace ./demo-workspace, data from examples/apollo
  lcg demo --workspace /tmp/demo --limit 50
"""


#: The corpus shipped in the repository (``examples/apollo/``, CC BY-SA 4.0; see its README).
EXAMPLE_CORPUS = Path(__file__).resolve().parents[3] / "examples" / "apollo"
#: The group the demo fills, and the folder of the workspace its Markdown files are written to.
GROUP = "apollo"
CORPUS_FOLDER = "apollo"
#: The document whose neighbourhood the demo prints (when its article is ingested).
CENTRE = "Apollo 11"
#: The most neighbours printed on each side of it.
_SHOWN = 12
#: How long the vectors may make no progress before the demo stops waiting for them.
_STALL_S = 120.0


def _find_corpus(explicit: str | None) -> Path:
    """The folder holding ``corpus_prose.jsonl``: ``--data DIR``, else the repository's copy."""
    where = Path(explicit) if explicit else EXAMPLE_CORPUS
    if (where / CORPUS_FILE).is_file():
        return where.resolve()
    if explicit:
        raise SystemExit(
            f"Error: {where} holds no {CORPUS_FILE}; pass --data DIR (a folder holding one)"
        )
    raise SystemExit(
        f"Error: the Apollo corpus is not at {where} (it ships in the repository's "
        "examples/apollo/; an installed package has no copy): pass --data DIR, the folder "
        f"holding {CORPUS_FILE}"
    )


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


def _show(title: str, lines: list[str], width: int = 100) -> None:
    print(f"\n{title}")
    if not lines:
        print("  (no results)")
    for line in lines:
        print(f"  - {line[:width]}{'...' if len(line) > width else ''}")


def _passage(row: dict[str, Any]) -> str:
    content = " ".join(str(row.get("content", "")).split())
    return safe(f"{row.get('name', '')} | {float(row.get('score', 0.0)):.3f} | {content[:80]}")


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

    An entity is asserted only when no entity of the group has its name: the document of an
    article of that name is that entity already, and asserting over it would replace the
    declared record (its path, its origin) with the asserted one. The relationships then
    join whichever entities hold the names. A rerun finds them all and appends nothing
    (asserting again would append an event each, even with nothing changed). Returns how
    many of each were asserted.
    """
    nodes = client.call("knowledge_get_nodes_by_group", {"group_ids": [GROUP]})["nodes"]
    have = {str(n.get("name", "")).casefold() for n in nodes}
    entities = 0
    for name, label, summary in _ENTITIES:
        if name.casefold() not in have:
            client.assert_entity(name=name, labels=[label], summary=summary, group_id=GROUP)
            entities += 1
    edges = client.call("knowledge_get_edges_by_group", {"group_ids": [GROUP]})["edges"]
    facts = {e.get("fact") for e in edges}
    relationships = 0
    for src, pred, dst, fact in _RELATIONSHIPS:
        if fact not in facts:
            client.assert_relationship(
                source_name=src, target_name=dst, predicate=pred, fact=fact, group_id=GROUP
            )
            relationships += 1
    return entities, relationships


def _show_neighbourhood(client: Client, title: str) -> None:
    """Print the edges around the document ``title`` (``knowledge_get_entity_neighbors``):
    what it links to, then what links to it, at most ``_SHOWN`` of each."""
    nodes = client.call("knowledge_get_nodes_by_group", {"group_ids": [GROUP]})["nodes"]
    doc = next(
        (n for n in nodes if n.get("name") == title and "Document" in (n.get("labels") or [])),
        None,
    )
    if doc is None:
        print(f'\nneighbours of the document "{safe(title)}": no such document')
        return
    found = client.call(
        "knowledge_get_entity_neighbors",
        {"entity_uuid": doc["uuid"], "num_results": 1000, "group_ids": [GROUP]},
    )
    names = {n["uuid"]: str(n.get("name", "?")) for n in found["nodes"]}
    out: list[tuple[str, str]] = []
    into: list[tuple[str, str]] = []
    for e in found["edges"]:
        relation = str(e.get("relation_type") or e.get("name") or "?")
        if e.get("source_node_uuid") == doc["uuid"]:
            out.append((relation, names.get(e.get("target_node_uuid", ""), "?")))
        else:
            into.append((relation, names.get(e.get("source_node_uuid", ""), "?")))
    print(
        f"\nknowledge_get_entity_neighbors: {len(out)} edges out of and {len(into)} into "
        f"{entity_line(doc)}"
    )
    for arrow, rows in (("->", sorted(out)), ("<-", sorted(into))):
        for relation, name in rows[:_SHOWN]:
            print(f"  {arrow} {relation:<11} {safe(name)}")
        if len(rows) > _SHOWN:
            print(f"  {arrow} ... and {len(rows) - _SHOWN} more")
    if not out and not into:
        print("  (no neighbours)")


def _wait_for_vectors(client: Client, silent: bool) -> None:
    """Wait until the group's vectors are made: a sync leaves them to the service's background
    drainer (ADR 0201), and the searches below should be the whole hybrid search. Stop
    waiting, and say so, when they make no progress for ``_STALL_S`` (an embedder that is
    away): the searches then answer by their words and name the missing leg."""
    bar = ProgressBar("making vectors", silent=silent)
    started = moved = time.monotonic()
    last = -1
    try:
        while True:
            group = client.status()["wal_groups"].get(GROUP, {})
            at = int(group.get("projections", {}).get("vectors", 0))
            end = int(group.get("max_seq", 0))
            if at >= end:
                break
            now = time.monotonic()
            if at != last:
                last, moved = at, now
            elif now - moved > _STALL_S:
                bar.done()
                print(f"the vectors made no progress for {_STALL_S:.0f} s: not waiting for them")
                return
            bar.update(at, end, "events")
            time.sleep(0.25)  # the drainer's progress is only seen by asking again
    finally:
        bar.done()
    print(f"vectors made in {time.monotonic() - started:.1f} s (in the background, ADR 0201)")


def run(workspace: Path, data: str | None, limit: int | None, silent: bool) -> int:
    """Run the demo; returns the exit status."""
    corpus = _find_corpus(data)
    config = Config.from_env(workspace)
    lcg = lcg_command()
    print(f"lcg demo: workspace {workspace}, corpus {corpus}")
    client, pid = _connect(workspace, config)
    articles = read_articles(corpus, limit)
    folder = workspace / CORPUS_FOLDER
    written = write_corpus(articles, folder)
    print(
        f"wrote {folder}: {len(written.links)} Markdown files from {len(articles)} articles, "
        f"{sum(written.links.values())} links restored as [[Title]] ({written.written} "
        f"written, {written.unchanged} unchanged, {written.removed} removed)"
    )
    print(f"$ {lcg} -C {workspace} ingest {folder} --group {GROUP} --no-commits")
    from lcg.ingest import sync_tree

    bar = SyncBar(f"ingesting {CORPUS_FOLDER}", silent=silent)
    try:
        # The code `lcg ingest` runs: chunks, then the declared pass (documents, links).
        report = sync_tree(service_backend(client), folder, GROUP, progress=bar, commits=None)
    finally:
        bar.done()
    print(safe(summary_line(report)))
    if report.vectors_deferred:
        _wait_for_vectors(client, silent)
    entities, relationships = _assert_missing(client)
    kept = (len(_ENTITIES) - entities, len(_RELATIONSHIPS) - relationships)
    print(
        f"asserted {entities} entities and {relationships} relationships"
        + (f" ({kept[0]} and {kept[1]} were already there)" if any(kept) else "")
    )
    if CENTRE in written.links:
        centre = CENTRE
    else:  # --limit left it out: the article with the most links
        centre = max(written.links, key=lambda t: written.links[t], default="")
    if centre:
        _show_neighbourhood(client, centre)
    _show_searches(client)
    client.close()
    _print_status(workspace, lcg)
    _print_next(workspace, config, lcg, pid)
    return 0


def _connect(workspace: Path, config: Config) -> tuple[Client, int | None]:
    """A client of the workspace's service, started here unless one runs; and its pid."""
    client = live_client(config)
    if client is not None:
        pid = service_pid(config.socket_path)
        print(f"using the service already running in this workspace (pid {pid or 'unknown'})")
        return client, pid
    log = workspace / "serve.log"
    print(f"starting lcg serve (log: {log}) ...")
    started = time.monotonic()
    proc = _start_service(workspace)
    client = Client(config.socket_path, timeout=None)
    _wait_started(proc, client, log)
    print(f"service healthy after {time.monotonic() - started:.1f} s (pid {proc.pid})")
    return client, proc.pid


def _show_searches(client: Client) -> None:
    """The three searches a newcomer would try: entities, facts, passages."""
    ents = client.find_entities(query="first man on the moon", group_ids=[GROUP], num_results=3)
    _show('find_entities "first man on the moon"', [entity_line(n) for n in ents["nodes"]])
    facts_found = client.find_relationships(
        query="who commanded Apollo 11", group_ids=[GROUP], num_results=3
    )
    _show(
        'find_relationships "who commanded Apollo 11"', [fact_line(f) for f in facts_found["facts"]]
    )
    passages = client.search_passages(
        query="first crewed landing on the Moon", group_ids=[GROUP], num_results=3
    )
    _show(
        'search_passages "first crewed landing on the Moon"',
        [_passage(r) for r in passages["passages"]],
    )


def _print_next(workspace: Path, config: Config, lcg: str, pid: int | None) -> None:
    """Where the service runs and what to do next."""
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
