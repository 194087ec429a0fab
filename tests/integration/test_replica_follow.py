"""A replica follows a git publication: digests converge after every pull; resets rebuild."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lcg.events.layout import GENERATION_FILE
from lcg.ingest.dump import dump_groups

# Test helpers are imported as plain modules from their folders (as the other suites do).
from replica_support import (
    GIT_ENV,
    git,
    make_repos,
    open_publisher,
    publish,
    replica,
    write_batch,
)

G = "team"


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


def test_replica_converges_after_each_pull(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    try:
        with replica(tmp_path / "rws", repos.replica) as follower:
            for round_no in range(3):
                write_batch(pub, G, 4, start=round_no * 4)
                result = publish(pub, G, repos)
                assert result.committed and result.files_copied >= 1
                repos.pull()
                status = follower.sync_group(G)
                assert status.state == "following", status.reason
                assert status.applied_seq == pub.projector.applied_seq(G)
                assert status.lag_events == 0
                assert follower.ws.digests(G) == pub.digests(G)
            assert status.events_applied == status.applied_seq + 1
            # Publishing again with nothing new commits nothing.
            assert not publish(pub, G, repos).committed
            log = git(repos.pub, "log", "--oneline")
            assert len(log.splitlines()) == 4  # the seed commit + three publishes
    finally:
        pub.close()


def test_status_changes_only_with_a_pass(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    try:
        write_batch(pub, G, 2)
        publish(pub, G, repos)
        with replica(tmp_path / "rws", repos.replica) as follower:
            assert follower.replica_status(G).state == "starting"
            repos.pull()
            first = follower.sync_group(G)
            write_batch(pub, G, 3, start=2)
            publish(pub, G, repos)
            repos.pull()
            # Pulled but not yet examined: the status still describes the last pass.
            before = follower.replica_status(G)
            assert before.applied_seq == first.applied_seq
            assert before.source_max_seq == first.applied_seq
            after = follower.sync_group(G)
            assert after.applied_seq == pub.projector.applied_seq(G)
            assert after.lag_events == 0 and after.source_max_seq == after.applied_seq
            assert after.events_applied == (after.applied_seq or 0) + 1
            assert after.last_applied_at is not None and after.last_event_ts is not None
            assert follower.statuses() == {G: after}
    finally:
        pub.close()


def test_reset_rebuilds_the_replica(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    try:
        write_batch(pub, G, 5)
        first = publish(pub, G, repos)
        with replica(tmp_path / "rws", repos.replica) as follower:
            repos.pull()
            assert follower.sync_group(G).generation == first.generation
            before = follower.ws.digests(G)
            # The publisher dumps (a compacted stream, a new generation) and republishes it.
            dump_root = tmp_path / "dump"
            dump_groups(pub, dump_root, [G])
            from lcg.replication import publish_group

            refused = pytest.raises(Exception, match="pass --reset")
            with refused:
                publish_group(dump_root, G, repos.pub)
            result = publish_group(dump_root, G, repos.pub, reset=True)
            repos.push()
            assert result.reset and result.previous_generation == first.generation
            repos.pull()
            status = follower.sync_group(G)
            assert status.state == "following", status.reason
            assert status.reset_detected and status.resets == 1
            assert status.previous_generation == first.generation
            assert status.generation == result.generation != first.generation
            positions = follower.ws.projector.positions(G)
            assert {p.generation for p in positions.values()} == {result.generation}
            # The dump holds the same graph: the rebuilt replica equals the old one.
            assert follower.ws.digests(G) == before
    finally:
        pub.close()


def test_glob_copy_without_dot_files_is_followed(tmp_path: Path) -> None:
    pub = open_publisher(tmp_path / "pubws")
    try:
        write_batch(pub, G, 4)
        src = pub.store.group_dir(G)
        # What `cp wal/team/*.jsonl` does: every dot-file, the generation sidecar included, stays.
        target = tmp_path / "glob" / G
        target.mkdir(parents=True)
        for seg in sorted(src.glob("*.jsonl")):
            shutil.copy(seg, target / seg.name)
        assert not (target / GENERATION_FILE).exists()
        with replica(tmp_path / "rws", target.parent) as follower:
            status = follower.sync_group(G)
            assert status.state == "following", status.reason
            assert status.generation == pub.store.generation(G)
            assert follower.ws.digests(G) == pub.digests(G)
    finally:
        pub.close()


def test_two_generations_in_one_publication_are_refused(tmp_path: Path) -> None:
    a = open_publisher(tmp_path / "a")
    b = open_publisher(tmp_path / "b")
    try:
        write_batch(a, G, 2)
        write_batch(b, G, 4)
        a.store.close_writer(G)
        target = tmp_path / "mixed" / G
        shutil.copytree(a.store.group_dir(G), target)
        # A later segment copied in from another stream: its lines carry another generation.
        last = sorted(target.glob("*.jsonl"))[-1]
        b_lines = sorted(b.store.group_dir(G).glob("*.jsonl"))[0].read_bytes().splitlines(True)
        n_a = len(last.read_bytes().splitlines())
        with open(last, "ab") as fh:
            fh.writelines(b_lines[n_a:])
        with replica(tmp_path / "rws", target.parent) as follower:
            status = follower.sync_group(G)
            assert status.state == "stopped"
            assert status.reason is not None and "mixes generations" in status.reason
            assert b.store.generation(G) in status.reason
            # Everything before the foreign lines was verified and applied.
            assert status.applied_seq == n_a - 1
    finally:
        a.close()
        b.close()


def test_sidecar_of_another_generation_is_refused(tmp_path: Path) -> None:
    pub = open_publisher(tmp_path / "pubws")
    try:
        write_batch(pub, G, 2)
        target = tmp_path / "pubdir" / G
        shutil.copytree(pub.store.group_dir(G), target, ignore=shutil.ignore_patterns(".writer*"))
        (target / GENERATION_FILE).write_text('{"generation": "someone-else"}')
        with replica(tmp_path / "rws", target.parent) as follower:
            status = follower.sync_group(G)
            assert status.state == "stopped"
            assert status.reason is not None
            assert "mixes generations" in status.reason and "someone-else" in status.reason
            assert status.applied_seq is None
    finally:
        pub.close()


def test_only_the_named_groups_are_followed(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    try:
        write_batch(pub, "alpha", 2)
        write_batch(pub, "beta", 2)
        publish(pub, "alpha", repos)
        publish(pub, "beta", repos)
        repos.pull()
        with replica(tmp_path / "rws", repos.replica, ["beta"]) as follower:
            statuses = follower.sync()
            assert set(statuses) == {"beta"} and statuses["beta"].state == "following"
            assert follower.ws.projector.applied_seq("alpha") is None
            assert follower.ws.digests("beta") == pub.digests("beta")
        with replica(tmp_path / "rws2", repos.replica) as follower:
            assert set(follower.sync()) == {"alpha", "beta"}
            for group in ("alpha", "beta"):
                assert follower.ws.digests(group) == pub.digests(group)
    finally:
        pub.close()


def test_projections_of_the_old_generation_reset_even_when_the_track_is_on_the_new(
    tmp_path: Path,
) -> None:
    """The follower never weighs the old generation's seqs against the new stream's: here
    every projection holds seqs of the old generation past the new stream's end while the
    follower's cursor already names the new one (the state a pass leaves when it read the new
    sidecar and stopped). Weighed as numbers, the projections looked ahead of the stream and
    the group stopped on a "seq regression in the same generation"; it is a reset."""
    repos = make_repos(tmp_path)
    pub = open_publisher(tmp_path / "pubws")
    short = open_publisher(tmp_path / "shortws")
    try:
        write_batch(pub, G, 5)
        first = publish(pub, G, repos)
        write_batch(short, G, 1)
        with replica(tmp_path / "rws", repos.replica) as follower:
            repos.pull()
            assert follower.sync_group(G).generation == first.generation
            from lcg.replication import publish_group

            result = publish_group(short.config.wal_dir, G, repos.pub, reset=True)
            repos.push()
            repos.pull()
            assert result.generation != first.generation
            follower._tracks[G] = follower.source.cursor(G, result.generation)
            status = follower.sync_group(G)
            assert status.state == "following", status.reason
            assert status.reset_detected and status.previous_generation == first.generation
            positions = follower.ws.projector.positions(G)
            assert {p.generation for p in positions.values()} == {result.generation}
            assert follower.ws.digests(G) == short.digests(G)
    finally:
        pub.close()
        short.close()
