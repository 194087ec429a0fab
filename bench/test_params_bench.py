"""The cost of checking a call's parameters (ADR 0060), as ratios measured in the same run.

* ``parse``: ``MethodSpec.parse`` of a typical ``knowledge_search_passages`` call (protocol
  field dropped, unknown-key and required checks, integral-float and finite checks, typed
  convert, clamps) against the bare ``msgspec.convert`` of the same mapping into the same
  Struct (the floor of any typed check) and against the old hand-written parsing (a dict
  copy plus ``isinstance`` checks, what handlers did before);
* ``uncached``: the same parse with the per-class field cache cleared on every call, which
  shows what the cache saves.

Run by ``make bench``; every number is the median of ``REPEATS`` interleaved runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec

from lcg.rpc import schema
from lcg.rpc.methods_read import SearchPassagesParams
from lcg.rpc.registry import MethodSpec

N = 20_000
REPEATS = 5
CALL: dict[str, Any] = {
    "query": "Apollo 11 landing",
    "num_results": 20,
    "min_score": 0.3,
    "group_ids": ["liminis", "notes"],
    "_progress_token": None,
}


async def _handler(ctx: Any, p: Any) -> dict[str, Any]:
    return {}


SPEC = MethodSpec("knowledge_search_passages", "read", _handler, params=SearchPassagesParams)


def _old(p: dict[str, Any]) -> tuple[Any, ...]:
    args = dict(p)
    args.pop("_progress_token", None)
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ValueError("query")
    n = args.get("num_results", 10)
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError("num_results")
    raw = args.get("min_score", 0.5)
    score = float(raw) if isinstance(raw, int | float) else 0.5
    groups = args.get("group_ids")
    if isinstance(groups, list):
        groups = [g for g in groups if isinstance(g, str)]
    return query, max(1, min(100, n)), min(1.0, max(0.0, score)), groups


def _bare(p: dict[str, Any]) -> SearchPassagesParams:
    return msgspec.convert(
        {k: v for k, v in p.items() if v is not None}, SearchPassagesParams, strict=True
    )


def _uncached(p: dict[str, Any]) -> Any:
    for cached in (schema._fields, schema._by_name, schema._int_fields):
        cached.cache_clear()
    return SPEC.parse(p)


def _time(fn: Callable[[dict[str, Any]], Any], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn(CALL)
    return (time.perf_counter() - start) / n


def test_parameter_check_cost() -> None:
    runs: dict[str, list[float]] = {"parse": [], "bare": [], "old": [], "uncached": []}
    for _ in range(REPEATS):
        runs["parse"].append(_time(SPEC.parse, N))
        runs["bare"].append(_time(_bare, N))
        runs["old"].append(_time(_old, N))
        runs["uncached"].append(_time(_uncached, N // 100))
    med = {k: statistics.median(v) for k, v in runs.items()}
    print()
    print(f"parse     {med['parse'] * 1e6:8.2f} us/call")
    print(f"bare      {med['bare'] * 1e6:8.2f} us/call  (parse / bare = "
          f"{med['parse'] / med['bare']:.1f}x)")  # fmt: skip
    print(f"old       {med['old'] * 1e6:8.2f} us/call  (parse / old = "
          f"{med['parse'] / med['old']:.1f}x)")  # fmt: skip
    print(f"uncached  {med['uncached'] * 1e6:8.2f} us/call  (uncached / parse = "
          f"{med['uncached'] / med['parse']:.0f}x)")  # fmt: skip
    assert SPEC.parse(CALL).num_results == 20
