"""Backend specs, the noisy double's exact error plan, and pricing."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.config import Config
from lcg.errors import ConfigError
from lcg.eval.backends import estimate_price, noise_plan, parse_backend
from lcg.eval.corpus import generate


@pytest.mark.parametrize(
    ("spec", "kind", "paid"),
    [
        ("scripted", "scripted", False),
        ("scripted-noisy:0.25", "scripted-noisy", False),
        ("anthropic", "anthropic", True),
        ("anthropic:claude-haiku-4-5", "anthropic", True),
        ("oai-http:http://127.0.0.1:1/v1/chat/completions", "oai-http", True),
        ("oai-uds:/tmp/x.sock", "oai-uds", True),
        ("cassette:/tmp/c.jsonl", "cassette", False),
    ],
)
def test_parse_backend(spec: str, kind: str, paid: bool) -> None:
    b = parse_backend(spec)
    assert b.kind == kind and b.paid is paid


@pytest.mark.parametrize("spec", ["nope", "scripted-noisy:2", "scripted-noisy:x", "cassette:"])
def test_bad_backend_is_refused_by_name(spec: str) -> None:
    with pytest.raises(ConfigError, match="backend"):
        parse_backend(spec)


def test_noise_plan_is_exact_and_seeded() -> None:
    c = generate(7, "full")
    plan = noise_plan(c, 0.2)
    eligible = [
        f
        for f in c.gold.facts
        if not f.ended_at and not any(g.superseded_by == f.key for g in c.gold.facts)
    ]
    assert len(plan.dropped_facts) == round(0.2 * len(eligible))
    assert len(plan.served_decoys) == round(0.2 * len(c.gold.decoys))
    mentions = sum(len(d.mentions) for d in c.gold.documents)
    assert len(plan.mistyped) == round(0.2 * mentions)
    assert plan == noise_plan(c, 0.2)
    assert noise_plan(c, 0.0).dropped_facts == []


def test_price_of_a_paid_backend_uses_the_cost_table(tmp_path: Path) -> None:
    config = Config.from_env(tmp_path, env={"LCG_EMBEDDER": "hash"})
    corpora = [generate(7, "small")]
    paid = estimate_price(parse_backend("anthropic:claude-haiku-4-5-20251001"), corpora, config)
    assert paid.documents == 12 and paid.calls == 24 and paid.input_tokens > 0
    assert paid.usd is not None and paid.usd > 0
    free = estimate_price(parse_backend("scripted"), corpora, config)
    assert free.usd == 0.0
