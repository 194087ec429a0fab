"""A reference stream is untrusted input: ``lcg import-reference`` executes nothing it is given
(issue 27 items 1 and 5, ADR 0194).

Each hostile line below sits in a stream beside one ordinary entity line; the stream is
written by hand here, in the reference's five-key format (lcg-api §5.5). A real
``lcg import-reference --accept-loss`` process imports it while a watchdog samples its
resident memory (and kills it past a bound, the failure signal of a line that allocates
without end). The line must be reported as not mapped (reason ``unrecognised``, its seq, an
excerpt), no file may appear where it points, the ordinary entity alone must land in the new
stream, and the process must exit 0 (the loss was accepted). The last test imports rows that
reuse uuids another group of the workspace holds: refused and named, the other group unchanged.
Everything is real (the CLI process, Kuzu, files; ``lcg verify`` after runs in this process,
``lcg_main``); the embedder is the hash test double.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from lcg.config import Config
from lcg.extract.embedders import HashEmbedder
from lcg.projections import graph_records as gr
from lcg.workspace import Workspace

#: A run whose resident memory passes this is killed (and the test fails).
RSS_KILL = 1024**3
#: A run that takes longer than this is killed (and the test fails).
TIMEOUT = 120
T0 = "2024-05-01T09:00:00.000000+00:00"
ENTITY = (
    "CREATE (:Entity {uuid: $uuid, name: $name, group_id: $group_id, labels: $labels, "
    "created_at: $created_at, name_embedding: $name_embedding, summary: $summary, "
    "attributes: $attributes})"
)
EDGE = (
    "CREATE (:RelatesToNode_ {uuid: $uuid, name: $name, group_id: $group_id, "
    "created_at: $created_at, fact: $fact, fact_embedding: $fact_embedding, "
    "valid_at: $valid_at, invalid_at: $invalid_at, attributes: $attributes, "
    "relation_type: $relation_type})"
)
HOPS = (
    "MATCH (src:Entity {uuid: $src}), (rn:RelatesToNode_ {uuid: $rn}), (dst:Entity "
    "{uuid: $dst}) CREATE (src)-[:RELATES_TO]->(rn), (rn)-[:RELATES_TO]->(dst)"
)
EPISODE = (
    "CREATE (:Episodic {uuid: $uuid, name: $name, group_id: $group_id, created_at: "
    "$created_at, source: $source, source_description: $source_description, content: "
    "$content, content_embedding: $content_embedding, valid_at: $valid_at, entity_edges: "
    "$entity_edges})"
)


def _line(seq: int, cypher: str, params: dict[str, Any]) -> str:
    record = {"seq": seq, "ts": T0, "db": "", "cypher": cypher, "params": params}
    return json.dumps(record, separators=(",", ":"))


def _entity(uuid: str, name: str, group_id: str) -> tuple[str, dict[str, Any]]:
    return ENTITY, {
        "uuid": uuid,
        "name": name,
        "group_id": group_id,
        "labels": ["Entity"],
        "created_at": T0,
        "name_embedding": [0.5, 0.25],
        "summary": f"{name}.",
        "attributes": "{}",
    }


def _write(root: Path, group_id: str, lines: list[tuple[str, dict[str, Any]]]) -> Path:
    """A reference WAL root holding ``group_id``'s lines in one segment."""
    gdir = root / "wal" / group_id
    gdir.mkdir(parents=True)
    text = "".join(_line(seq, c, p) + "\n" for seq, (c, p) in enumerate(lines))
    (gdir / "20240501_090000_aaaaaa_0000.jsonl").write_text(text, encoding="utf-8")
    return root / "wal"


@dataclass
class Run:
    """A finished ``lcg import-reference`` process and what was measured."""

    status: int
    out: str
    err: str
    peak_rss: int
    killed: str | None = None
    result: dict[str, Any] = field(default_factory=dict)


