"""How admin commands reach a workspace: the running service's socket, or the files directly.

``lcg replay``, ``dump``, ``status`` and ``verify`` talk to the workspace's service when one
answers on its socket (the service holds the workspace; a second opener would be refused), and
open the workspace themselves when none does, holding it by the rule of ``cli/_holder.py``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import msgspec

from lcg import telemetry
from lcg.cli._terminal import safe
from lcg.client import Client
from lcg.config import Config, require_workspace
from lcg.errors import ConfigError, DegradedError

if TYPE_CHECKING:
    from lcg.projections import ReplayProgress
    from lcg.rpc import ServiceApp
    from lcg.workspace import Workspace

__all__ = [
    "ProgressBar",
    "attach_extractor_flags",
    "live_client",
    "open_direct",
    "show_replay",
    "wait_serving",
    "with_embedder_flags",
]


def with_embedder_flags(
    config: Config, *, http: str | None, uds: str | None, kind: str | None = None
) -> Config:
    """``config`` with the embedder chosen by ``--embedder-http/--embedder-uds/--embedder``."""
    if http and uds:
        raise ConfigError("--embedder-http and --embedder-uds are exclusive; pass one")
    if http:
        if "://" not in http:
            raise ConfigError(f"--embedder-http {http!r}: give a URL with a scheme")
        return msgspec.structs.replace(config, embedder="http", embedder_url=http)
    if uds:
        return msgspec.structs.replace(config, embedder="uds", embedder_uds=uds)
    if kind:
        return msgspec.structs.replace(config, embedder=kind)
    return config


def attach_extractor_flags(
    app: ServiceApp, config: Config, *, http: str | None, uds: str | None
) -> None:
    """Give ``app`` its extractor now, at start: the one ``--extractor-http/-uds`` names, else
    the configured one (or none); stderr gets the reference's ``extractor: provider=...``
    line. Built before the socket is bound, so a recording's sidecar exists from the start."""
    if http and uds:
        raise ConfigError("--extractor-http and --extractor-uds are exclusive; pass one")
    from lcg.ingest import ExtractionService
    from lcg.workspace import make_extractor

    extractor = make_extractor(config, explicit_url=http, explicit_uds=uds)
    app.extraction = ExtractionService.from_config(config, extractor)
    print(safe(extractor_line(extractor)), file=sys.stderr, flush=True)


def extractor_line(extractor: object | None) -> str:
    """``extractor: provider=P, transport=T, endpoint=E``, as the reference logs at start
    (lcg adds ``none`` and a replay cassette, and names a recording)."""
    from lcg.extract import RecordingExtractor, ReplayExtractor

    if extractor is None:
        return (
            "extractor: provider=none (extraction calls fail until ANTHROPIC_API_KEY or "
            "LCG_EXTRACTION_URL is set, or --extractor-http/--extractor-uds is passed; "
            "reads work)"
        )
    if isinstance(extractor, ReplayExtractor):
        return f"extractor: provider=cassette, transport=file, endpoint={extractor.path}"
    suffix = ""
    if isinstance(extractor, RecordingExtractor):
        suffix = f" (recording to {extractor.path})"
        extractor = extractor.inner
    provider = str(getattr(extractor, "provider", type(extractor).__name__))
    endpoint = str(getattr(extractor, "endpoint", "-"))
    if endpoint.startswith("unix:"):
        transport, endpoint = "uds", endpoint.removeprefix("unix:")
    else:
        transport = endpoint.split("://", 1)[0] if "://" in endpoint else "-"
    return f"extractor: provider={provider}, transport={transport}, endpoint={endpoint}{suffix}"


def live_client(config: Config) -> Client | None:
    """A client of the workspace's running service, or ``None`` if no service answers."""
    if not config.socket_path.exists():
        return None
    client = Client(config.socket_path, timeout=None)
    try:
        client.call("health_check", {})
    except Exception:  # noqa: BLE001 - any failure means "no live service here"
        client.close()
        return None
    return client


def wait_serving(client: Client, timeout: float, *, starting: bool = False) -> None:
    """Wait until the service has opened its workspace (``Client.wait_ready``); a degraded
    one is serving too. Its health may be degraded by what leaves most calls working (a full
    disk, an away embedder, a failing watcher, ADR 0193), and a call it cannot answer says
    why itself, so a command goes on and lets the call tell."""
    try:
        client.wait_ready(timeout=timeout, starting=starting)
    except DegradedError:
        pass


class ProgressBar:
    """A one-line progress bar on stderr, shown only on a terminal and unless silenced."""

    def __init__(self, label: str, *, silent: bool = False) -> None:
        self.label = label
        self.enabled = not silent and sys.stderr.isatty()
        self._last = ""

    def update(self, done: int, total: int | None, extra: str = "") -> None:
        """Redraw with ``done`` of ``total`` (``None`` = unknown)."""
        if not self.enabled:
            return
        if total:
            frac = min(1.0, done / total)
            bar = "#" * int(frac * 30)
            line = "\r" + safe(f"{self.label} [{bar:<30}] {done}/{total} {extra}")
        else:
            line = "\r" + safe(f"{self.label} {done} {extra}")
        if line != self._last:
            sys.stderr.write(line[:120])
            sys.stderr.flush()
            self._last = line

    def done(self) -> None:
        """Finish the line."""
        if self.enabled and self._last:
            sys.stderr.write("\n")
            sys.stderr.flush()


def show_replay(bar: ProgressBar, p: ReplayProgress, *, name_group: bool = False) -> None:
    """Draw one replay progress report: events applied of the stream, and the phase."""
    total = p.max_seq + 1 if p.max_seq is not None else None
    extra = "" if p.phase == "apply" else p.message
    if name_group:
        extra = f"{p.group_id} {extra}".rstrip()
    bar.update((p.last_seq or 0) + 1, total, extra)


def open_direct(config: Config, *, catch_up: bool = True, inspect: bool = False) -> Workspace:
    """Open the workspace's files in this process; catching up shows a progress bar.

    Opening applies whatever the streams hold past the projections (after a crash, an
    upgrade or a deleted ``.lcg/db``), which on a large workspace takes minutes. With
    ``inspect`` (status, verify) it only looks: an existing workspace, nothing applied or
    re-embedded, nothing saved.
    """
    from lcg.workspace import Workspace

    require_workspace(config)
    # A person reads this command's stderr: JSON lines only when LCG_TELEMETRY asks.
    telemetry.set_sink(None, enabled=config.cli_telemetry)
    bar = ProgressBar("catching up")
    try:
        return Workspace.open(
            config,
            catch_up=catch_up,
            progress=lambda p: show_replay(bar, p, name_group=True),
            inspect=inspect,
        )
    finally:
        bar.done()
