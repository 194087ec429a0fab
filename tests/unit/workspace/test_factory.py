"""Building from the settings: the extractor (precedence, record wrapping, lite mode) and the
embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.config import Config
from lcg.errors import ConfigError
from lcg.extract.anthropic_extractor import AnthropicExtractor, parse_model_spec
from lcg.extract.cassette import RecordingExtractor, ReplayExtractor
from lcg.extract.embedders import HashEmbedder, HttpEmbedder, LocalEmbedder
from lcg.extract.extractor import Extractor
from lcg.extract.openai_extractor import OpenAICompatExtractor
from lcg.workspace.factory import embedder_from_config, make_extractor


def _config(tmp_path: Path, **env: str) -> Config:
    return Config.from_env(workspace=tmp_path, env=env)


def _close(ex: Extractor | None) -> None:
    if ex is not None:
        ex.close()


def test_no_provider_is_lite_mode(tmp_path: Path) -> None:
    assert make_extractor(_config(tmp_path)) is None


def test_anthropic_key_with_primary_and_fallback(tmp_path: Path) -> None:
    cfg = _config(
        tmp_path,
        ANTHROPIC_API_KEY="k",
        ANTHROPIC_BASE_URL="http://127.0.0.1:9/",
        LCG_EXTRACTION_LLM="claude-sonnet-4-5:claude-haiku-4-5",
        LCG_EXTRACTION_URL="http://127.0.0.1:8/v1",
    )
    ex = make_extractor(cfg)
    assert isinstance(ex, AnthropicExtractor)  # the key beats LCG_EXTRACTION_URL
    assert ex.models == ("claude-sonnet-4-5", "claude-haiku-4-5")
    assert ex.base_url.startswith("http://127.0.0.1:9")
    assert ex.model_id == "claude-sonnet-4-5"
    _close(ex)


def test_extraction_url_without_a_key(tmp_path: Path) -> None:
    ex = make_extractor(
        _config(tmp_path, LCG_EXTRACTION_URL="http://127.0.0.1:8/v1", LCG_EXTRACTION_MODEL="qwen")
    )
    assert isinstance(ex, OpenAICompatExtractor)
    assert ex.endpoint == "http://127.0.0.1:8/v1/chat/completions" and ex.model_id == "qwen"
    _close(ex)


def test_explicit_endpoints_beat_the_key(tmp_path: Path) -> None:
    cfg = _config(tmp_path, ANTHROPIC_API_KEY="k")
    http = make_extractor(cfg, explicit_url="http://127.0.0.1:7")
    assert isinstance(http, OpenAICompatExtractor) and http.endpoint.startswith(
        "http://127.0.0.1:7"
    )
    uds = make_extractor(cfg, explicit_uds=str(tmp_path / "x.sock"))
    assert isinstance(uds, OpenAICompatExtractor) and uds.endpoint == f"unix:{tmp_path}/x.sock"
    env_uds = make_extractor(
        _config(tmp_path, ANTHROPIC_API_KEY="k", LCG_EXTRACTION_UDS=str(tmp_path / "y.sock"))
    )
    assert isinstance(env_uds, OpenAICompatExtractor)
    for ex in (http, uds, env_uds):
        _close(ex)
    with pytest.raises(ConfigError, match="exclusive"):
        make_extractor(cfg, explicit_url="http://x", explicit_uds="/y")


def test_replay_beats_everything_and_resolves_relative_paths(tmp_path: Path) -> None:
    (tmp_path / "tapes").mkdir()
    (tmp_path / "tapes" / "c.jsonl").write_text("")
    ex = make_extractor(
        _config(tmp_path, LCG_REPLAY_LLM="tapes/c.jsonl", ANTHROPIC_API_KEY="k"),
        explicit_url="http://127.0.0.1:7",
    )
    assert isinstance(ex, ReplayExtractor) and ex.path == tmp_path / "tapes" / "c.jsonl"


def test_record_wraps_the_chosen_extractor(tmp_path: Path) -> None:
    ex = make_extractor(_config(tmp_path, ANTHROPIC_API_KEY="k", LCG_RECORD_LLM="rec.jsonl"))
    assert isinstance(ex, RecordingExtractor)
    assert isinstance(ex.inner, AnthropicExtractor) and ex.path == tmp_path / "rec.jsonl"
    assert (tmp_path / "rec.jsonl.failures.jsonl").exists()
    _close(ex)
    # Recording with nothing to record degrades (issue 19 item 4): no extractor, a warning,
    # and the sidecar as in record mode.
    (tmp_path / "rec.jsonl.failures.jsonl").unlink()
    assert make_extractor(_config(tmp_path, LCG_RECORD_LLM="rec.jsonl")) is None
    assert (tmp_path / "rec.jsonl.failures.jsonl").exists()


def test_bad_cost_table_is_a_config_error(tmp_path: Path) -> None:
    cfg = _config(
        tmp_path, ANTHROPIC_API_KEY="k", LIMINIS_LLM_COST_TABLE_PATH=str(tmp_path / "nope.json")
    )
    with pytest.raises(ConfigError, match="LIMINIS_LLM_COST_TABLE_PATH"):
        make_extractor(cfg)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("claude-haiku-4-5-20251001", ("claude-haiku-4-5-20251001", None)),
        ("a:b", ("a", "b")),
        (" a : b ", ("a", "b")),
        ("a:", ("a", None)),
        ("a:a", ("a", None)),
        ("", ("claude-haiku-4-5-20251001", None)),
    ],
)
def test_parse_model_spec(spec: str, expected: tuple[str, str | None]) -> None:
    assert parse_model_spec(spec) == expected


def test_embedder_from_config_follows_lcg_embedder(tmp_path: Path) -> None:
    cfg = Config.from_env(tmp_path, {"LCG_EMBEDDER": "hash", "LCG_EMBEDDING_DIM": "96"})
    emb = embedder_from_config(cfg)
    assert isinstance(emb, HashEmbedder) and emb.dim == 96
    cfg = Config.from_env(
        tmp_path, {"LCG_EMBEDDING_URL": "http://127.0.0.1:1", "LCG_EMBEDDING_MODEL": "bge"}
    )
    emb = embedder_from_config(cfg)
    try:
        assert type(emb) is HttpEmbedder
    finally:
        emb.close()
    assert isinstance(embedder_from_config(Config.from_env(tmp_path, {})), LocalEmbedder)