def _rss(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _import(ws: Path, source: Path, *extra: str) -> Run:
    """``lcg -C WS import-reference SOURCE --json -s EXTRA``, watched for memory and time."""
    out_path, err_path = ws.parent / f"{ws.name}.out", ws.parent / f"{ws.name}.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(
            [str(sf.LCG), "-C", str(ws), "import-reference", str(source), "--json", "-s", *extra],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=sf.serve_env(),
            cwd=str(ws),
        )
    killed: list[str] = []
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        waited = 0.0
        while not done.wait(0.05):
            waited += 0.05
            # The child's own high-water mark (its image after exec); wait4's ru_maxrss would
            # also count this pytest worker's size when it forked, whatever earlier tests left.
            peak[0] = max(peak[0], _rss(proc.pid, "VmHWM"))
            if _rss(proc.pid) > RSS_KILL:
                killed.append(f"resident memory passed {RSS_KILL} bytes")
            elif waited > TIMEOUT:
                killed.append(f"still running after {TIMEOUT} s")
            else:
                continue
            proc.kill()
            return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    # Reaped here (not by the watcher's last look), so /proc holds the child until it ends.
    _, wait_status, _usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(wait_status)
    done.set()
    watcher.join()
    run = Run(
        status=proc.returncode,
        out=out_path.read_text(),
        err=err_path.read_text(),
        peak_rss=peak[0],
        killed=killed[0] if killed else None,
    )
    if run.out.strip():
        run.result = json.loads(run.out)
    return run


def _stream_uuids(ws: Path) -> dict[str, set[str]]:
    """Every uuid each group's new stream carries (entities, edges, episodes)."""
    found: dict[str, set[str]] = {}
    for group_dir, events in sf.stream_events(ws / ".lcg" / "wal").items():
        uuids = found.setdefault(group_dir, set())
        for event in events:
            for key in ("entity", "edge"):
                if key in event:
                    uuids.add(event[key]["uuid"])
            if event.get("type") == "EpisodeAdded":
                uuids.add(event["uuid"])
    return found


def _hostile_lines(outside: Path) -> dict[str, str]:
    """Lines an attacker writes, each passing the old write-keyword filter, by case name."""
    secret = outside / "secret.csv"
    return {
        "copy_to": f"COPY (MATCH (n:Entity) RETURN n.uuid, n.name) TO '{outside}/copy.csv' "
        "/* CREATE */",
        "export_database": f"EXPORT DATABASE '{outside}/export' /* CREATE */",
        "load_from": f"LOAD FROM '{secret}' (header=false) CREATE (:Entity {{uuid: column0, "
        "name: column1, group_id: 'liminis', labels: ['Entity'], created_at: "
        "timestamp('2024-05-01T09:00:00Z'), summary: '', attributes: '{}'})",
        "load_extension": f"LOAD EXTENSION '{outside}/evil.so' /* CREATE */",
        "two_statements": "CREATE (:Entity {uuid: 'two-1', name: 'Second', group_id: "
        "'liminis', labels: ['Entity'], created_at: timestamp('2024-05-01T09:00:00Z'), "
        f"summary: '', attributes: '{{}}'}}); COPY (MATCH (n:Entity) RETURN n.name) TO "
        f"'{outside}/two.csv'",
        "comment_smuggled_read": "/* CREATE */ MATCH (n:Entity) RETURN n.name",
        "unwind_range": "UNWIND range(1, 2000000000) AS i CREATE (:Entity {uuid: 'u' + "
        "CAST(i AS STRING), name: 'flood', group_id: 'liminis', labels: ['Entity'], "
        "created_at: timestamp('2024-05-01T09:00:00Z'), summary: '', attributes: '{}'})",
    }


