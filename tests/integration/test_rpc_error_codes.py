"""Error codes at the edges (issue 11 item 10), over real sockets.

* 100,000 nested ``[`` (closed or not) is a parse error (-32700), not an internal
  ``RecursionError`` (-32603), and the connection keeps serving.
* A write the file system refuses (a read-only group directory or WAL root) is -32000 naming
  the path and what to do, not -32603 ``PermissionError``. The service runs as a real
  ``lcg serve`` subprocess; as root it runs without CAP_DAC_OVERRIDE (``setpriv``) so that
  file modes bind it as they bind any other user.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
import rpc_testapp as T


def _read_line(s: socket.socket) -> bytes:
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


@pytest.mark.parametrize(
    "line",
    [b"[" * 100_000, b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000],
    ids=["open", "closed", "objects"],
)
def test_deep_nesting_is_a_parse_error_and_the_connection_goes_on(line: bytes) -> None:
    with T.short_tmpdir() as d:
        path = d / "s.sock"
        srv = T.ThreadedServer(T.TestApp(), path).start()
        try:
            with contextlib.closing(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)) as s:
                s.settimeout(30)
                s.connect(str(path))
                s.sendall(line + b"\n")
                reply = json.loads(_read_line(s))
                assert reply["id"] is None
                assert reply["error"]["code"] == -32700, reply
                assert "nested too deeply" in reply["error"]["message"]
                s.sendall(b'{"jsonrpc":"2.0","id":2,"method":"health_check"}\n')
                assert json.loads(_read_line(s))["result"]["healthy"] is True
        finally:
            srv.stop()


# ---- the file system refuses a write -----------------------------------------------------


def _serve_cmd(ws: Path) -> list[str]:
    cmd = [str(sf.LCG), "-C", str(ws), "serve"]
    if os.geteuid() == 0:
        # Root ignores file modes (CAP_DAC_OVERRIDE); drop it so they bind this service.
        drop = "-dac_override,-dac_read_search"
        cmd = ["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}", *cmd]
    return cmd


@contextlib.contextmanager
def _service(ws: Path) -> Iterator[sf.RawConnection]:
    log = (ws / "serve.log").open("ab")
    proc = subprocess.Popen(
        _serve_cmd(ws),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        env=sf.serve_env(),
        cwd=str(ws),
    )
    log.close()
    sock = ws / ".lcg" / "service.sock"
    try:
        sf.wait_healthy(sock, proc)
        with sf.RawConnection(sock) as conn:
            yield conn
    finally:
        sf.stop_serve(proc, sock)


def _freeze(path: Path) -> None:
    """Make a directory and everything in it read-only."""
    for p in path.rglob("*"):
        if p.is_file():
            p.chmod(0o444)
    path.chmod(0o555)


def _assert_names_path_and_remedy(error: dict[str, Any], path: Path) -> None:
    assert error["code"] == -32000, error
    message = error["message"]
    assert "PermissionError" not in message and "internal error" not in message, message
    assert str(path) in message, message
    assert "Permission denied" in message and "chmod u+w" in message, message


def test_a_read_only_group_directory_is_named_with_the_remedy() -> None:
    with sf.temp_workspace("lcg-ro-") as ws:
        with _service(ws) as conn:
            conn.result("knowledge_assert_entity", {"name": "A", "group_id": "g"})
        group = ws / ".lcg" / "wal" / "g"
        _freeze(group)
        try:
            with _service(ws) as conn:
                error = conn.error("knowledge_assert_entity", {"name": "B", "group_id": "g"})
                _assert_names_path_and_remedy(error, group)
                # Reads still answer.
                found = conn.result("knowledge_query_cypher", {"query": "MATCH (e:Entity) "
                                    "RETURN e.name"})  # fmt: skip
                assert found["rows"] == [["A"]]
        finally:
            group.chmod(0o755)


def test_a_read_only_wal_root_is_named_with_the_remedy() -> None:
    with sf.temp_workspace("lcg-ro-") as ws:
        with _service(ws) as conn:
            conn.result("knowledge_assert_entity", {"name": "A", "group_id": "g"})
            root = ws / ".lcg" / "wal"
            root.chmod(0o555)
            try:
                error = conn.error("knowledge_assert_entity", {"name": "B", "group_id": "h"})
                _assert_names_path_and_remedy(error, root / "h")
                # The service keeps serving the groups it can write.
                conn.result("knowledge_assert_entity", {"name": "C", "group_id": "g"})
            finally:
                root.chmod(0o755)
