"""The replication transport contract, run against every transport (as litestream runs its
replica-client tests against each client): git (real repositories, push and pull) and the
test-only in-memory transport (tests/memory_transport.py), which shows that a second
transport is one sibling module. A third (JetStream) adds a case to ``CASES`` and a fixture
branch; every test below then runs against it.

Real parts throughout: git, the files, Kuzu, hnswlib, the follower; the embedder is the hash
test double.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from lcg.errors import GenerationError
from lcg.events.guarded import ReadLimits
from lcg.events.segments import list_segments
from lcg.extract.embedders import HashEmbedder
from lcg.ingest.dump import dump_groups
from lcg.replication import (
    Follower,
    GitPublisher,
    Publisher,
    Source,
    TreeSource,
    publish_group,
    replica_config,
)
from lcg.workspace import Workspace
from memory_transport import MemoryLog, MemoryPublisher, MemorySource
from replica_support import GIT_ENV, HASH, make_repos, open_publisher, write_batch

G = "team"
OTHER = "other"
CASES = ["git", "memory", "jetstream"]


@dataclass
class Case:
    """One transport, as the contract drives it."""

    name: str
    publisher: Publisher
    #: Make what was delivered reachable by the source (git: push, then pull the clone).
    land: Callable[[], None]
    #: The directory a replica workspace's ``.lcg/wal`` links to.
    publication: Path
    #: The follower's source for a replica workspace.
    source: Callable[[Workspace], Source]
    #: Damage the last line the publication holds for a group (after ``land``).
    tamper: Callable[[str], None]


def _flip_last_line(gdir: Path) -> None:
    """Change one byte inside the last line's text: its checksum no longer matches."""
    seg = list_segments(gdir)[-1].path
    data = seg.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    i = data.index(b'"', start + 10)
    seg.write_bytes(data[: i + 1] + b"~" + data[i + 2 :])


