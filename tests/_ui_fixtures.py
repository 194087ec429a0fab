"""Helpers for the browser tests of ``lcg ui`` (issue 32, ADR 0225): a small hand-written
Markdown vault, a real ``lcg serve`` holding it once ``lcg ingest`` synced it, a real
``lcg ui --port 0`` whose printed URL is read from its stdout, and the system Chromium driven
by Playwright (never a downloaded browser).

The embedder is the hash test double (``LCG_EMBEDDER=hash``) as in the other e2e tests; no LLM:
the graph is what the files declare (documents, links, tags).
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import _service_fixtures as sf
from lcg.rpc import Client

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Request

#: The group ``lcg ingest`` puts the vault in (its default).
GROUP = "liminis"
#: The vault's folder name: the tree's label, and the first part of every file's path.
LABEL = "moonbase"
#: A host name the test browser resolves to 127.0.0.1 (``--host-resolver-rules``): a page
#: opened through it is what a DNS-rebinding attack looks like to the server.
REBIND_HOST = "rebind.test"
#: How long ``lcg ui`` may take to print its URL before the run counts as a hang.
URL_WAIT_S = 120.0
#: The line ``lcg ui`` prints (the page's contract).
URL_LINE = re.compile(r"^lcg ui: (http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_\-]+))$")

#: The vault: file (relative to the folder) -> text. Front matter, wiki links, tags and
#: headings, so the declared graph has documents, LINKS_TO and TAGGED edges with no LLM.
VAULT: dict[str, str] = {
    "Moon Base.md": """---
title: Moon Base
tags: [lunar, habitat]
status: active
---
# Moon Base

The base sits on the rim of Shackleton crater. Its air comes from the [[Oxygen Plant]],
and its vehicles live in the [[Rover Bay]].

## Crew

Four people rotate every ninety days.
""",
    "Oxygen Plant.md": """---
tags: [lunar]
---
# Oxygen Plant

The plant heats [[Regolith]] and splits the oxygen out by molten salt electrolysis.
It feeds the [[Moon Base]].

## Output

About forty kilograms of oxygen a day.
""",
    "Rover Bay.md": """# Rover Bay

A pressurised garage for two rovers that haul [[Regolith]] to the plant.
""",
    "Regolith.md": """# Regolith

Loose lunar dust and broken rock; sharp, clingy and rich in oxides.
""",
    "logs/First Week.md": """---
title: First Week
tags: [log]
---
# First Week