CASES = sorted(_hostile_lines(Path("/x")))


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_line_is_reported_and_never_executed(
    tmp_path: Path, case: str, lcg_main: sf.LcgMain
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("stolen-1,Stolen secret\n", encoding="utf-8")
    extension = outside / "evil.so"
    extension.write_bytes(b"\x7fELF not really a shared object")
    os.utime(extension, (0, extension.stat().st_mtime))  # any read moves the access time
    hostile = _hostile_lines(outside)[case]
    source = _write(
        tmp_path / "ref", "liminis", [_entity("kept", "Kept", "liminis"), (hostile, {})]
    )
    ws = tmp_path / "ws"
    ws.mkdir()

    run = _import(ws, source, "--accept-loss")

    assert run.killed is None, run.killed
    assert run.peak_rss < RSS_KILL, run.peak_rss
    assert run.status == 0, (run.status, run.err[-2000:])
    assert run.result["success"] and run.result["written"] and run.result["loss_accepted"]
    [group] = run.result["groups"]
    assert group["unmapped"] == {"unrecognised": 1}, group
    [sample] = group["samples"]
    assert sample["reason"] == "unrecognised"
    assert sample["where"].endswith(":2 seq 1")
    assert sample["detail"], sample
    # Nothing it names was written or read, and no row of it landed.
    assert sorted(p.name for p in outside.iterdir()) == ["evil.so", "secret.csv"]
    assert extension.stat().st_atime == 0
    assert _stream_uuids(ws) == {"liminis": {"kept"}}
    verify = lcg_main(ws, "verify")
    assert verify.returncode == 0 and "verify: ok" in verify.stdout, verify.stdout


def test_a_hostile_line_fails_the_import_without_accept_loss(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    hostile = _hostile_lines(outside)["two_statements"]
    source = _write(
        tmp_path / "ref", "liminis", [_entity("kept", "Kept", "liminis"), (hostile, {})]
    )
    ws = tmp_path / "ws"
    ws.mkdir()

    run = _import(ws, source)

    assert run.killed is None and run.status == 1, (run.status, run.err[-2000:])
    assert run.result["success"] is False and run.result["written"] is False
    assert run.result["groups"][0]["unmapped"] == {"unrecognised": 1}
    assert "--accept-loss" in run.err
    assert list(outside.iterdir()) == []
    assert not (ws / ".lcg" / "wal" / "liminis").exists()


# ---- another group's uuids ----------------------------------------------------------------


def _group_rows(group_id: str, names: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """An entity pair, an edge between them and an episode mentioning them, of ``group_id``:
    ``names`` maps each role (``a``, ``b``, ``edge``, ``episode``) to its uuid."""
    vec = [0.5, 0.25]
    a, b = names["a"], names["b"]
    who = "Alice" if group_id == "a" else "Mallory"
    return [
        _entity(a, who, group_id),
        _entity(b, f"{who}'s bank", group_id),
        (
            EDGE,
            {
                "uuid": names["edge"],
                "name": "USES",
                "group_id": group_id,
                "created_at": T0,
                "fact": f"{who} uses the bank.",
                "fact_embedding": vec,
                "valid_at": T0,
                "invalid_at": None,
                "attributes": "{}",
                "relation_type": "USES",
            },
        ),
        (HOPS, {"src": a, "rn": names["edge"], "dst": b}),
        (
            EPISODE,
            {
                "uuid": names["episode"],
                "name": "note",
                "group_id": group_id,
                "created_at": T0,
                "source": "text",
                "source_description": "note.md",
                "content": f"{who} uses the bank.",
                "content_embedding": vec,
                "valid_at": T0,
                "entity_edges": [a, b],
            },
        ),
    ]


def _state(ws: Path, group_id: str) -> tuple[list[str], list[str], list[str]]:
    config = Config.from_env(ws, env={"LCG_EMBEDDER": "hash"})
    with Workspace.open(config, HashEmbedder()) as w:
        return (
            sorted(f"{e.uuid}={e.name}" for e in gr.all_entities(w.graph, group_id)),
            sorted(f"{e.uuid}={e.fact}" for e in gr.all_edges(w.graph, group_id)),
            sorted(f"{e.uuid}={e.content}" for e in gr.all_episodes(w.graph, group_id)),
        )


def test_rows_reusing_another_groups_uuids_are_refused(
    tmp_path: Path, lcg_main: sf.LcgMain
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    ours = {"a": "U-alice", "b": "U-bank", "edge": "R-uses", "episode": "P-note"}
    first = _import(ws, _write(tmp_path / "ref-a", "a", _group_rows("a", ours)))
    assert first.status == 0, first.err[-2000:]
    before = _state(ws, "a")
    assert before[0] == ["U-alice=Alice", "U-bank=Alice's bank"]

    # Group b's stream reuses group a's entity, edge and episode uuids (and has one of its own).
    theirs = {"a": "U-alice", "b": "M-own", "edge": "R-uses", "episode": "P-note"}
    source = _write(tmp_path / "ref-b", "b", _group_rows("b", theirs))
    run = _import(ws, source)

    assert run.status == 1, run.err[-2000:]
    assert run.result["success"] is False and run.result["written"] is False
    [group] = run.result["groups"]
    assert group["unmapped"]["uuid_of_another_group"] == 3, group["unmapped"]
    details = {s["where"]: s["detail"] for s in group["samples"]}
    assert "belongs to group 'a'" in details["entity U-alice"]
    assert "belongs to group 'a'" in details["edge R-uses"]
    assert "belongs to group 'a'" in details["episode P-note"]
    assert _state(ws, "a") == before

    # Accepting the loss imports b's own row alone; a is still Alice's.
    run = _import(ws, source, "--accept-loss")
    assert run.status == 0, run.err[-2000:]
    assert _state(ws, "a") == before
    assert _state(ws, "b") == (["M-own=Mallory's bank"], [], [])
    verify = lcg_main(ws, "verify")
    assert verify.returncode == 0 and "verify: ok" in verify.stdout, verify.stdout


# ---- the files themselves -----------------------------------------------------------------


def test_links_fifos_overlong_and_deep_lines_are_reported_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    stolen = outside / "stolen.jsonl"
    stolen.write_text(_line(5, *_entity("stolen", "Stolen", "liminis")) + "\n")
    source = _write(tmp_path / "ref", "liminis", [_entity("kept", "Kept", "liminis")])
    gdir = source / "liminis"
    (gdir / "20240502_000000_bbbbbb_0000.jsonl").symlink_to(stolen)
    os.mkfifo(gdir / "20240503_000000_cccccc_0000.jsonl")  # opened for reading, it would block
    entity, params = _entity("huge", "Huge", "liminis")
    params["summary"] = "x" * (17 << 20)
    (gdir / "20240504_000000_dddddd_0000.jsonl").write_text(_line(9, entity, params) + "\n")
    deep = _line(10, *_entity("deep", "Deep", "liminis")).replace(
        '"params":{', '"params":{"x":' + "[" * 100_000 + "]" * 100_000 + ","
    )
    (gdir / "20240505_000000_eeeeee_0000.jsonl").write_text(deep + "\n")
    ws = tmp_path / "ws"
    ws.mkdir()

    run = _import(ws, source, "--accept-loss")

    assert run.killed is None and run.status == 0, (run.killed, run.status, run.err[-2000:])
    [group] = run.result["groups"]
    assert group["unmapped"] == {"unparseable": 4}, group
    details = {s["where"]: s["detail"] for s in group["samples"]}
    assert details["20240504_000000_dddddd_0000.jsonl:1"] == "longer than 16777216 bytes"
    assert "is a symlink" in details["20240502_000000_bbbbbb_0000.jsonl"]
    assert "is not a regular file" in details["20240503_000000_cccccc_0000.jsonl"]
    assert "nested too deeply" in details["20240505_000000_eeeeee_0000.jsonl:1"]
    assert _stream_uuids(ws) == {"liminis": {"kept"}}

    # A group directory that is a link out of the stream is refused as a whole.
    linked = tmp_path / "linked" / "wal"
    linked.mkdir(parents=True)
    (linked / "other").symlink_to(gdir)
    (tmp_path / "ws2").mkdir()
    run = _import(tmp_path / "ws2", linked)
    assert run.status == 1 and "is a symlink" in run.err, run.err
