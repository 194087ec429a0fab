"""WAL benchmarks: append throughput per durability policy, and the codec against stdlib json.

Run by ``make bench`` (``pytest bench --benchmark-enable -s``). Every number is a ratio to a
baseline measured in the same run, interleaved with it and repeated, the median kept, because
the fsync latency of a shared disk drifts:

* appends, as events/s against a raw ``os.write`` + ``os.fsync`` loop writing the same lines;
  ``always`` with 1 and with 8 concurrent appenders (group commit must make 8 at least 4x
  faster than 1), ``batch`` and ``off``;
* encode and decode, as events/s against ``json.dumps`` / ``json.loads`` of the same events.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import msgspec

from lcg.events.codec import decode_line, encode_event, encode_events
from lcg.events.model import (
    EdgeRecord,
    EntityRecord,
    EpisodeAdded,
    EpisodeExtracted,
    Event,
    RelationshipAsserted,
)
from lcg.events.writer import FsyncPolicy, StreamWriter

TS = "2024-05-01T12:00:00.000000Z"
REPEATS = 3
SYNC_EVENTS = 300  # events per fsync-bound measurement (one appender)
THREADS = 8  # concurrent appenders of the group-commit measurement
FAST_EVENTS = 20_000  # events per batch/off measurement
CODEC_EVENTS = 20_000


def episode(i: int) -> EpisodeAdded:
    """A typical ingested chunk: about 400 bytes once stamped."""
    return EpisodeAdded(
        group_id="bench", uuid=f"{i:032x}", name=f"notes.md#{i}", source_description="notes.md",
        content=("Ada Lovelace wrote the first program for the Analytical Engine. " * 3)[:200],
        created_at=TS,
    )  # fmt: skip


def mixed(i: int) -> Event:
    """Events of three shapes, the extraction outcome the largest."""
    ent = EntityRecord(uuid=f"e{i}", name="Ada Lovelace", labels=["Entity", "Person"],
                       summary="Mathematician.", created_at=TS)  # fmt: skip
    edge = EdgeRecord(
        uuid=f"r{i}", name="WROTE", source_uuid=f"e{i}", target_uuid="e0",
        fact="Ada wrote the first program.", episodes=[f"ep{i}"], created_at=TS,
    )  # fmt: skip
    kinds: list[Event] = [
        episode(i),
        EpisodeExtracted(
            group_id="bench",
            episode_uuid=f"ep{i}",
            entities_created=[ent, ent],
            edges_created=[edge],
            mentions=[f"e{i}", "e0"],
            model="m",
        ),  # fmt: skip
        RelationshipAsserted(group_id="bench", edge=edge, created=True),
    ]
    stamped = msgspec.structs.replace(kinds[i % 3], seq=i, ts=TS, gen="a" * 32)
    return stamped


def _rate(n: int, run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return n / (time.perf_counter() - start)


def raw_loop(path: Path, lines: list[bytes]) -> Callable[[], None]:
    """The baseline: one ``os.write`` and one ``os.fsync`` per line, nothing else."""

    def run() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            for line in lines:
                os.write(fd, line)
                os.fsync(fd)
        finally:
            os.close(fd)

    return run


def appends(root: Path, policy: FsyncPolicy, n: int, threads: int) -> float:
    """Events/s of ``threads`` appenders writing ``n`` events in all, one per append."""
    writer = StreamWriter(root, "bench", fsync=policy)
    events = [episode(i) for i in range(n)]
    per = n // threads
    barrier = threading.Barrier(threads + 1)

    def worker(k: int) -> None:
        barrier.wait()
        for event in events[k * per : (k + 1) * per]:
            writer.append([event])

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()

    def run() -> None:
        barrier.wait()
        for t in pool:
            t.join()
        writer.close()  # batch/off: the final sync is part of the cost

    return _rate(per * threads, run)


def test_append_throughput(tmp_path: Path) -> None:
    lines = [encode_event(msgspec.structs.replace(episode(i), seq=i, ts=TS, gen="a" * 32))
             for i in range(SYNC_EVENTS)]  # fmt: skip
    results: dict[str, list[float]] = {}
    many = SYNC_EVENTS * THREADS
    for rep in range(REPEATS):
        d = tmp_path / str(rep)
        d.mkdir()
        measures: list[tuple[str, Callable[[], float]]] = [
            ("raw os.write+os.fsync", partial(_rate, SYNC_EVENTS, raw_loop(d / "raw", lines))),
            ("always, 1 appender", partial(appends, d / "a1", "always", SYNC_EVENTS, 1)),
            ("always, 8 appenders", partial(appends, d / "a8", "always", many, THREADS)),
            ("batch, 1 appender", partial(appends, d / "b", "batch", FAST_EVENTS, 1)),
            ("off, 1 appender", partial(appends, d / "o", "off", FAST_EVENTS, 1)),
        ]  # fmt: skip
        for name, measure in measures:
            results.setdefault(name, []).append(measure())
    median = {name: statistics.median(v) for name, v in results.items()}
    raw = median["raw os.write+os.fsync"]
    print(f"\n\nWAL append throughput (median of {REPEATS}; ratio to the raw loop)")
    print(f"{'mode':<24}{'events/s':>12}{'x raw':>9}")
    for name, value in median.items():
        print(f"{name:<24}{value:>12,.0f}{value / raw:>9.2f}")
    group_commit = median["always, 8 appenders"] / median["always, 1 appender"]
    verdict = "met" if group_commit >= 4 else "NOT met"
    print(f"group commit: 8 appenders / 1 = {group_commit:.2f}x (target >= 4x: {verdict})")
    # A guard, not the target: without group commit the ratio is about 1.
    assert group_commit > 2


def test_codec_throughput() -> None:
    events = [mixed(i) for i in range(CODEC_EVENTS)]
    dicts = [msgspec.to_builtins(e) for e in events]
    lines = [encode_event(e) for e in events]
    json_lines = [json.dumps(d, separators=(",", ":")).encode() + b"\n" for d in dicts]
    results: dict[str, list[float]] = {}
    compact = (",", ":")
    for _ in range(REPEATS):
        measures: list[tuple[str, Callable[[], object]]] = [
            ("encode, json.dumps", lambda: [json.dumps(d, separators=compact) for d in dicts]),
            ("encode, lcg codec", partial(encode_events, events)),
            ("decode, json.loads", lambda: [json.loads(x) for x in json_lines]),
            ("decode, lcg codec", lambda: [decode_line(x) for x in lines]),
        ]
        for name, run in measures:
            results.setdefault(name, []).append(_rate(CODEC_EVENTS, run))
    median = {name: statistics.median(v) for name, v in results.items()}
    print(f"\n\nEvent codec (median of {REPEATS}; ratio to stdlib json of the same events)")
    print(f"{'operation':<24}{'events/s':>12}{'x json':>9}")
    for name, value in median.items():
        base = median["encode, json.dumps" if name.startswith("encode") else "decode, json.loads"]
        print(f"{name:<24}{value:>12,.0f}{value / base:>9.2f}")
    print("(json.loads builds untyped dicts; the codec validates into typed events)")
    assert all(d.event is not None for d in (decode_line(x) for x in lines[:100]))