The crew moved into the [[Moon Base]] and started the [[Oxygen Plant]].
""",
}

#: Every Markdown file's path as the service names it (the tree's label, then the file).
VAULT_FILES = sorted(f"{LABEL}/{rel}" for rel in VAULT)


def write_vault(parent: Path) -> Path:
    """Write the vault under ``parent/LABEL``; its folder."""
    root = parent / LABEL
    for rel, text in VAULT.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def chromium() -> str:
    """The system Chromium's path; fails the test naming what to install when it is missing
    (no skip: the suite is not whole without the browser tests)."""
    path = shutil.which("chromium")
    if path is None:
        raise AssertionError(
            "the browser tests need the system Chromium, and `chromium` is not on PATH: "
            "run `sudo apt-get install -y --no-install-recommends chromium` (.ci/run does "
            "it when it may)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        raise AssertionError(
            "the browser tests need Playwright: run `make install` (it is in the dev extras)"
        ) from exc
    return path


@contextmanager
def browser() -> Iterator[Browser]:
    """One headless system Chromium (no sandbox: CI runs as root), closed afterwards. It
    resolves ``REBIND_HOST`` to 127.0.0.1 and uses no proxy."""
    from playwright.sync_api import sync_playwright

    path = chromium()
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=path,
            args=[
                "--no-sandbox",
                "--no-proxy-server",
                f"--host-resolver-rules=MAP {REBIND_HOST} 127.0.0.1",
            ],
        )
        try:
            yield b
        finally:
            b.close()


@dataclass
class UiRun:
    """A real ``lcg serve`` with the vault ingested, and a real ``lcg ui`` in front of it."""

    workspace: Path
    vault: Path
    serve: subprocess.Popen[bytes]
    ui: subprocess.Popen[bytes]
    url: str
    port: int
    token: str
    client: Client

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def at(self, path: str) -> str:
        """The absolute URL of ``path`` (which starts with ``/``)."""
        return self.origin + path

    def entity(self, name: str) -> dict[str, Any]:
        """The declared entity named ``name``, as the service answers it."""
        found = self.client.call("knowledge_find_entities", {"query": name, "num_results": 20})
        for node in found["nodes"]:
            if node["name"] == name:
                assert isinstance(node, dict)
                return node
        raise AssertionError(f"no entity named {name!r}: {[n['name'] for n in found['nodes']]}")


def _read_url_line(proc: subprocess.Popen[bytes], log: Path) -> str:
    """The first stdout line of ``lcg ui``; fails when it exits first or after URL_WAIT_S."""
    assert proc.stdout is not None
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(URL_WAIT_S)
    if not got or not got[0]:
        rc = proc.poll()
        raise AssertionError(
            f"lcg ui printed no URL ({'exited ' + str(rc) if rc is not None else 'still running'}"
            f" after {URL_WAIT_S:g} s); its stderr: {log.read_text(errors='replace')[-2000:]}"
        )
    return got[0].decode().rstrip("\n")


def read_url(proc: subprocess.Popen[bytes], log: Path) -> tuple[str, int, str]:
    """The URL ``lcg ui`` printed, its port and its token (the one line of the contract)."""
    line = _read_url_line(proc, log)
    match = URL_LINE.match(line)
    assert match, f"lcg ui printed {line!r}, not `lcg ui: http://127.0.0.1:<port>/?token=…`"
    return match.group(1), int(match.group(2)), match.group(3)


def spawn_ui(ws: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    """Start ``lcg -C WS ui --port 0 ARGS`` with stdout piped (its URL line) and stderr in
    ``WS/ui.log``; the process and the log."""
    log = ws / "ui.log"
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [str(sf.LCG), "-C", str(ws), "ui", "--port", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            env=sf.serve_env(),
            cwd=str(ws),
        )
    return proc, log


def stop_ui(proc: subprocess.Popen[bytes], how: int = signal.SIGINT) -> int:
    """Signal ``lcg ui`` to stop and wait for it (60 s, then kill); its exit status."""
    if proc.poll() is None:
        proc.send_signal(how)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            raise AssertionError(f"lcg ui did not stop on signal {how} in 60 s") from None
    if proc.stdout is not None:
        proc.stdout.close()
    return proc.returncode


def wait_vectors(client: Client) -> None:
    """Poll ``knowledge_status`` until no vector is still to come, so the page shows a settled
    workspace (no sleeps; a hang fails after ``sf.PATIENCE_S``)."""
    sf.eventually(
        lambda: client.call("knowledge_status", {}).get("vectors_pending") == 0,
        "the vectors of the ingested vault were never all made",
    )


@contextmanager
def ui_run(*, more: dict[str, tuple[str, dict[str, str]]] | None = None) -> Iterator[UiRun]:
    """A workspace with the vault ingested by ``lcg ingest`` into a real ``lcg serve`` (and
    each of ``more``: folder name -> (group, files) ingested into its group), and a real
    ``lcg ui --port 0`` in front of it; everything stopped and removed afterwards."""
    ws = sf.short_tmp("lcg-ui-")
    outside = sf.short_tmp("lcg-ui-vault-")
    trees = [(write_vault(outside), GROUP)]
    for label, (group, files) in (more or {}).items():
        for rel, text in files.items():
            (outside / label / rel).parent.mkdir(parents=True, exist_ok=True)
            (outside / label / rel).write_text(text)
        trees.append((outside / label, group))
    sock = ws / ".lcg" / "service.sock"
    serve = sf.spawn_serve(ws)
    ui: subprocess.Popen[bytes] | None = None
    try:
        sf.wait_healthy(sock, serve)
        for folder, group in trees:
            done = sf.run_lcg(ws, "ingest", str(folder), "--group", group, "--no-commits")
            assert done.returncode == 0, done.stderr
        with Client(sock, timeout=120) as client:
            wait_vectors(client)
            ui, log = spawn_ui(ws)
            url, port, token = read_url(ui, log)
            yield UiRun(ws, trees[0][0], serve, ui, url, port, token, client)
    finally:
        if ui is not None:
            stop_ui(ui)
        sf.stop_serve(serve, sock)
        shutil.rmtree(ws, ignore_errors=True)
        shutil.rmtree(outside, ignore_errors=True)


@dataclass
class Tab:
    """A page in a fresh browser context, with every request, console message and page error
    it saw recorded."""

    page: Page
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def foreign(self, origin: str) -> list[str]:
        """The requests whose origin is not ``origin`` (``data:`` URLs are fetched from
        nowhere and are allowed by the page's CSP for images)."""
        return [u for u in self.requests if not u.startswith("data:") and _origin(u) != origin]

    def assert_clean(self, origin: str) -> None:
        """No console error, no page error, no request outside ``origin``."""
        assert self.page_errors == [], self.page_errors
        assert self.console_errors == [], self.console_errors
        assert self.foreign(origin) == [], self.foreign(origin)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def open_tab(b: Browser, *, on_request: Callable[[Request], None] | None = None) -> Tab:
    """A page in a fresh context (no cookie), recording what it does."""
    context = b.new_context()
    # A loaded 2-core machine: a hang is what this catches, not a slow page.
    context.set_default_timeout(60_000)
    page = context.new_page()
    tab = Tab(page)

    def requested(req: Request) -> None:
        tab.requests.append(req.url)
        if on_request is not None:
            on_request(req)

    def said(msg: ConsoleMessage) -> None:
        if msg.type == "error":
            tab.console_errors.append(f"{msg.text} ({msg.location})")

    page.on("request", requested)
    page.on("console", said)
    page.on("pageerror", lambda exc: tab.page_errors.append(str(exc)))
    return tab


def close_tab(tab: Tab) -> None:
    """Close the tab's context."""
    tab.page.context.close()
