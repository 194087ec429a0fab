"""Estimated LLM cost from a per-model price table (US dollars per million tokens).

The built-in table is ``assets/llm_pricing.json``; ``LIMINIS_LLM_COST_TABLE_PATH`` (the
``cost_table_path`` setting) replaces it. Shape: ``{model: {input_per_mtok, output_per_mtok,
cache_read_per_mtok, cache_creation_per_mtok}}``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import msgspec

from lcg.errors import ConfigError

__all__ = ["CostTable", "ModelPrice", "load_cost_table"]


class ModelPrice(msgspec.Struct, frozen=True, kw_only=True):
    """Per-million-token prices of one model."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float = 0.0
    cache_creation_per_mtok: float = 0.0


_decode = msgspec.json.Decoder(dict[str, ModelPrice]).decode


class CostTable:
    """Looks up a model's price (exact name, else the longest listed prefix) and prices a call."""

    def __init__(self, prices: dict[str, ModelPrice]) -> None:
        self._prices = dict(prices)
        self._prefixes = sorted(self._prices, key=len, reverse=True)

    def price(self, model: str) -> ModelPrice | None:
        """The price of ``model``; dated names match their undated entry (a prefix)."""
        hit = self._prices.get(model)
        if hit is not None:
            return hit
        for key in self._prefixes:
            if model.startswith(key):
                return self._prices[key]
        return None

    def cost(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int = 0,
        cache_creation_tokens: int = 0,
    ) -> float | None:
        """Estimated US dollars for one call; ``None`` when the model is not in the table."""
        p = self.price(model)
        if p is None:
            return None
        return (
            input_tokens * p.input_per_mtok
            + output_tokens * p.output_per_mtok
            + cache_read_tokens * p.cache_read_per_mtok
            + cache_creation_tokens * p.cache_creation_per_mtok
        ) / 1_000_000


def load_cost_table(path: str | Path | None = None) -> CostTable:
    """The table at ``path`` (``ConfigError`` if unreadable), else the built-in one."""
    if path is None:
        data = resources.files("lcg.extract").joinpath("assets/llm_pricing.json").read_bytes()
        where = "built-in llm_pricing.json"
    else:
        where = str(path)
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigError(f"LIMINIS_LLM_COST_TABLE_PATH={where}: cannot read: {exc}") from exc
    try:
        return CostTable(_decode(data))
    except msgspec.DecodeError as exc:
        raise ConfigError(
            f"cost table {where} is invalid ({exc}); expected "
            "{model: {input_per_mtok, output_per_mtok, cache_read_per_mtok, "
            "cache_creation_per_mtok}}"
        ) from exc
