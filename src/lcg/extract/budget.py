"""Output-token budgets for extraction calls: proportional to the input, floored and capped."""

from __future__ import annotations

import math
from typing import Final

__all__ = [
    "EDGE_RATIO",
    "ENTITY_RATIO",
    "FLOOR_TOKENS",
    "retry_budget",
    "token_budget",
]

#: Output tokens allowed per input byte for the entities call.
ENTITY_RATIO: Final = 1.0
#: Output tokens allowed per input byte for the edges call (facts are longer than names).
EDGE_RATIO: Final = 1.5
#: No call gets fewer output tokens than this.
FLOOR_TOKENS: Final = 4096


def token_budget(body_bytes: int, ratio: float, ceiling: int) -> int:
    """``clamp(round(body_bytes × ratio), 4096, ceiling)``; halves round away from zero."""
    raw = math.floor(max(0, body_bytes) * ratio + 0.5)
    return max(FLOOR_TOKENS, min(raw, max(FLOOR_TOKENS, ceiling)))


def retry_budget(current: int, ceiling: int) -> int:
    """The budget of the one retry after a truncated answer: double, capped at ``ceiling``."""
    return max(current, min(current * 2, max(FLOOR_TOKENS, ceiling)))
