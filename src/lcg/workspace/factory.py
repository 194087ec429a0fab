"""Build the embedder and the extractor the settings choose (the workspace is the one place
that turns a ``Config`` into them).

The extractor's precedence: a replay cassette (``LCG_REPLAY_LLM``) > an explicit extractor
endpoint (the ``--extractor-http`` / ``--extractor-uds`` flags, or ``LCG_EXTRACTION_UDS``) >
Anthropic (``ANTHROPIC_API_KEY``) > ``LCG_EXTRACTION_URL`` > none (lite mode: episodes are
stored and searchable, extraction stays pending). ``LCG_RECORD_LLM`` wraps whichever was chosen.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lcg.config import Config
from lcg.errors import ConfigError
from lcg.extract.cassette import RecordingExtractor, ReplayExtractor, failures_path
from lcg.extract.cost import CostTable, load_cost_table
from lcg.extract.embedders import Embedder, make_embedder
from lcg.extract.extractor import Extractor
from lcg.extract.openai_extractor import OpenAICompatExtractor

__all__ = ["embedder_from_config", "make_extractor"]

_log = logging.getLogger(__name__)


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
        from lcg.extract.anthropic_extractor import AnthropicExtractor

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
