"""The page's HTTP server: stdlib ``ThreadingHTTPServer`` on 127.0.0.1, each request guarded
(``guard``), routed to a view, and answered with the security headers.

A view is a function ``(Site, Query) -> Answer``; its only way to the workspace is
``Site.reads`` (``reads.READS``). Assets are the files of ``lcg/ui/assets`` shipped in the
package, read once at start; nothing is fetched from anywhere else.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

from lcg.client import TransportError
from lcg.errors import LcgError
from lcg.ui import entity, health, home, quality, search, sources
from lcg.ui.guard import SECURITY_HEADERS, Guard
from lcg.ui.html import el
from lcg.ui.site import HTML, Answer, Query, Site, html_answer, not_found

__all__ = ["ROUTES", "UiServer", "load_assets"]

View = Callable[[Site, Query], Answer]

#: Exact paths and their views.
ROUTES: Final[dict[str, View]] = {
    "/": home.home,
    "/health": health.health_page,
    "/health.json": health.health_json,
    "/search": search.search_page,
    "/sources": sources.sources_page,
    "/source": sources.source_page,
    "/quality": quality.quality_page,
}
#: Paths with an id after them (``/entity/<uuid>``), and their views.
PREFIXES: Final[dict[str, View]] = {
    "/entity/": entity.entity_route,
    "/episode/": sources.episode_page,
}
_TYPES: Final = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}


def load_assets() -> dict[str, tuple[str, bytes]]:
    """``/assets/<name>`` → (content type, bytes) of every file shipped in ``ui/assets``."""
    out: dict[str, tuple[str, bytes]] = {}
    for item in resources.files("lcg.ui").joinpath("assets").iterdir():
        suffix = Path(item.name).suffix
        if item.is_file() and suffix in _TYPES:
            out[f"/assets/{item.name}"] = (_TYPES[suffix], item.read_bytes())
    return out


class UiServer(ThreadingHTTPServer):
    """The page's server, bound to 127.0.0.1 only."""

    daemon_threads = True

    def __init__(self, port: int, token: str, site: Site) -> None:
        """Bind 127.0.0.1:``port`` (0: the kernel's choice) for ``site``, guarded by ``token``."""
        super().__init__(("127.0.0.1", port), _Handler)
        self.port: int = self.server_address[1]
        self.guard = Guard(token, self.port)
        self.site = site
        self.assets = load_assets()
        self.stopped = threading.Event()

    def answer(self, path: str, query: dict[str, str]) -> Answer:
        """The answer to a guarded GET of ``path``."""
        if path in self.assets:
            kind, body = self.assets[path]
            return Answer(200, kind, body)
        view = ROUTES.get(path)
        if view is not None:
            return view(self.site, Query(query))
        for prefix, view in PREFIXES.items():
            if path.startswith(prefix) and len(path) > len(prefix):
                return view(self.site, Query(query, path[len(prefix) :]))
        return not_found(f"no page at {path}")


def _failure(exc: Exception) -> Answer:
    """A page saying the service could not answer (its words, never a traceback)."""
    if isinstance(exc, TransportError):
        text = f"the workspace's service cannot be reached: {exc}"
    else:
        text = f"the service said: {exc}"
    return html_answer(
        "Unavailable", el("h1", "Unavailable"), el("p", text, id="error"), status=503
    )


class _Handler(BaseHTTPRequestHandler):
    """One request: guard, route, answer with the security headers."""

    server: UiServer
    server_version = "lcg-ui"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    # Headers and body are two writes on a kept-alive connection: with Nagle's algorithm the
    # body waits for the browser's delayed ACK of the headers (up to 40 ms a request).
    disable_nagle_algorithm = True

    def __getattr__(self, name: str) -> Any:
        # Every method has a handler: GET and HEAD are answered, any other (POST, PUT, a
        # made-up one) is refused by the guard with 405 instead of the stdlib's 501.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def _serve(self) -> None:
        verdict = self.server.guard.check(
            self.command, self.path, self.headers.get("Host"), self.headers.get("Cookie")
        )
        if verdict.status == 303:
            self._send(
                Answer(303, HTML, b""),
                [("Location", verdict.location), ("Set-Cookie", verdict.cookie)],
            )
            return
        if verdict.status:
            extra = [("Allow", "GET, HEAD")] if verdict.status == 405 else []
            title = "Forbidden" if verdict.status == 403 else "Not allowed"
            body = html_answer(
                title, el("h1", title), el("p", verdict.reason), status=verdict.status
            )
            self._send(body, extra)
            return
        parts = urlsplit(self.path)
        query = dict(reversed(parse_qsl(parts.query, keep_blank_values=True)))
        try:
            answer = self.server.answer(parts.path, query)
        except (LcgError, OSError) as exc:
            answer = _failure(exc)
        except Exception:  # noqa: BLE001 - a fault of a view: said on stderr, not to the page
            traceback.print_exc(file=sys.stderr)
            answer = html_answer("Error", el("h1", "Error"), el("p", "the page failed"), status=500)
        self._send(answer, [])

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """A request the stdlib could not read (a bad request line, a header too long): the
        refusal carries the security headers as every other answer."""
        self.close_connection = True
        title = message or self.responses.get(code, ("Error",))[0]
        page = html_answer(title, el("h1", title), status=code)
        self._send(page, [("Connection", "close")])

    def _send(self, answer: Answer, extra: list[tuple[str, str]]) -> None:
        self.send_response(answer.status)
        for name, value in (*SECURITY_HEADERS, *extra):
            self.send_header(name, value)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer.body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Requests are not logged (the one line ``lcg ui`` prints is its URL)."""

    def log_error(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Malformed requests are said on stderr."""
        print(f"lcg ui: {format % args}", file=sys.stderr)
