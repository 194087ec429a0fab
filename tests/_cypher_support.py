"""Helpers for the Cypher sandbox tests: a real ``lcg serve`` with short Cypher limits, the
memory of it and its worker processes, and a small graph to query."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen

import _service_fixtures as sf
from lcg.events.layout import LCG_DIR, SOCKET_FILE

#: Entities and the relationships between them (a chain with a branch, for paths).
PEOPLE = ["Ada", "Babbage", "Curie", "Darwin", "Euler", "Faraday"]
LINKS = [
    ("Ada", "KNOWS", "Babbage"),
    ("Babbage", "KNOWS", "Curie"),
    ("Curie", "KNOWS", "Darwin"),
    ("Darwin", "KNOWS", "Euler"),
    ("Euler", "KNOWS", "Faraday"),
    ("Ada", "ADMIRES", "Euler"),
]


@dataclass
class Served:
    """A running ``lcg serve`` and a connection to it."""

    workspace: Path
    proc: Popen[bytes]
    conn: sf.RawConnection

    @property
    def socket(self) -> Path:
        """The service's socket."""
        return self.workspace / LCG_DIR / SOCKET_FILE

    def cypher(self, query: str) -> dict[str, object]:
        """The whole answer (result or error) to one query."""
        return self.conn.request("knowledge_query_cypher", {"query": query})

    def healthy(self) -> bool:
        """``health_check`` answers healthy and the process lives."""
        answer = self.conn.result("health_check", {})
        return self.proc.poll() is None and bool(answer["healthy"])


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def rss_kb(pid: int) -> int:
    """Resident memory of one process (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the zygote and the worker forked from it)."""
    out: list[int] = []
    for child in _children(pid):
        out += [child, *descendants(child)]
    return out


def tree_rss_kb(pid: int) -> int:
    """Resident memory of the service and its Cypher processes together."""
    return rss_kb(pid) + sum(rss_kb(c) for c in descendants(pid))


def settled_tree_rss_kb(pid: int, timeout: float = 60) -> int:
    """``tree_rss_kb`` once the zygote and one worker run and their memory stopped changing
    (a replaced worker finished opening)."""
    deadline = time.monotonic() + timeout
    last = -1
    while time.monotonic() < deadline:
        procs = descendants(pid)
        total = tree_rss_kb(pid)
        if len(procs) == 2 and abs(total - last) < 2048:
            return total
        last = total
        time.sleep(0.5)
    raise AssertionError(f"the Cypher processes of {pid} never settled: {descendants(pid)}")


def seed(conn: sf.RawConnection, group_id: str | None = None) -> None:
    """The people and their links."""
    extra = {} if group_id is None else {"group_id": group_id}
    for name in PEOPLE:
        conn.result("knowledge_assert_entity", {"name": name, "summary": "scientist", **extra})
    for source, predicate, target in LINKS:
        conn.result(
            "knowledge_assert_relationship",
            {"source_name": source, "predicate": predicate, "target_name": target, **extra},
        )


@contextmanager
def served(env: dict[str, str]) -> Iterator[Served]:
    """``lcg serve`` in a fresh workspace with ``env``, seeded, stopped afterwards."""
    with sf.temp_workspace("lcg-cy-") as ws:
        proc = sf.spawn_serve(ws, env=env)
        sock = ws / LCG_DIR / SOCKET_FILE
        try:
            sf.wait_healthy(sock, proc)
            with sf.RawConnection(sock, timeout=120) as conn:
                seed(conn)
                yield Served(ws, proc, conn)
        finally:
            sf.stop_serve(proc, sock)
