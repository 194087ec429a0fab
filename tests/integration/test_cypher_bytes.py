"""Cypher results are bounded in bytes as well as rows (issue 27 item 3, ADR 0195).

Three clients each asking a real ``lcg serve`` for 100,000 rows of 4 kB (under the row cap)
grew the service to 1.7 GB: every answer crossed from the Cypher worker whole. The worker now
counts the bytes of the values as it builds the rows and refuses the result once they pass
``LCG_CYPHER_MAX_BYTES`` (32 MiB by default), naming the setting; the service's peak memory
does not move. Over the real socket, with the setting read from the environment.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf

#: 100,000 rows (the row cap allows them) of 4,000 bytes: 400 MB of values.
BIG = "UNWIND range(1, 100000) AS i RETURN i, lpad('', 4000, 'x')"


def _peak_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmHWM")


@pytest.fixture
def serve(request: pytest.FixtureRequest) -> Iterator[tuple[Path, Any]]:
    env: dict[str, str] = getattr(request, "param", {})
    ws = sf.short_tmp("lcg-cybytes-")
    proc = sf.spawn_serve(ws, env=env)
    sock = ws / ".lcg" / "service.sock"
    try:
        sf.wait_healthy(sock, proc)
        with sf.RawConnection(sock) as c:  # the worker is up and its read model open
            assert c.result("knowledge_query_cypher", {"query": "RETURN 1"})["rows"] == [["1"]]
        yield sock, proc
    finally:
        sf.stop_serve(proc, sock)
        shutil.rmtree(ws, ignore_errors=True)


def test_three_clients_asking_400_mb_each_are_refused_and_the_service_stays_small(
    serve: tuple[Path, Any],
) -> None:
    sock, proc = serve
    before = _peak_mb(proc.pid)
    errors: list[dict[str, Any]] = []

    def ask() -> None:
        with sf.RawConnection(sock, timeout=300) as c:
            errors.append(c.error("knowledge_query_cypher", {"query": BIG}))

    clients = [threading.Thread(target=ask) for _ in range(3)]
    for t in clients:
        t.start()
    for t in clients:
        t.join(timeout=600)
    assert len(errors) == 3, errors
    for error in errors:
        assert error["code"] == -32000, error
        assert "LCG_CYPHER_MAX_BYTES" in error["message"], error
        assert f"{32 * 1024 * 1024:,} bytes" in error["message"], error
    # Nothing of the 400 MB answers reached the service (it grew by 1.7 GB before).
    assert _peak_mb(proc.pid) - before < 150, (before, _peak_mb(proc.pid))
    with sf.RawConnection(sock) as c:
        small = c.result("knowledge_query_cypher", {"query": BIG.replace("100000", "10")})
    assert len(small["rows"]) == 10 and small["rows"][0][1] == "x" * 4000


@pytest.mark.parametrize("serve", [{"LCG_CYPHER_MAX_BYTES": "4096"}], indirect=True)
def test_the_cap_is_the_setting_and_counts_utf8_bytes(serve: tuple[Path, Any]) -> None:
    sock, _ = serve
    with sf.RawConnection(sock) as c:
        # 2 × 2,000 bytes fit; 3 rows do not.
        ok = c.result(
            "knowledge_query_cypher",
            {"query": "UNWIND range(1, 2) AS i RETURN lpad('', 2000, 'x')"},
        )
        assert len(ok["rows"]) == 2
        error = c.error(
            "knowledge_query_cypher",
            {"query": "UNWIND range(1, 3) AS i RETURN lpad('', 2000, 'x')"},
        )
        assert "4,096 bytes at row 3 (LCG_CYPHER_MAX_BYTES)" in error["message"], error
        # é is two bytes: 1,500 of them are 3,000 bytes, so two rows pass 4,096.
        error = c.error(
            "knowledge_query_cypher",
            {"query": "UNWIND range(1, 2) AS i RETURN lpad('', 1500, 'é')"},
        )
        assert "at row 2" in error["message"], error
