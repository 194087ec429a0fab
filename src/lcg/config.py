"""Every setting of lcg, read from the environment (and CLI flags) in one place.

Nothing else in lcg reads ``os.environ``. ``Config.from_env()`` builds the typed settings;
commands override fields from their flags with ``msgspec.structs.replace``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

import msgspec

from lcg.errors import ConfigError
from lcg.events.layout import (
    CACHE_DIR,
    DB_DIR,
    LCG_DIR,
    SOCKET_FILE,
    TEXT_DIR,
    VECTORS_DIR,
    WAL_DIR,
)

__all__ = ["Config", "EmbedderKind", "FsyncPolicy", "require_workspace"]

FsyncPolicy = Literal["always", "batch", "off"]
EmbedderKind = Literal["local", "hash", "http", "uds"]


#: The values ``LCG_WAL_FSYNC`` and ``LCG_EMBEDDER`` take.
_FSYNC: Final = ("always", "batch", "off")
_EMBEDDERS: Final = ("local", "hash", "http", "uds")


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    """``value`` of the setting ``name`` if it is one of ``allowed`` (else ``ConfigError``)."""
    if value not in allowed:
        listed = f"{', '.join(allowed[:-1])} or {allowed[-1]}"
        raise ConfigError(f"{name}={value!r}: use {listed}")
    return value


def _path(raw: str | None, workspace: Path, default: Path) -> Path:
    """A path setting: ``default`` when unset; a relative one is inside ``workspace``."""
    if not raw:
        return default
    p = Path(raw)
    return p if p.is_absolute() else workspace / p


def _int(env: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{name}={value} is out of range ({lo}..{hi})")
    return value


_log = logging.getLogger(__name__)

#: The reference's deprecated ``GRAPHITI_*`` names, honoured (with its ``DEPRECATED: env var
#: <old> is deprecated; rename to <new>`` line) when the ``LCG_*`` name is unset (lcg-api.md
#: §9).
GRAPHITI_ALIASES: dict[str, str] = {
    "GRAPHITI_SOCKET_PATH": "LCG_SOCKET_PATH",
    "GRAPHITI_DB_PATH": "LCG_DB_PATH",
    "GRAPHITI_EMBEDDING_URL": "LCG_EMBEDDING_URL",
    "GRAPHITI_EMBEDDING_MODEL": "LCG_EMBEDDING_MODEL",
    "GRAPHITI_EMBEDDING_DIM": "LCG_EMBEDDING_DIM",
    "GRAPHITI_EXTRACTION_LLM": "LCG_EXTRACTION_LLM",
    "GRAPHITI_WAL_DIR": "LCG_WAL_DIR",
}
#: Deprecated names of settings lcg does not have (the reference's dedup adapter).
GRAPHITI_UNUSED: tuple[str, ...] = ("GRAPHITI_DEDUP_LLM", "GRAPHITI_DEDUP_ADAPTER_URL")


def _with_aliases(env: Mapping[str, str]) -> Mapping[str, str]:
    """``env`` with each set ``GRAPHITI_*`` alias copied to its unset ``LCG_*`` name; each
    alias so used logs the reference's deprecation line (a set ``LCG_*`` name wins, unlogged)."""
    moved = {
        new: env[old] for old, new in GRAPHITI_ALIASES.items() if env.get(old) and not env.get(new)
    }
    for old, new in GRAPHITI_ALIASES.items():
        if new in moved:
            _log.warning("DEPRECATED: env var %s is deprecated; rename to %s", old, new)
    for old in GRAPHITI_UNUSED:
        if env.get(old):
            _log.warning(
                "DEPRECATED: env var %s is deprecated; rename to %s (lcg has no dedup adapter: "
                "ignored)",
                old,
                old.replace("GRAPHITI_", "LCG_", 1),
            )
    return {**env, **moved} if moved else env


