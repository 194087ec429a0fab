"""A client written the way the reference's Getting Started page writes one: a raw Unix
socket, one JSON line per request, ``["result"]`` read from each reply — against a real
``lcg serve`` subprocess with no extractor configured (lite mode).
"""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path
from typing import Any

import _service_fixtures as sf


class Lines:
    """The whole client: connect, send a line, read a line."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(str(path))
        self.file = self.sock.makefile("rwb")
        self.n = 0

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.n += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        self.file.write(line.encode() + b"\n")
        self.file.flush()
        reply = json.loads(self.file.readline())
        assert reply["id"] == self.n, reply
        return reply["result"]

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def test_getting_started_raw_socket_lite_mode() -> None:
    with sf.temp_workspace("lcg-gs-") as ws:
        proc = sf.spawn_serve(ws)
        sock = ws / ".lcg" / "service.sock"
        try:
            sf.wait_healthy(sock, proc)  # the socket exists; health_check says healthy
            assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
            c = Lines(sock)
            assert c.call("health_check", {})["healthy"] is True

            chunk = c.call("knowledge_process_chunk", {
                "chunk_text": "Apollo 11 was the first crewed mission to land on the Moon. "
                              "Neil Armstrong and Buzz Aldrin walked on the lunar surface.",
                "chunk_id": "apollo-11-0",
                "source_file": "apollo.md",
            })  # fmt: skip
            assert chunk["success"] is True and chunk["chunk_id"] == "apollo-11-0"
            assert chunk["nodes_extracted"] == 0  # no extractor: nothing extracted yet...
            assert chunk["extraction"]["status"] == "pending"  # ...and it says so

            found = c.call("knowledge_find_entities", {"query": "Neil Armstrong"})
            assert found == {"nodes": [], "count": 0}

            # the text itself is durable and searchable straight away
            # min_score defaults to the reference's cosine floor of 0.5, which this query
            # clears under the hash test double (ADR 0173).
            passages = c.call("knowledge_search_passages", {"query": "walked on the lunar surface"})
            assert passages["count"] == 1
            assert passages["passages"][0]["uuid"] == chunk["episode_uuid"]

            # entities asserted by hand are found at once
            c.call("knowledge_assert_entity", {"name": "Neil Armstrong", "summary": "astronaut"})
            found = c.call("knowledge_find_entities", {"query": "Neil Armstrong"})
            assert [n["name"] for n in found["nodes"]] == ["Neil Armstrong"]

            status = c.call("knowledge_status", {})
            assert status["queryable"] is True
            assert status["episode_count"] == 1 and status["entity_count"] == 1
            assert status["pending_episodes"] == 1
            assert status["wal"]["max_seq"] == 1 and status["wal"]["hydration_status"] == "hydrated"

            assert c.call("knowledge_close", {}) == {"status": "closed"}
            c.close()
            assert proc.wait(60) == 0
            assert not sock.exists()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
