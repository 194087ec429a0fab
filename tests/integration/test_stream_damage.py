"""Damage to a stream is never hidden (issue 11 items 2-5, ADR 0076): a lost tail, a sidecar
naming another generation, a lost segment, and bad or corrupt lines each degrade the group (its
reads served, its writes refused), fail ``lcg verify`` and make a replay report
``success: false`` with the skipped seqs until the operator accepts the loss.

Everything is real (Kuzu, hnswlib, the files, the CLI in-process); the embedder is the hash
test double.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

import lcg.cli.main as cli_main
from lcg.config import Config
from lcg.errors import DegradedError
from lcg.events.codec import CHECKSUM_FIELD, seal
from lcg.events.generation import GenerationFile
from lcg.events.layout import GENERATION_FILE, LCG_DIR
from lcg.events.segments import list_segments
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion
from lcg.projections import DAMAGE_FILE
from lcg.workspace import Workspace
from lcg.workspace.verify import verify_workspace

GROUP = "g"
#: ``lcg -C WS ARGS`` in this process: (exit status, stdout, stderr).
Lcg = Callable[..., tuple[int, str, str]]


@pytest.fixture
def lcg(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Lcg:
    for key in [k for k in os.environ if k.startswith("LCG_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("LCG_EMBEDDER", "hash")  # the test double: no model load
    monkeypatch.setenv("LCG_TELEMETRY", "off")
    monkeypatch.setenv("LCG_WAL_MAX_EVENTS_PER_FILE", "5")

    def call(ws: Path, *args: str) -> tuple[int, str, str]:
        status = cli_main.main(["-C", str(ws), *args])
        out, err = capsys.readouterr()
        return status, out, err

    return call


def _config(root: Path) -> Config:
    return Config.from_env(root, env={"LCG_EMBEDDER": "hash", "LCG_WAL_MAX_EVENTS_PER_FILE": "5"})


def _open(root: Path) -> Workspace:
    return Workspace.open(_config(root), HashEmbedder())


def _populate(root: Path, n: int) -> None:
    with _open(root) as ws:
        for i in range(n):
            assertion.assert_entity(ws, name=f"thing {i}", group_id=GROUP, summary=f"about {i}")


def _gdir(root: Path) -> Path:
    return root / LCG_DIR / "wal" / GROUP


def _drop_projections(root: Path) -> None:
    for sub in ("db", "text", "vectors"):
        shutil.rmtree(root / LCG_DIR / sub, ignore_errors=True)


def _rewrite_line(root: Path, seq: int, change: Callable[[bytes], bytes]) -> str:
    """Replace the line of ``seq`` with ``change(line)``; return ``file:line``."""
    for seg in list_segments(_gdir(root)):
        lines = seg.path.read_bytes().splitlines(keepends=True)
        for i, line in enumerate(lines):
            if json.loads(line)["seq"] == seq:
                lines[i] = change(line)
                seg.path.write_bytes(b"".join(lines))
                return f"{seg.path.name}:{i + 1}"
    raise AssertionError(f"no line of seq {seq}")


def _resealed(edit: Callable[[dict[str, object]], None]) -> Callable[[bytes], bytes]:
    """A change that edits the JSON and writes a valid checksum (a well-formed bad line)."""

    def change(line: bytes) -> bytes:
        raw = json.loads(line)
        del raw[CHECKSUM_FIELD]
        edit(raw)
        return seal(msgspec.json.encode(raw))

    return change


# ---- item 2: a stream behind its projections -------------------------------------------


def test_a_lost_tail_degrades_the_group_and_refuses_writes_until_rebuilt(
    tmp_path: Path, lcg: Lcg
) -> None:
    with _open(tmp_path) as ws:
        for name in ("a", "b", "c"):
            assertion.assert_entity(ws, name=name, group_id=GROUP)
    # The stream loses its last line (a quarantined torn line, power loss under
    # LCG_WAL_FSYNC=batch, an older copy restored); the projections still hold seq 2.
    (last,) = list_segments(_gdir(tmp_path))
    lines = last.path.read_bytes().splitlines(keepends=True)
    last.path.write_bytes(b"".join(lines[:-1]))

    with _open(tmp_path) as ws:
        reason = ws.projector.degraded_reason(GROUP)
        assert reason is not None
        assert "ends at seq 1" in reason and "applied seq 2" in reason
        assert f"lcg replay --group {GROUP} --force-clear" in reason
        # Reads are served from what the projections hold.
        assert ws.graph.counts(GROUP).entities == 3
        with pytest.raises(DegradedError, match="refused"):
            assertion.assert_entity(ws, name="d", group_id=GROUP)
    # Nothing was appended: the stream still ends at seq 1.
    assert len(last.path.read_bytes().splitlines()) == 2

    status, out, err = lcg(tmp_path, "status", "--json")
    assert status == 1, out
    group = json.loads(out)["wal_groups"][GROUP]
    assert group["hydration_status"] == "projections_ahead"
    assert "--force-clear" in group["degraded_reason"]
    status, out, _ = lcg(tmp_path, "status")
    assert status == 1 and "degraded: group 'g'" in out

    status, out, err = lcg(tmp_path, "replay", "--group", GROUP, "--force-clear")
    assert status == 0, err
    with _open(tmp_path) as ws:
        assert ws.projector.degraded_reason(GROUP) is None
        result = assertion.assert_entity(ws, name="d", group_id=GROUP)
        assert result.created
        assert ws.graph.counts(GROUP).entities == 3  # a, b, d: c was lost with the tail
    status, out, err = lcg(tmp_path, "verify")
    assert status == 0, out + err


# ---- item 3: a generation sidecar that disagrees with the lines --------------------------


def test_a_sidecar_naming_another_generation_degrades_and_never_purges(
    tmp_path: Path, lcg: Lcg
) -> None:
    _populate(tmp_path, 30)
    sidecar = _gdir(tmp_path) / GENERATION_FILE
    real = msgspec.json.decode(sidecar.read_bytes(), type=GenerationFile).generation
    sidecar.write_bytes(msgspec.json.encode(GenerationFile(generation="f" * 32)))

    with _open(tmp_path) as ws:
        reason = ws.projector.degraded_reason(GROUP)
        assert reason is not None and "f" * 32 in reason and real in reason
        assert ws.graph.counts(GROUP).entities == 30  # served, not purged
        with pytest.raises(DegradedError):
            assertion.assert_entity(ws, name="new", group_id=GROUP)
        report = verify_workspace(ws, [GROUP])
        assert not report.ok
        assert any("degraded" in p for p in report.groups[0].problems)

    status, out, _ = lcg(tmp_path, "verify")
    assert status == 1 and "verify: FAILED" in out
    status, out, _ = lcg(tmp_path, "status")
    assert status == 1 and real in out
    # A rebuild would believe the sidecar and purge: refused, naming both generations.
    status, _, err = lcg(tmp_path, "replay", "--group", GROUP, "--force-clear")
    assert status == 1 and real in err

    # The remedy: restore the sidecar; the group is whole again.
    sidecar.write_bytes(msgspec.json.encode(GenerationFile(generation=real)))
    with _open(tmp_path) as ws:
        assert ws.projector.degraded_reason(GROUP) is None
        assert ws.graph.counts(GROUP).entities == 30
        assertion.assert_entity(ws, name="new", group_id=GROUP)


# ---- items 4 and 5: a replay that skipped anything ---------------------------------------

DAMAGE: dict[str, Callable[[Path], list[int]]] = {}


def _damage(name: str) -> Callable[[Callable[[Path], list[int]]], Callable[[Path], list[int]]]:
    def register(fn: Callable[[Path], list[int]]) -> Callable[[Path], list[int]]:
        DAMAGE[name] = fn
        return fn

    return register


@_damage("deleted-middle-segment")
def _deleted_segment(root: Path) -> list[int]:
    segments = list_segments(_gdir(root))
    segments[1].path.unlink()  # seqs 5..9
    return [5, 6, 7, 8, 9]


@_damage("unparseable-line")
def _unparseable(root: Path) -> list[int]:
    _rewrite_line(root, 7, lambda line: b'{"seq": 7, "broken\n')
    return [7]


@_damage("unknown-type")
def _unknown_type(root: Path) -> list[int]:
    _rewrite_line(root, 7, _resealed(lambda raw: raw.update(type="EntityFrobnicated")))
    return [7]


@_damage("future-version")
def _future_version(root: Path) -> list[int]:
    _rewrite_line(root, 7, _resealed(lambda raw: raw.update(v=99)))
    return [7]


@_damage("foreign-generation")
def _foreign_generation(root: Path) -> list[int]:
    _rewrite_line(root, 7, _resealed(lambda raw: raw.update(gen="0" * 32)))
    return [7]


@_damage("modified-letter")
def _modified_letter(root: Path) -> list[int]:
    _rewrite_line(root, 7, lambda line: line.replace(b'"name":"thing 7"', b'"name":"thinG 7"'))
    return [7]


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_a_replay_that_skipped_seqs_fails_until_the_loss_is_accepted(
    kind: str, tmp_path: Path, lcg: Lcg
) -> None:
    _populate(tmp_path, 20)
    lost = DAMAGE[kind](tmp_path)

    # The rebuild the issue describes: it used to print "20 events replayed" and exit 0.
    status, out, err = lcg(tmp_path, "replay", "--group", GROUP, "--force-clear", "--json")
    assert status == 1, out
    result = json.loads(out)
    assert result["success"] is False
    skipped = [s for a, b in result["skipped_seqs"] for s in range(a, b + 1)]
    assert skipped == lost
    assert result["seqs_skipped"] == len(lost)
    assert "--accept-loss" in err
    if kind == "modified-letter":
        assert result["corrupt_lines"] == 1 and result["failed_lines"] >= 1

    # A service opening the group marks it degraded, and keeps it so across restarts (a later
    # catch-up starts past the hole and would not see it).
    _drop_projections(tmp_path)
    for _ in range(2):
        with _open(tmp_path) as ws:
            reason = ws.projector.degraded_reason(GROUP)
            assert reason is not None and "--accept-loss" in reason
            assert ws.graph.counts(GROUP).entities == 20 - len(lost)
            with pytest.raises(DegradedError):
                assertion.assert_entity(ws, name="new", group_id=GROUP)
    assert (tmp_path / LCG_DIR / DAMAGE_FILE).is_file()
    status, out, _ = lcg(tmp_path, "verify")
    assert status == 1

    # The operator accepts the loss explicitly: success, the group takes writes again.
    status, out, err = lcg(
        tmp_path, "replay", "--group", GROUP, "--force-clear", "--accept-loss", "--json"
    )
    assert status == 0, out + err
    result = json.loads(out)
    assert result["success"] is True and result["loss_accepted"] is True
    assert result["seqs_skipped"] == len(lost)
    with _open(tmp_path) as ws:
        assert ws.projector.degraded_reason(GROUP) is None
        assertion.assert_entity(ws, name="new", group_id=GROUP)


def test_wal_verify_reports_a_modified_letter_by_seq_and_file_line(
    tmp_path: Path, lcg: Lcg
) -> None:
    _populate(tmp_path, 10)
    where = _rewrite_line(
        tmp_path, 7, lambda line: line.replace(b'"name":"thing 7"', b'"name":"thinG 7"')
    )
    status, out, _ = lcg(tmp_path, "wal", "verify", "--group", GROUP)
    assert status == 1, out
    assert "DEFECT" in out and "corrupt" in out
    assert f"at {where}" in out and "seq 7" in out
    status, out, _ = lcg(tmp_path, "wal", "verify", "--group", GROUP, "--json")
    (report,) = json.loads(out)
    assert report["corrupt_lines"] == 1 and not report["ok"]


def test_a_stream_written_before_checksums_replays_clean_and_takes_new_lines(
    tmp_path: Path, lcg: Lcg
) -> None:
    _populate(tmp_path, 8)
    for seg in list_segments(_gdir(tmp_path)):  # as lcg wrote them before ADR 0075
        legacy = []
        for line in seg.path.read_bytes().splitlines():
            raw = json.loads(line)
            del raw[CHECKSUM_FIELD]
            legacy.append(msgspec.json.encode(raw) + b"\n")
        seg.path.write_bytes(b"".join(legacy))
    _drop_projections(tmp_path)
    with _open(tmp_path) as ws:
        assert ws.projector.degraded_reason(GROUP) is None
        assert ws.graph.counts(GROUP).entities == 8
        assertion.assert_entity(ws, name="after the upgrade", group_id=GROUP)
    status, out, _ = lcg(tmp_path, "wal", "verify", "--group", GROUP)
    assert status == 0, out
    status, out, err = lcg(tmp_path, "replay", "--group", GROUP, "--force-clear", "--json")
    assert status == 0, out + err
    assert json.loads(out)["success"] is True
