"""Build the projections, the embedder and the extractor the settings choose (the workspace
is the one place that turns a ``Config`` into them).

The projections are the specs of ``RECORD`` and ``PROJECTIONS``, opened in that order (the
order every batch is applied in) by ``open_projections``, for the workspace and for verify's
scratch replay alike. A new projection is one more spec here (ADR 0182).

The extractor's precedence: a replay cassette (``LCG_REPLAY_LLM``) > an explicit extractor
endpoint (the ``--extractor-http`` / ``--extractor-uds`` flags, or ``LCG_EXTRACTION_UDS``) >
Anthropic (``ANTHROPIC_API_KEY``) > ``LCG_EXTRACTION_URL`` > none (lite mode: episodes are
stored and searchable, extraction stays pending). ``LCG_RECORD_LLM`` wraps whichever was chosen.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from lcg.config import Config
from lcg.errors import ConfigError
from lcg.events import DIR_MODE
from lcg.extract import (
    CostTable,
    Embedder,
    Extractor,
    OpenAICompatExtractor,
    RecordingExtractor,
    ReplayExtractor,
    failures_path,
    load_cost_table,
    make_embedder,
)
from lcg.projections import (
    DB_FILE,
    GraphProjection,
    Projection,
    Projections,
    RecordProjection,
    StaleGraphError,
    TextProjection,
    VectorProjection,
)

__all__ = [
    "PROJECTIONS",
    "RECORD",
    "OpenContext",
    "ProjectionSpec",
    "embedder_from_config",
    "make_extractor",
    "open_projections",
    "projection_dirs",
]

_log = logging.getLogger(__name__)

P = TypeVar("P", bound=Projection, covariant=True)


@dataclass(frozen=True, slots=True)
class OpenContext:
    """What a projection is opened with, besides its directory."""

    #: The embedder's vector size and model (the vector projection keeps only its own).
    dim: int
    model_id: str
    #: Opened to look only: nothing created or deleted in the workspace.
    read_only: bool
    #: A directory outside the workspace, by name, for what a read-only open must not create.
    scratch: Callable[[str], Path]


@dataclass(frozen=True, slots=True)
class ProjectionSpec(Generic[P]):
    """One projection a workspace holds: its name, where it lives, how it is opened."""

    name: str
    directory: Callable[[Config], Path]
    open: Callable[[Path, OpenContext], P]


def _open_graph(db_dir: Path, ctx: OpenContext) -> GraphProjection:
    if not ctx.read_only:
        db_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        return GraphProjection(db_dir)
    if (db_dir / DB_FILE).exists():
        try:
            return GraphProjection(db_dir, read_only=True)
        except StaleGraphError:
            pass  # another schema: as good as none until `lcg serve` rebuilds it
    # No graph to look at: an empty one outside the workspace, none created in it.
    return GraphProjection(ctx.scratch("db"))


def _open_text(directory: Path, ctx: OpenContext) -> TextProjection:
    return TextProjection(directory, read_only=ctx.read_only)


def _open_vectors(directory: Path, ctx: OpenContext) -> VectorProjection:
    return VectorProjection(directory, ctx.dim, ctx.model_id, read_only=ctx.read_only)


#: The projection of record (its position and rows speak for a group; it bulk-loads).
RECORD: ProjectionSpec[RecordProjection] = ProjectionSpec("graph", lambda c: c.db_dir, _open_graph)

#: The other projections, in the order each batch is applied to them after the record.
PROJECTIONS: tuple[ProjectionSpec[Projection], ...] = (
    ProjectionSpec("text", lambda c: c.text_dir, _open_text),
    ProjectionSpec("vectors", lambda c: c.vectors_dir, _open_vectors),
)


def projection_dirs(config: Config) -> list[Path]:
    """The directory of every projection of ``config``'s workspace, in order."""
    return [spec.directory(config) for spec in (RECORD, *PROJECTIONS)]


def open_projections(
    where: Callable[[ProjectionSpec[Projection]], Path], ctx: OpenContext
) -> Projections:
    """Open every projection, each in the directory ``where`` names for its spec.

    If one fails to open, those already open are closed and the error is raised.
    """
    opened: list[Projection] = []
    try:
        record = RECORD.open(where(RECORD), ctx)
        opened.append(record)
        for spec in PROJECTIONS:
            opened.append(spec.open(where(spec), ctx))
        return Projections(record, *opened[1:])
    except BaseException:
        for proj in reversed(opened):
            try:
                proj.close()
            except Exception:  # noqa: BLE001, S110 - the open's own error is the one to raise
                pass
        raise


def _path(config: Config, raw: str) -> Path:
    p = Path(raw)
    return p if p.is_absolute() else config.workspace / p


def embedder_from_config(config: Config) -> Embedder:
    """The embedder ``config`` selects (``LCG_EMBEDDER`` and the embedding settings)."""
    return make_embedder(
        config.embedder,
        url=config.embedder_url,
        uds=config.embedder_uds,
        model=config.embedding_model,
        dim=config.embedding_dim,
    )


def make_extractor(
    config: Config,
    *,
    explicit_url: str | None = None,
    explicit_uds: str | None = None,
    cost_table: CostTable | None = None,
) -> Extractor | None:
    """The configured extractor, or ``None`` for lite mode (no provider configured).

    ``explicit_url`` / ``explicit_uds`` are the CLI's extractor flags (exclusive); they beat
    ``ANTHROPIC_API_KEY``, while ``LCG_EXTRACTION_URL`` only applies without a key.
    """
    if config.replay_llm:
        return ReplayExtractor(_path(config, config.replay_llm))
    if explicit_url and explicit_uds:
        raise ConfigError("--extractor-http and --extractor-uds are exclusive; give only one")
    costs = cost_table if cost_table is not None else load_cost_table(config.cost_table_path)
    ceiling = config.extraction_max_tokens_ceiling
    inner: Extractor | None = None
    uds = explicit_uds or (None if explicit_url else config.extraction_uds)
    if explicit_url:
        inner = OpenAICompatExtractor(
            url=explicit_url,
            model=config.extraction_model,
            max_tokens_ceiling=ceiling,
            cost_table=costs,
        )
    elif uds:
        inner = OpenAICompatExtractor(
            uds=uds, model=config.extraction_model, max_tokens_ceiling=ceiling, cost_table=costs
        )
    elif config.anthropic_api_key:
        # Imported here: the SDK costs seconds to import, and lite mode never needs it.
        from lcg.extract import AnthropicExtractor

        inner = AnthropicExtractor.from_spec(
            config.extraction_llm,
            api_key=config.anthropic_api_key,
            base_url=config.anthropic_base_url,
            max_tokens_ceiling=ceiling,
            cost_table=costs,
        )
    elif config.extraction_url:
        inner = OpenAICompatExtractor(
            url=config.extraction_url,
            model=config.extraction_model,
            max_tokens_ceiling=ceiling,
            cost_table=costs,
        )
    if inner is None:
        if config.record_llm:
            # Degrade, not refuse: the service starts and serves reads; the sidecar exists
            # from the start as in record mode, and stays empty (nothing is called).
            path = _path(config, config.record_llm)
            failures_path(path).parent.mkdir(parents=True, exist_ok=True)
            failures_path(path).touch(exist_ok=True)
            _log.warning(
                "LCG_RECORD_LLM is set but no extractor is configured: nothing is recorded "
                "(set ANTHROPIC_API_KEY or LCG_EXTRACTION_URL, or pass --extractor-http)"
            )
        return None
    if config.record_llm:
        return RecordingExtractor(inner, _path(config, config.record_llm))
    return inner