def _int_or_default(env: Mapping[str, str], name: str, default: int, floor: int = 1) -> int:
    """An integer ≥ ``floor``, or ``default`` with a warning when unset, invalid or under it
    (the reference's rule for ``LCG_CHUNK_TEXT_ADVISORY_MAX_CHARS`` and
    ``LCG_EXTRACTION_MAX_TOKENS_CEILING``: such a setting never stops a start)."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = floor - 1
    if value < floor:
        want = "a positive integer" if floor == 1 else f"an integer of at least {floor}"
        _log.warning("%s=%r is not %s; using the default %d", name, raw, want, default)
        return default
    return value


def _float(env: Mapping[str, str], name: str, default: float, lo: float, hi: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    return min(hi, max(lo, value))


class Config(msgspec.Struct, kw_only=True, frozen=True):
    """The settings of one lcg process."""

    workspace: Path
    wal_dir: Path
    db_dir: Path
    vectors_dir: Path
    text_dir: Path
    cache_dir: Path
    socket_path: Path
    wal_fsync: FsyncPolicy = "always"
    wal_max_events_per_file: int = 10_000
    wal_max_bytes_per_file: int = 5 * 1024 * 1024
    replay_batch_size: int = 64
    replay_failure_samples: int = 10
    #: The least fraction of a replay's events that must apply before it warns (ADR 0215).
    replay_fidelity_threshold: float = 0.90
    embedder: EmbedderKind = "local"
    embedder_url: str | None = None
    embedder_uds: str | None = None
    #: ``None``: the embedder kind's default (the embedded model, or the reference's
    #: ``bge-base-en-v1.5`` asked of an http/uds server).
    embedding_model: str | None = None
    embedding_dim: int | None = None
    shutdown_timeout_ms: int = 5000
    attached_call_timeout_ms: int = 30_000
    #: How long a command waits for a process that holds the workspace to answer on its
    #: socket (a holder starting, catching up) before saying what holds it (ADR 0199).
    holder_wait_ms: int = 60_000
    chunk_text_advisory_max_chars: int = 8000
    extraction_llm: str = "claude-haiku-4-5-20251001"
    extraction_url: str | None = None
    extraction_uds: str | None = None
    extraction_model: str = "local"
    extraction_max_tokens_ceiling: int = 32768
    extraction_concurrency: int = 8
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    record_llm: str | None = None
    replay_llm: str | None = None
    cost_table_path: str | None = None
    workspace_root: Path | None = None
    #: ``LCG_EXPORT_ROOT``: where, besides the workspace, ``knowledge_dump_wal`` may write an
    #: absolute ``target_dir`` (unset: nowhere else; ADR 0083).
    export_root: Path | None = None
    #: The service's telemetry (``lcg serve``, ``lcg mcp``: JSON lines in its log on stderr);
    #: ``LCG_TELEMETRY=off`` silences it.
    telemetry: bool = True
    #: ``LCG_TELEMETRY=on`` asked for telemetry explicitly: the service then writes its
    #: per-request ``ipc_call`` lines even to a terminal (unset, a foreground ``lcg serve``
    #: on a terminal keeps them out of the person's way; a log file gets them all).
    telemetry_explicit: bool = False
    #: Telemetry of the one-shot commands (``status``, ``replay``, ...), whose stderr a person
    #: reads: only when ``LCG_TELEMETRY`` asks for it (``on``).
    cli_telemetry: bool = False
    #: Service limits (ADR 0071): request line bytes, open connections, requests per batch.
    rpc_max_request_bytes: int = 8 * 1024 * 1024
    rpc_max_connections: int = 256
    rpc_max_batch: int = 1000
    #: A connection waiting this long for its client is closed; a request line must end this
    #: long after its first byte (0: no deadline; ADR 0153).
    rpc_idle_timeout_ms: int = 60_000
    rpc_read_timeout_ms: int = 30_000
    #: A ``knowledge_query_cypher`` query is stopped after this long (ADR 0070).
    cypher_timeout_ms: int = 30_000
    #: ... and refused when it would return more rows than this.
    cypher_max_rows: int = 100_000
    #: ... or more bytes of values than this, counted in the worker as it builds the rows
    #: (ADR 0195): a result that passes it never reaches the service.
    cypher_max_bytes: int = 32 * 1024 * 1024
    #: ... and may take this much memory in the Cypher worker process (ADR 0152).
    cypher_memory_mb: int = 2048
    #: glibc malloc arenas the service may use (0 = glibc's default, 8 per core). Each worker
    #: thread otherwise keeps its own arena, and ``knowledge_verify`` grew RSS per thread
    #: until it had one (ADR 0085).
    malloc_arena_max: int = 2

    @property
    def ontology_root(self) -> Path:
        """Where ``.lcg/ontology.yaml`` is read: ``LIMINIS_WORKSPACE_ROOT`` when set, else the
        workspace the service runs in (the reference's ``{workspace}/.lcg/ontology.yaml``)."""
        return self.workspace_root if self.workspace_root is not None else self.workspace

    @classmethod
    def from_env(
        cls, workspace: Path | None = None, env: Mapping[str, str] | None = None
    ) -> Config:
        """Build the settings from ``env`` (default ``os.environ``) for ``workspace`` (CWD)."""
        e = _with_aliases(os.environ if env is None else env)
        ws = (workspace or Path.cwd()).resolve()
        lcg_dir = ws / LCG_DIR

        def path(name: str, default: Path) -> Path:
            return _path(e.get(name), ws, default)

        fsync = _choice("LCG_WAL_FSYNC", e.get("LCG_WAL_FSYNC", "always"), _FSYNC)
        url = e.get("LCG_EMBEDDING_URL") or None
        uds = e.get("LCG_EMBEDDER_UDS") or None
        # Unset, the embedder is the one whose address is given, else the local model.
        implied = "uds" if uds else "http" if url else "local"
        embedder = _choice("LCG_EMBEDDER", e.get("LCG_EMBEDDER") or implied, _EMBEDDERS)
        if e.get("LCG_RECORD_LLM") and e.get("LCG_REPLAY_LLM"):
            raise ConfigError("LCG_RECORD_LLM and LCG_REPLAY_LLM are exclusive; set only one")
        dim_raw = e.get("LCG_EMBEDDING_DIM")
        root = e.get("LIMINIS_WORKSPACE_ROOT")
        return cls(
            workspace=ws,
            wal_dir=path("LCG_WAL_DIR", lcg_dir / WAL_DIR),
            db_dir=path("LCG_DB_PATH", lcg_dir / DB_DIR),
            vectors_dir=lcg_dir / VECTORS_DIR,
            text_dir=lcg_dir / TEXT_DIR,
            cache_dir=lcg_dir / CACHE_DIR,
            socket_path=path("LCG_SOCKET_PATH", lcg_dir / SOCKET_FILE),
            wal_fsync=fsync,  # type: ignore[arg-type]
            wal_max_events_per_file=_int(e, "LCG_WAL_MAX_EVENTS_PER_FILE", 10_000, 1, 10**9),
            wal_max_bytes_per_file=_int(e, "LCG_WAL_MAX_BYTES_PER_FILE", 5 * 1024 * 1024, 0, 2**40),
            replay_batch_size=_int(e, "LCG_REPLAY_BATCH_SIZE", 64, 1, 4096),
            replay_failure_samples=_int(e, "LCG_REPLAY_FAILURE_SAMPLES", 10, 0, 1000),
            replay_fidelity_threshold=_float(e, "LCG_REPLAY_FIDELITY_THRESHOLD", 0.90, 0.0, 1.0),
            embedder=embedder,  # type: ignore[arg-type]
            embedder_url=url,
            embedder_uds=uds,
            embedding_model=e.get("LCG_EMBEDDING_MODEL") or None,
            embedding_dim=int(dim_raw) if dim_raw and dim_raw.isdigit() else None,
            shutdown_timeout_ms=_int(e, "LCG_SHUTDOWN_TIMEOUT_MS", 5000, 0, 10**7),
            attached_call_timeout_ms=_int(e, "LCG_ATTACHED_CALL_TIMEOUT_MS", 30_000, 1, 10**8),
            holder_wait_ms=_int(e, "LCG_HOLDER_WAIT_MS", 60_000, 0, 10**8),
            chunk_text_advisory_max_chars=_int_or_default(
                e, "LCG_CHUNK_TEXT_ADVISORY_MAX_CHARS", 8000
            ),
            extraction_llm=e.get("LCG_EXTRACTION_LLM", "claude-haiku-4-5-20251001"),
            extraction_url=e.get("LCG_EXTRACTION_URL") or None,
            extraction_uds=e.get("LCG_EXTRACTION_UDS") or None,
            extraction_model=e.get("LCG_EXTRACTION_MODEL", "local"),
            extraction_max_tokens_ceiling=_int_or_default(
                e, "LCG_EXTRACTION_MAX_TOKENS_CEILING", 32768, floor=4096
            ),
            extraction_concurrency=_int(e, "LCG_EXTRACTION_CONCURRENCY", 8, 1, 256),
            anthropic_api_key=e.get("ANTHROPIC_API_KEY") or None,
            anthropic_base_url=e.get("ANTHROPIC_BASE_URL") or None,
            record_llm=e.get("LCG_RECORD_LLM") or None,
            replay_llm=e.get("LCG_REPLAY_LLM") or None,
            cost_table_path=e.get("LIMINIS_LLM_COST_TABLE_PATH") or None,
            workspace_root=Path(root) if root else None,
            export_root=(ws / e["LCG_EXPORT_ROOT"]).resolve() if e.get("LCG_EXPORT_ROOT") else None,
            telemetry=e.get("LCG_TELEMETRY", "on") != "off",
            cli_telemetry=e.get("LCG_TELEMETRY", "off") != "off",
            telemetry_explicit=e.get("LCG_TELEMETRY") == "on",
            rpc_max_request_bytes=_int(
                e, "LCG_RPC_MAX_REQUEST_BYTES", 8 * 1024 * 1024, 1024, 1024 * 1024 * 1024
            ),
            rpc_max_connections=_int(e, "LCG_RPC_MAX_CONNECTIONS", 256, 1, 65536),
            rpc_max_batch=_int(e, "LCG_RPC_MAX_BATCH", 1000, 1, 1_000_000),
            rpc_idle_timeout_ms=_int(e, "LCG_RPC_IDLE_TIMEOUT_MS", 60_000, 0, 24 * 3600 * 1000),
            rpc_read_timeout_ms=_int(e, "LCG_RPC_READ_TIMEOUT_MS", 30_000, 0, 24 * 3600 * 1000),
            cypher_timeout_ms=_int(e, "LCG_CYPHER_TIMEOUT_MS", 30_000, 1, 24 * 3600 * 1000),
            cypher_max_rows=_int(e, "LCG_CYPHER_MAX_ROWS", 100_000, 1, 100_000_000),
            cypher_max_bytes=_int(
                e, "LCG_CYPHER_MAX_BYTES", 32 * 1024 * 1024, 1024, 4 * 1024 * 1024 * 1024
            ),
            cypher_memory_mb=_int(e, "LCG_CYPHER_MEMORY_MB", 2048, 64, 1024 * 1024),
            malloc_arena_max=_int(e, "LCG_MALLOC_ARENA_MAX", 2, 0, 1024),
        )


def require_workspace(config: Config) -> None:
    """``ConfigError`` unless ``config.workspace`` holds an lcg workspace (its ``.lcg`` or
    its stream directory); commands that only look use it so that they never create one."""
    ws = config.workspace
    if (ws / LCG_DIR).is_dir() or config.wal_dir.is_dir():
        return
    where = "" if ws.is_dir() else " (the directory does not exist)"
    raise ConfigError(f"no lcg workspace at {ws}{where} (`lcg serve` there creates one)")
