"""A sync batch is bounded server-side (issue 27 item 3, ADR 0195): a real ``lcg serve``.

One ``knowledge_sync_chunks`` of 60,000 chunks (just under the 8 MiB request limit) used to be
one commit: it held its group's lock for the whole batch (27 s, 1.6 GB). It is now recorded in
parts of at most 64 chunks, the lock released between them: another client's write to the
same group is acknowledged while the big batch is still being recorded, lands between its
parts in the stream, and the final state is what the two writes mean — every chunk once, the
answer the sum of the parts, ``lcg verify`` equal. A SIGKILL between parts leaves a state the
same batch sent again converges from.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf

GROUP = "big"
WHEN = "2024-05-01T12:00:00Z"


def _chunks(n: int) -> list[dict[str, str]]:
    return [
        {
            "chunk_id": f"t/{i // 10}#{i:012x}",
            "source_file": f"t/{i // 10}",
            "chunk_text": f"moon {i}",
            "reference_time": WHEN,
        }
        for i in range(n)
    ]


def _request(add: list[dict[str, str]]) -> bytes:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "knowledge_sync_chunks",
        "params": {"group_id": GROUP, "add": add},
    }
    return json.dumps(body).encode() + b"\n"


class _Big(threading.Thread):
    """Sends one request line on its own connection and reads its answer."""

    def __init__(self, sock: Path, line: bytes) -> None:
        super().__init__(daemon=True)
        self.sock, self.line = sock, line
        self.answer: dict[str, Any] | None = None
        self.done = threading.Event()

    def run(self) -> None:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(self.sock))
            s.sendall(self.line)
            buf = b""
            while not buf.endswith(b"\n"):
                got = s.recv(1 << 20)
                if not got:
                    break
                buf += got
        self.done.set()
        self.answer = json.loads(buf) if buf else None


@pytest.fixture
def serve() -> Iterator[tuple[Path, Any]]:
    ws = sf.short_tmp("lcg-parts-")
    proc = sf.spawn_serve(ws)
    try:
        sf.wait_healthy(ws / ".lcg" / "service.sock", proc)
        yield ws, proc
    finally:
        sf.stop_serve(proc, ws / ".lcg" / "service.sock")
        shutil.rmtree(ws, ignore_errors=True)


def _wait_stream(ws: Path, proc: Any) -> None:
    """Until the first part is in the stream (polled: the stream grows on each append)."""
    sf.eventually(
        lambda: sf.stream_bytes(ws / ".lcg" / "wal") > 0,
        "the batch reaching the stream",
        proc=proc,
        step=0.01,
    )


def _wait_vectors(sock: Path) -> None:
    """Until the service has made the vectors a source sync left to the background (text
    first, ADR 0201): health names the backlog while there is one."""
    with sf.RawConnection(sock, timeout=600) as c:
        sf.eventually(
            lambda: not c.result("health_check", {}).get("vectors_pending"),
            "the vector backlog drained",
            step=0.2,
        )


def _manifest(sock: Path) -> dict[str, str]:
    with sf.RawConnection(sock) as c:
        rows = c.result("knowledge_source_manifest", {"prefix": "t/", "group_id": GROUP})
        other = c.result("knowledge_source_manifest", {"prefix": "o/", "group_id": GROUP})
    held = [(r["chunk_id"], r["content_hash"]) for r in rows["chunks"] + other["chunks"]]
    assert len(held) == len(dict(held)), "a chunk recorded twice"
    return dict(held)


@pytest.mark.long
def test_a_60k_chunk_batch_lets_another_write_in_and_ends_in_the_same_state(
    serve: tuple[Path, Any],
) -> None:
    ws, proc = serve
    sock = ws / ".lcg" / "service.sock"
    add = _chunks(60_000)
    line = _request(add)
    assert len(line) < 8 * 1024 * 1024  # one request the service accepts
    big = _Big(sock, line)
    big.start()
    _wait_stream(ws, proc)
    other = {
        "chunk_id": "o/x#000000000001",
        "source_file": "o/x",
        "chunk_text": "other",
        "reference_time": WHEN,
    }
    with sf.RawConnection(sock, timeout=600) as c:
        answer = c.result("knowledge_sync_chunks", {"group_id": GROUP, "add": [other]})
    # Acknowledged while the big batch is still being recorded (it waited for all of it).
    assert not big.done.is_set(), "the other write waited for the whole 60k-chunk batch"
    assert list(answer["added"]) == ["o/x#000000000001"]
    big.join(timeout=900)
    assert big.answer is not None and "result" in big.answer, big.answer
    result = big.answer["result"]
    assert (len(result["added"]), result["already_held"], result["pending"]) == (60_000, 0, 60_000)

    # The other write's event lies between the big batch's parts in the stream.
    events = [
        e for e in sf.stream_events(ws / ".lcg" / "wal")[GROUP] if e["type"] == "EpisodeAdded"
    ]
    seq_of = {e["name"]: e["seq"] for e in events}
    big_seqs = [seq_of[c["chunk_id"]] for c in add]
    assert min(big_seqs) < seq_of["o/x#000000000001"] < max(big_seqs)
    # The final state is what the two writes mean: every chunk once, with its own text.
    from lcg.ingest.episodes import content_hash

    held = _manifest(sock)
    assert held == {c["chunk_id"]: content_hash(c["chunk_text"]) for c in [*add, other]}
    _wait_vectors(sock)  # verify compares projections; the vectors follow the text
    verify = sf.run_lcg(ws, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_kill_between_parts_converges_when_the_batch_is_sent_again(
    serve: tuple[Path, Any],
) -> None:
    ws, proc = serve
    sock = ws / ".lcg" / "service.sock"
    add = _chunks(3_000)
    big = _Big(sock, _request(add))
    big.start()
    _wait_stream(ws, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    big.join(timeout=60)
    recorded = sum(1 for e in sf.stream_events(ws / ".lcg" / "wal")[GROUP])
    assert 0 < recorded  # some parts are durable (all of them, if the kill came late)

    again = sf.spawn_serve(ws)
    try:
        sf.wait_healthy(sock, again)
        with sf.RawConnection(sock, timeout=600) as c:
            result = c.result("knowledge_sync_chunks", {"group_id": GROUP, "add": add})
        assert len(result["added"]) + result["already_held"] == len(add)
        assert result["already_held"] == recorded
        from lcg.ingest.episodes import content_hash

        assert _manifest(sock) == {c["chunk_id"]: content_hash(c["chunk_text"]) for c in add}
    finally:
        sf.stop_serve(again, sock)
