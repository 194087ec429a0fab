"""``lcg verify`` right after a crash says BEHIND, as ``lcg status`` does, not DIFFERENT.

A service that dies before applying what it appended leaves the stream ahead of the
projections, and the projections at different seqs (the graph commits each apply, the text
and vector snapshots are saved later). ``lcg verify`` compared every projection at the lowest
seq and said DIFFERENT (issue 23 item 8), or, with all of them at one seq behind the stream,
ok (exit 0) while ``lcg status`` said behind (exit 1). Now each projection is compared at its
own seq, a lag is BEHIND with the remedy and exit 1, and once ``lcg serve`` has caught up,
verify is ok. Real ``lcg serve`` subprocesses, SIGKILL, real files.
"""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import _service_fixtures as sf
from lcg.rpc.client import Client

#: The projections' own files (``.lcg/<dir>``); the streams are ``.lcg/wal``.
PROJECTIONS = ("db", "text", "vectors")


def _write(ws: Path, sock: Path, start: int, n: int) -> None:
    with Client(sock, timeout=60) as c:
        for i in range(start, start + n):
            c.assert_entity(name=f"entity {i}", group_id="g1")
            c.process_chunk(
                chunk_text=f"chunk {i} about entity {i}",
                chunk_id=f"c{i}",
                source_file="f.txt",
                group_id="g1",
            )


def _verify(lcg_main: sf.LcgMain, ws: Path) -> tuple[int, str, dict[str, object]]:
    text = lcg_main(ws, "verify")
    as_json = lcg_main(ws, "verify", "--json")
    assert as_json.returncode == text.returncode, (text.stdout, as_json.stdout)
    (group,) = json.loads(as_json.stdout)["groups"]
    return text.returncode, text.stdout + text.stderr, group


def test_verify_says_behind_where_the_projections_lag_the_stream(lcg_main: sf.LcgMain) -> None:
    with sf.temp_workspace("lcg-verify-") as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
            _write(ws, sock, 0, 3)
        finally:
            assert sf.stop_serve(proc, sock) == 0
        # The projections as they stood at seq 5 ...
        saved = ws / "saved"
        for name in PROJECTIONS:
            shutil.copytree(ws / ".lcg" / name, saved / name, symlinks=True)
        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
            _write(ws, sock, 3, 3)
        finally:
            assert sf.stop_serve(proc, sock) == 0
        # ... under a stream that went on to seq 11: what a service that appended and died
        # before applying leaves.
        for name in PROJECTIONS:
            shutil.rmtree(ws / ".lcg" / name)
            shutil.copytree(saved / name, ws / ".lcg" / name, symlinks=True)

        status = lcg_main(ws, "status")
        assert status.returncode == 1 and "behind: group 'g1' is applied to seq 5 of 11" in (
            status.stdout
        ), status.stdout
        code, out, group = _verify(lcg_main, ws)
        assert code == 1, out
        assert "g1                       applied seq 5: BEHIND" in out, out
        assert "is applied to seq 5 of 11" in out and "`lcg serve` applies the rest" in out
        assert "DIFFERENT" not in out, out
        assert (group["equal"], group["behind"], group["max_seq"]) == (True, True, 11)

        # The remedy: a service catches the projections up on opening; then verify is ok.
        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
        finally:
            assert sf.stop_serve(proc, sock) == 0
        code, out, group = _verify(lcg_main, ws)
        assert code == 0 and "verify: ok" in out, out
        assert group["behind"] is False


def test_verify_after_a_sigkill_agrees_with_status(lcg_main: sf.LcgMain) -> None:
    with sf.temp_workspace("lcg-verify-") as ws:
        sock = ws / ".lcg" / "service.sock"
        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
            _write(ws, sock, 0, 5)
        finally:
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(30) == -signal.SIGKILL
        status = lcg_main(ws, "status")
        code, out, group = _verify(lcg_main, ws)
        # Whatever the kill left, nothing diverged: verify is ok exactly when status is, and
        # a lag is BEHIND (the graph stands at the last seq; snapshots may stand earlier).
        assert "DIFFERENT" not in out, out
        assert group["equal"] is True, group
        assert code == status.returncode, (out, status.stdout)
        assert ("behind:" in status.stdout) == bool(group["behind"]) == ("BEHIND" in out)
