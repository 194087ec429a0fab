"""One contract, every embedder: hash (test double), local (the real model), http and uds.

The http and uds embedders talk over real sockets to ``FakeEmbeddingsServer``
(``tests/fake_embeddings.py``), a small OpenAI-compatible ``/v1/embeddings`` server (a FAKE at
the embedder boundary: it serves scaled HashEmbedder vectors). Its ``mode`` switches on the
failures tested below.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from fake_embeddings import FAKE_DIM, FAKE_MODEL, FakeEmbeddingsServer
from lcg.errors import EmbedderError
from lcg.extract.embedders import (
    Embedder,
    HashEmbedder,
    HttpEmbedder,
    LocalEmbedder,
    UdsEmbedder,
    make_embedder,
)


@pytest.fixture(scope="module")
def short_dir() -> Iterator[Path]:
    # Unix socket paths are limited to ~107 bytes; pytest's tmp_path can be longer.
    path = Path(tempfile.mkdtemp(prefix="lcg-emb-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def http_server() -> Iterator[FakeEmbeddingsServer]:
    server = FakeEmbeddingsServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def uds_server(short_dir: Path) -> Iterator[FakeEmbeddingsServer]:
    server = FakeEmbeddingsServer(uds=str(short_dir / "embed.sock"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def local_embedder() -> Iterator[LocalEmbedder]:
    embedder = LocalEmbedder()
    embedder.load()
    yield embedder
    embedder.close()


KINDS = ["hash", "local", "http", "uds"]


def _build(kind: str, request: pytest.FixtureRequest) -> Embedder:
    if kind == "hash":
        return make_embedder("hash")
    if kind == "local":
        local: LocalEmbedder = request.getfixturevalue("local_embedder")
        return local
    server: FakeEmbeddingsServer = request.getfixturevalue(f"{kind}_server")
    server.state.reset()
    if kind == "http":
        return make_embedder("http", url=server.url, model=FAKE_MODEL)
    return make_embedder("uds", uds=server.url, model=FAKE_MODEL)


@pytest.fixture(params=KINDS)
def embedder(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    built = _build(request.param, request)
    yield built
    if request.param != "local":  # the module-scoped model is closed once, at the end
        built.close()


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


# -- the contract --------------------------------------------------------------------------


def test_satisfies_protocol_with_identity(embedder: Embedder) -> None:
    assert callable(embedder.embed) and callable(embedder.close)
    assert isinstance(embedder.model_id, str) and embedder.model_id
    assert isinstance(embedder.dim, int) and embedder.dim > 0


def test_declares_the_floor_of_a_search_that_names_none(embedder: Embedder) -> None:
    # ADR 0198: a cosine floor in the model's own scale, without asking the model anything.
    floor = embedder.default_min_score
    assert isinstance(floor, float) and 0.0 <= floor < 1.0


def test_empty_input_gives_zero_rows(embedder: Embedder) -> None:
    out = embedder.embed([])
    assert out.shape == (0, embedder.dim)
    assert out.dtype == np.float32


def test_rows_are_float32_unit_vectors_in_order(embedder: Embedder) -> None:
    texts = ["Ada Lovelace", "", "Zürich ☃ naïve café", "the " * 600, "x"]
    out = embedder.embed(texts)
    assert out.shape == (len(texts), embedder.dim)
    assert out.dtype == np.float32
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    # Row i belongs to text i, whatever order the batch was processed in.
    for i, text in enumerate(texts):
        np.testing.assert_allclose(embedder.embed([text])[0], out[i], atol=1e-5)


def test_deterministic_and_duplicates_equal(embedder: Embedder) -> None:
    texts = [
        "Grace Hopper wrote the first compiler",
        "COBOL",
        "Grace Hopper wrote the first compiler",
    ]
    first = embedder.embed(texts)
    again = embedder.embed(texts)
    np.testing.assert_allclose(first, again, atol=1e-6)
    np.testing.assert_allclose(first[0], first[2], atol=1e-6)
    assert not np.allclose(first[0], first[1], atol=1e-3)


def test_related_texts_are_closer_than_unrelated(embedder: Embedder) -> None:
    a, b, c = embedder.embed(
        ["red apple pie with cream", "apple pie recipe", "quantum tunnelling microscope"]
    )
    assert _cos(a, b) > 0.2
    assert _cos(a, b) > _cos(a, c) + 0.1


def test_large_call_matches_small_calls(embedder: Embedder) -> None:
    texts = [f"entity number {i} of the archive" for i in range(150)]
    whole = embedder.embed(texts)
    parts = np.concatenate([embedder.embed(texts[i : i + 7]) for i in range(0, 150, 7)])
    np.testing.assert_allclose(whole, parts, atol=1e-5)


def test_safe_to_share_between_threads(embedder: Embedder) -> None:
    texts = [f"thread text {i} about topic {i % 5}" for i in range(64)]
    expected = embedder.embed(texts)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            results[k] = embedder.embed(texts[k * 16 : (k + 1) * 16])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    got = np.concatenate([results[k] for k in range(4)])
    np.testing.assert_allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_embed_after_close_raises(kind: str, request: pytest.FixtureRequest) -> None:
    fresh: Embedder = LocalEmbedder() if kind == "local" else _build(kind, request)
    if kind in ("http", "uds"):
        fresh.embed(["warm up the pool"])
    fresh.close()
    fresh.close()  # idempotent
    with pytest.raises(EmbedderError, match="closed"):
        fresh.embed(["after close"])


# -- OpenAI-compatible embedders: probe, batching, wire format, failures --------------------


@pytest.fixture(params=["http", "uds"])
def remote(request: pytest.FixtureRequest) -> Iterator[tuple[HttpEmbedder, FakeEmbeddingsServer]]:
    server: FakeEmbeddingsServer = request.getfixturevalue(f"{request.param}_server")
    server.state.reset()
    client: HttpEmbedder = (
        HttpEmbedder(server.url, FAKE_MODEL)
        if request.param == "http"
        else UdsEmbedder(server.url, FAKE_MODEL)
    )
    yield client, server
    client.close()


def test_probe_learns_dim_and_model(remote: tuple[HttpEmbedder, FakeEmbeddingsServer]) -> None:
    client, server = remote
    assert client.probe() == (FAKE_MODEL, FAKE_DIM)
    # The reference's probe body, exactly (lcg-api.md §6.1, §7.3): one string.
    assert server.state.requests == [{"input": "probe", "model": FAKE_MODEL}]
    client.probe()
    assert len(server.state.requests) == 1  # learnt once


def test_batches_of_at_most_64_texts(remote: tuple[HttpEmbedder, FakeEmbeddingsServer]) -> None:
    client, server = remote
    client.probe()
    out = client.embed([f"t{i}" for i in range(150)])
    assert out.shape == (150, FAKE_DIM)
    sizes = [len(r["input"]) for r in server.state.requests[1:]]
    assert sizes == [64, 64, 22]
    np.testing.assert_allclose(
        out, HashEmbedder(FAKE_DIM).embed([f"t{i}" for i in range(150)]), atol=1e-6
    )


@pytest.mark.parametrize("mode", ["shuffle", "noindex"])
def test_rows_follow_index_or_response_order(
    remote: tuple[HttpEmbedder, FakeEmbeddingsServer], mode: str
) -> None:
    client, server = remote
    client.probe()
    server.state.mode = mode
    texts = ["alpha beta", "gamma delta", "epsilon"]
    out = client.embed(texts)
    expected = HashEmbedder(FAKE_DIM).embed(texts)
    # "shuffle" answers in reverse with indices (the client reorders); "noindex" answers
    # in input order without indices (the client keeps response order).
    np.testing.assert_allclose(out, expected, atol=1e-6)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("short", "embedding response shape mismatch: expected 48 dimensions, got 47"),
        ("count", "embedding response shape mismatch: asked for 3 vectors, got 2"),
        ("http500", "answered HTTP 500: .*model exploded"),
        ("garbage", "unreadable response"),
        ("zero", "zero or non-finite vector"),
    ],
)
def test_bad_answers_raise_embedder_error(
    remote: tuple[HttpEmbedder, FakeEmbeddingsServer], mode: str, message: str
) -> None:
    client, server = remote
    client.probe()
    server.state.mode = mode
    with pytest.raises(EmbedderError, match=message):
        client.embed(["fine", "BADSHAPE here", "also fine"])


def test_configured_dim_must_match_probe(http_server: FakeEmbeddingsServer) -> None:
    client = HttpEmbedder(http_server.url, FAKE_MODEL, dim=384)
    try:
        with pytest.raises(EmbedderError, match="shape mismatch: expected 384 dimensions, got 48"):
            client.probe()
        with pytest.raises(EmbedderError, match="shape mismatch"):
            _ = client.dim
    finally:
        client.close()


def test_server_down_over_http_is_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens on ``port`` now: the connection is refused.
    client = make_embedder("http", url=f"http://127.0.0.1:{port}", model=FAKE_MODEL)
    try:
        with pytest.raises(
            EmbedderError, match=rf"127\.0\.0\.1:{port}/v1/embeddings is unreachable"
        ):
            client.embed(["hello"])
    finally:
        client.close()


def test_server_down_over_uds_is_a_clear_error(short_dir: Path) -> None:
    path = str(short_dir / "dead.sock")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(path)  # the file exists, but nothing will ever listen on it
    try:
        client = make_embedder("uds", uds=path, model=FAKE_MODEL)
        try:
            with pytest.raises(EmbedderError, match=f"unix:{path} is unreachable"):
                client.embed(["hello"])
        finally:
            client.close()
    finally:
        os.unlink(path)


# -- the real embedded model ---------------------------------------------------------------


def test_local_model_semantic_sanity(local_embedder: LocalEmbedder) -> None:
    cat, kitten, sheet = local_embedder.embed(["cat", "kitten", "spreadsheet"])
    assert _cos(cat, kitten) > _cos(cat, sheet) + 0.2
    assert local_embedder.model_id == "all-MiniLM-L6-v2-int8"
    assert local_embedder.dim == 384


def test_local_model_truncates_at_256_tokens(local_embedder: LocalEmbedder) -> None:
    long = " ".join(f"word{i % 50}" for i in range(400))
    a, b, c = local_embedder.embed([long, long + " and a different ending entirely", "short"])
    np.testing.assert_allclose(a, b, atol=1e-5)  # the tail lies past the 256-token cut
    assert not np.allclose(a, c, atol=1e-2)


def test_local_model_refuses_a_file_with_the_wrong_sha256() -> None:
    bad = LocalEmbedder(sha256="0" * 64)
    with pytest.raises(EmbedderError, match="sha256 .* expected 0000"):
        bad.embed(["x"])


def test_local_model_reports_a_missing_tokenizer(tmp_path: Path) -> None:
    bad = LocalEmbedder(tokenizer_path=tmp_path / "absent.json")
    with pytest.raises(EmbedderError, match="tokenizer .*absent.json cannot load"):
        bad.load()


def test_local_model_reads_only_a_prefix_of_a_huge_text(
    local_embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The model sees 256 tokens; the tokenizer now gets a prefix, not 3 MB. Same vectors as
    # tokenizing everything, for prose and for one long run of marks (one token each).
    from lcg.extract import _minilm

    prose = " ".join(
        f"Sentence {i} says the river was cold, and we paddled on." for i in range(50_000)
    )
    marks = "!?" * 40_000 + " tail"
    cut = local_embedder.embed([prose, marks, "short"])
    monkeypatch.setattr(_minilm, "_CHARS_PER_TOKEN", 10**9)
    whole = local_embedder.embed([prose, marks, "short"])
    assert np.array_equal(cut, whole)


# -- the reference's request body (lcg-api.md §7.3, §9; issue 19 item 3, ADR 0171) ---------


def test_one_text_is_sent_as_the_reference_sends_it(
    remote: tuple[HttpEmbedder, FakeEmbeddingsServer],
) -> None:
    # §7.3: `{"input":"<one string>","model":…}` — a string, not a list of one.
    client, server = remote
    client.embed(["Ada Lovelace"])
    assert server.state.requests[-1] == {"input": "Ada Lovelace", "model": FAKE_MODEL}


def test_a_server_taking_only_strings_is_sent_one_string_per_request(
    remote: tuple[HttpEmbedder, FakeEmbeddingsServer],
) -> None:
    # A sidecar written for the reference may refuse a list; the texts still embed, each
    # the way the reference sends it, and the refusal is remembered.
    client, server = remote
    client.probe()
    server.state.mode = "strings_only"
    texts = ["alpha beta", "gamma delta", "epsilon"]
    out = client.embed(texts)
    np.testing.assert_allclose(out, HashEmbedder(FAKE_DIM).embed(texts), atol=1e-6)
    assert [r["input"] for r in server.state.requests[-3:]] == texts
    before = len(server.state.requests)
    client.embed(["zeta", "eta"])
    assert [r["input"] for r in server.state.requests[before:]] == ["zeta", "eta"]


def test_default_model_is_the_references_unless_configured(
    http_server: FakeEmbeddingsServer, tmp_path: Path
) -> None:
    from lcg.config import Config
    from lcg.workspace.factory import embedder_from_config

    http_server.state.reset()
    # §9: LCG_EMBEDDING_MODEL defaults to bge-base-en-v1.5.
    default = embedder_from_config(
        Config.from_env(tmp_path, env={"LCG_EMBEDDING_URL": http_server.url})
    )
    named = embedder_from_config(
        Config.from_env(
            tmp_path,
            env={"LCG_EMBEDDING_URL": http_server.url, "LCG_EMBEDDING_MODEL": "my-model"},
        )
    )
    try:
        default.embed(["one"])
        named.embed(["two"])
    finally:
        default.close()
        named.close()
    assert [r["model"] for r in http_server.state.requests] == [
        "bge-base-en-v1.5",
        "bge-base-en-v1.5",
        "my-model",
        "my-model",
    ]
    # With no endpoint the embedded model stays the default, under its own id.
    local = embedder_from_config(Config.from_env(tmp_path, env={}))
    assert isinstance(local, LocalEmbedder)
    assert local.model_id == "all-MiniLM-L6-v2-int8"
    local.close()
