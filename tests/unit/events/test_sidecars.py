"""Generation file, provenance sidecars and positions."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from lcg.errors import GenerationError
from lcg.events.generation import mint_generation, read_generation, write_generation
from lcg.events.layout import EMBEDDING_MODEL_FILE, GENERATION_FILE, ONTOLOGY_SIDECAR_FILE
from lcg.events.position import Position
from lcg.events.sidecars import (
    EmbeddingModelSidecar,
    OntologySidecar,
    read_embedding_model,
    read_ontology_sidecar,
    write_embedding_model,
    write_ontology_sidecar,
)


def test_sidecars_round_trip(tmp_path: Path) -> None:
    onto = OntologySidecar(hash="h", mode="strict", entity_types=["Person"], written_at="t")
    emb = EmbeddingModelSidecar(model="m", dim=384, written_at="t")
    assert read_ontology_sidecar(tmp_path) is None
    assert read_embedding_model(tmp_path) is None
    write_ontology_sidecar(tmp_path, onto)
    write_embedding_model(tmp_path, emb)
    assert read_ontology_sidecar(tmp_path) == onto
    assert read_embedding_model(tmp_path) == emb
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [ONTOLOGY_SIDECAR_FILE, EMBEDDING_MODEL_FILE]
    )  # no temp file left behind


@pytest.mark.parametrize("junk", [b"", b"{", b'{"model": 3}', b"\xff\xfe", b"[]"])
def test_corrupt_sidecars_read_as_none(tmp_path: Path, junk: bytes) -> None:
    (tmp_path / ONTOLOGY_SIDECAR_FILE).write_bytes(junk)
    (tmp_path / EMBEDDING_MODEL_FILE).write_bytes(junk)
    (tmp_path / GENERATION_FILE).write_bytes(junk)
    assert read_ontology_sidecar(tmp_path) is None
    assert read_embedding_model(tmp_path) is None
    assert read_generation(tmp_path) is None


def test_generation_is_minted_once(tmp_path: Path) -> None:
    assert read_generation(tmp_path) is None
    gen = mint_generation(tmp_path)
    assert mint_generation(tmp_path) == gen == read_generation(tmp_path)
    assert (tmp_path / GENERATION_FILE).read_bytes() == f'{{"generation":"{gen}"}}'.encode()
    write_generation(tmp_path, "restored")
    assert read_generation(tmp_path) == "restored"
    assert [p.name for p in tmp_path.iterdir()] == [GENERATION_FILE]


def test_racing_minters_agree_on_one_generation(tmp_path: Path) -> None:
    results: list[str] = []
    barrier = threading.Barrier(8)

    def mint() -> None:
        barrier.wait()
        results.append(mint_generation(tmp_path))

    threads = [threading.Thread(target=mint) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1 and results[0] == read_generation(tmp_path)


def test_junk_generation_is_replaced_once(tmp_path: Path) -> None:
    (tmp_path / GENERATION_FILE).write_text('{"generation": ""}')
    gen = mint_generation(tmp_path)
    assert gen and read_generation(tmp_path) == gen


def test_positions_compare_only_within_a_generation() -> None:
    a = Position(group_id="g", generation="G", seq=None)
    b = Position(group_id="g", generation="G", seq=0)
    assert a.behind(b) and not b.behind(a) and not b.behind(b)
    with pytest.raises(GenerationError, match="generations 'G' and 'H'"):
        b.behind(Position(group_id="g", generation="H", seq=5))
    with pytest.raises(GenerationError, match="groups 'g' and 'h'"):
        b.behind(Position(group_id="h", generation="G", seq=5))
