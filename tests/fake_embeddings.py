"""A FAKE OpenAI-compatible ``POST /v1/embeddings`` server, for tests at the embedder boundary.

It serves scaled ``HashEmbedder`` vectors (deterministic) over 127.0.0.1 or a Unix socket,
records every request body it was sent, and switches on failures by ``state.mode``. It can be
started on a port chosen before it runs (``free_port``), so a test can start a service
pointing at an embedder that is not there yet and start the embedder later.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lcg.extract.embedders import HashEmbedder

FAKE_MODEL = "fake-embed-v0"
FAKE_DIM = 48


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class FakeState:
    """What the fake server serves, and what it was asked."""

    def __init__(self, dim: int = FAKE_DIM, model: str = FAKE_MODEL) -> None:
        self.mode = "ok"
        #: While clear, a request with a text containing ``held_word`` waits for it: a slow
        #: embedder, ended when the test says (no sleeps).
        self.release = threading.Event()
        self.release.set()
        self.held_word = "HOLDME"
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.hasher = HashEmbedder(dim)
        self.dim = dim
        #: Connections open now (kept-alive ones too): ``stop`` ends them.
        self.connections: set[socket.socket] = set()

    def reset(self) -> None:
        with self.lock:
            self.mode = "ok"
            self.requests.clear()

    def texts(self) -> list[str]:
        """Every text embedded so far (a string ``input`` is one text)."""
        with self.lock:
            out: list[str] = []
            for body in self.requests:
                raw = body["input"]
                out.extend([raw] if isinstance(raw, str) else raw)
            return out

    def answer(self, body: dict[str, Any]) -> tuple[int, bytes]:
        with self.lock:
            self.requests.append(body)
            raw = body["input"]
            mode = self.mode
        if mode == "strings_only" and not isinstance(raw, str):
            # As a server written for the reference's one-string requests might.
            return 422, b'{"error": "input must be a string"}'
        texts: list[str] = [raw] if isinstance(raw, str) else raw
        if not self.release.is_set() and any(self.held_word in t for t in texts):
            self.release.wait(300)
        if mode == "http500":
            return 500, b'{"error": "model exploded"}'
        if mode == "garbage":
            return 200, b"<html>not json"
        # Scaled, so the client's normalisation is exercised.
        vectors = (self.hasher.embed(texts) * 2.5).tolist()
        if mode == "short":
            vectors = [
                v[:-1] if "BADSHAPE" in t else v for t, v in zip(texts, vectors, strict=True)
            ]
        if mode == "zero":
            vectors = [[0.0] * self.dim for _ in texts]
        data = [{"object": "embedding", "embedding": v, "index": i} for i, v in enumerate(vectors)]
        if mode == "count":
            data = data[:-1]
        if mode == "shuffle":
            data = data[::-1]
        if mode == "noindex":
            data = [{"embedding": d["embedding"]} for d in data]
        payload = {"object": "list", "data": data, "model": self.model}
        return 200, json.dumps(payload).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: FakeState

    def do_POST(self) -> None:  # noqa: N802 - the http.server naming
        length = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(length))
        status, payload = self.state.answer(body) if self.path == "/v1/embeddings" else (404, b"{}")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def setup(self) -> None:
        super().setup()
        with self.state.lock:
            self.state.connections.add(self.connection)

    def finish(self) -> None:
        with self.state.lock:
            self.state.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class _TCPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FakeEmbeddingsServer:
    """A FAKE OpenAI-compatible embeddings server on 127.0.0.1 (``port``) or a Unix socket."""

    def __init__(
        self, uds: str | None = None, *, port: int = 0, state: FakeState | None = None
    ) -> None:
        self.state = state or FakeState()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.server: socketserver.BaseServer
        if uds is None:
            tcp = _TCPServer(("127.0.0.1", port), handler)
            self.url = f"http://127.0.0.1:{tcp.server_address[1]}"
            self.server = tcp
        else:
            self.server = _UnixHTTPServer(uds, handler)
            self.url = uds
        # The socket listens from here on: clients may connect before the loop runs.
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and end every open connection: the server is gone, as a killed
        sidecar is (a kept-alive connection would otherwise go on being served)."""
        self.server.shutdown()
        self.server.server_close()
        with self.state.lock:
            live = list(self.state.connections)
        for conn in live:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by its client
        self._thread.join()