@pytest.fixture(params=CASES)
def case(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Case:
    if request.param == "git":
        for key, value in GIT_ENV.items():
            monkeypatch.setenv(key, value)
        repos = make_repos(tmp_path)

        def land() -> None:
            repos.push()
            repos.pull()

        return Case(
            name="git",
            publisher=GitPublisher.open(repos.pub),
            land=land,
            publication=repos.replica,
            source=lambda ws: TreeSource(ws.config.wal_dir, limits=ReadLimits()),
            tamper=lambda group: _flip_last_line(repos.replica / group),
        )
    if request.param == "jetstream":
        return _jetstream_case(request, tmp_path)
    log = MemoryLog()
    empty = tmp_path / "memory-publication"
    empty.mkdir()
    source = MemorySource(log)

    def tamper(group: str) -> None:
        line = log.streams[group].lines[-1]
        i = line.index(b'"', 10)
        log.streams[group].lines[-1] = line[: i + 1] + b"~" + line[i + 2 :]

    return Case(
        name="memory",
        publisher=MemoryPublisher(log),
        land=lambda: None,
        publication=empty,
        source=lambda ws: source,
        tamper=tamper,
    )


def _jetstream_case(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    """A real nats-server -js; the puller mirrors into the publication the follower reads."""
    from _nats_fixtures import NatsServer
    from lcg.replication.jetstream import JetStreamPublisher
    from lcg.replication.jetstream_follow import JetStreamPuller, MirrorSource

    server = NatsServer(tmp_path / "nats-store")
    server.start()
    request.addfinalizer(server.stop)
    publisher = JetStreamPublisher(server.url)
    request.addfinalizer(publisher.close)
    mirror = tmp_path / "nats-mirror"
    puller = JetStreamPuller(server.url, mirror)
    puller.start()
    request.addfinalizer(puller.stop)

    def land() -> None:
        """Wait until the mirror holds what the server acknowledged for every group."""
        deadline = time.monotonic() + 30  # a generous bound, not a measurement
        for group, acked in publisher.acked.items():
            while True:
                held = puller.groups.get(group)
                if held is not None and (held.generation, held.next_seq - 1) == (
                    acked.generation,
                    acked.seq,
                ):
                    break
                assert time.monotonic() < deadline, f"the mirror never caught up on {group}"
                time.sleep(0.02)

    return Case(
        name="jetstream",
        publisher=publisher,
        land=land,
        publication=mirror,
        source=lambda ws: MirrorSource(puller, limits=ReadLimits()),
        tamper=lambda group: _flip_last_line(mirror / group),
    )


@pytest.fixture
def pub(tmp_path: Path) -> Iterator[Workspace]:
    ws = open_publisher(tmp_path / "pubws")
    try:
        yield ws
    finally:
        ws.close()


@contextmanager
def replica(case: Case, workspace: Path) -> Iterator[Follower]:
    """A replica workspace following ``case``'s publication (no watcher thread)."""
    config = replica_config(workspace, case.publication, env=HASH)
    ws = Workspace(config, HashEmbedder(), publication=ReadLimits())
    try:
        yield Follower(ws, source=case.source(ws))
    finally:
        ws.close()


def publish(case: Case, ws: Workspace, group: str = G, **kw: bool) -> int:
    """Publish ``group``, land it; the seq it was published through."""
    result = publish_group(ws.config.wal_dir, group, case.publisher, **kw)
    case.land()
    assert result.max_seq is not None
    return result.max_seq


def test_what_is_published_is_followed_exactly(case: Case, pub: Workspace, tmp_path: Path) -> None:
    write_batch(pub, G, 3)
    first = publish_group(pub.config.wal_dir, G, case.publisher)
    case.land()
    assert first.committed and first.max_seq == pub.projector.applied_seq(G)
    # Nothing new: the target is not touched.
    again = publish_group(pub.config.wal_dir, G, case.publisher)
    assert not again.committed and again.max_seq == first.max_seq
    with replica(case, tmp_path / "rws") as follower:
        source = follower.source
        assert G in source.list_groups().groups
        assert source.generation(G) == first.generation
        assert source.generation("nobody") is None and source.tail("nobody").seq is None
        status = follower.sync_group(G)
        assert status.state == "following", status.reason
        assert status.applied_seq == first.max_seq and status.lag_events == 0
        assert follower.ws.digests(G) == pub.digests(G)
        for round_no in range(2):
            write_batch(pub, G, 2, start=3 + 2 * round_no)
            through = publish(case, pub)
            assert source.tail(G).seq == through
            status = follower.sync_group(G)
            assert status.state == "following", status.reason
            assert status.applied_seq == through and status.lag_events == 0
            assert follower.ws.digests(G) == pub.digests(G)
        assert status.events_applied == through + 1


def test_a_cursor_yields_verified_events_in_seq_order(
    case: Case, pub: Workspace, tmp_path: Path
) -> None:
    write_batch(pub, G, 3)
    through = publish(case, pub)
    with replica(case, tmp_path / "rws") as follower:
        source = follower.source
        generation = source.generation(G)
        verify_only = source.cursor(G, generation)
        assert list(verify_only.read(yield_after=None)) == []
        assert verify_only.next_seq == through + 1
        cursor = source.cursor(G, generation)
        events = list(cursor.read(yield_after=2))
        assert [e.seq for e in events] == list(range(3, through + 1))
        assert {e.gen for e in events} == {generation}
        # Nothing new: nothing yielded; new lines: only they.
        assert list(cursor.read(yield_after=-1)) == []
        write_batch(pub, G, 1, start=3)
        later = publish(case, pub)
        assert [e.seq for e in cursor.read(yield_after=-1)] == list(range(through + 1, later + 1))


def test_a_restarted_replica_resumes_where_it_stopped(
    case: Case, pub: Workspace, tmp_path: Path
) -> None:
    write_batch(pub, G, 2)
    publish(case, pub)
    with replica(case, tmp_path / "rws") as follower:
        assert follower.sync_group(G).state == "following"
    write_batch(pub, G, 2, start=2)
    through = publish(case, pub)
    with replica(case, tmp_path / "rws") as follower:
        generation = follower.source.generation(G)
        assert generation is not None
        resumed = follower.source.resume(G, generation, follower.ws.config.workspace)
        assert resumed.generation == generation and resumed.next_seq > 0
        status = follower.sync_group(G)
        assert status.state == "following", status.reason
        assert status.applied_seq == through
        # Only the new events were applied by this run.
        assert status.events_applied == through + 1 - resumed.next_seq
        assert follower.ws.digests(G) == pub.digests(G)


def test_another_generation_is_refused_unless_reset_and_replicas_rebuild(
    case: Case, pub: Workspace, tmp_path: Path
) -> None:
    write_batch(pub, G, 3)
    publish(case, pub)
    first = case.publisher
    with replica(case, tmp_path / "rws") as follower:
        assert follower.sync_group(G).state == "following"
        before = follower.source.generation(G)
        digests = follower.ws.digests(G)
        dump_root = tmp_path / "dump"
        dump_groups(pub, dump_root, [G])
        with pytest.raises(GenerationError, match="--reset"):
            publish_group(dump_root, G, first)
        replaced = publish_group(dump_root, G, first, reset=True)
        case.land()
        assert replaced.reset and replaced.previous_generation == before
        assert replaced.generation != before
        status = follower.sync_group(G)
        assert status.state == "following", status.reason
        assert status.reset_detected and status.resets == 1
        assert status.previous_generation == before and status.generation == replaced.generation
        # The dump holds the same graph: the rebuilt replica equals the old one.
        assert follower.ws.digests(G) == digests


def test_a_damaged_line_stops_its_group_only(case: Case, pub: Workspace, tmp_path: Path) -> None:
    write_batch(pub, G, 2)
    write_batch(pub, OTHER, 2)
    publish(case, pub)
    publish(case, pub, OTHER)
    with replica(case, tmp_path / "rws") as follower:
        assert {s.state for s in follower.sync().values()} == {"following"}
        write_batch(pub, G, 2, start=2)
        write_batch(pub, OTHER, 2, start=2)
        through = publish(case, pub)
        through_other = publish(case, pub, OTHER)
        case.tamper(G)
        statuses = follower.sync()
        assert statuses[G].state == "stopped"
        assert statuses[G].reason is not None and "cannot be applied" in statuses[G].reason
        # What came before the damaged (last) line is applied; the line itself never is.
        assert statuses[G].applied_seq == through - 1
        assert statuses[OTHER].state == "following"
        assert statuses[OTHER].applied_seq == through_other


def test_the_follower_wakes_when_new_lines_land(case: Case, pub: Workspace, tmp_path: Path) -> None:
    write_batch(pub, G, 2)
    publish(case, pub)
    with replica(case, tmp_path / "rws") as follower:
        # The rescan is only the net for a change that lands before the watch is set up.
        follower.start(step_ms=20, rescan_ms=5_000)
        try:
            write_batch(pub, G, 2, start=2)
            through = publish(case, pub)
            deadline = time.monotonic() + 60  # a generous bound, not a measurement
            while follower.replica_status(G).applied_seq != through:
                assert time.monotonic() < deadline, follower.replica_status(G)
                time.sleep(0.02)
        finally:
            follower.stop()
        assert follower.ws.digests(G) == pub.digests(G)


def test_the_memory_transport_is_one_sibling_module() -> None:
    """A second transport needs nothing of git's: its module imports only the seam's parts."""
    import memory_transport

    text = Path(memory_transport.__file__).read_text()
    imports = {line.split()[1] for line in text.splitlines() if line.startswith("from lcg.")}
    assert imports <= {
        "lcg.events.codec",
        "lcg.events.linecheck",
        "lcg.events.model",
        "lcg.events.tail",
        "lcg.replication.scan",
        "lcg.replication.staging",
        "lcg.replication.transport",
    }, imports
    assert shutil.which("git") is not None  # the git case above ran against real git
