"""Cassettes: the key, the record format, replay errors and the failure sidecar (with the
scripted TEST DOUBLE as the recorded extractor; the real providers are recorded in
tests/integration/test_llm_fakes_providers.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import msgspec
import pytest

from lcg.errors import CassetteError
from lcg.extract import cassette as cassette_mod
from lcg.extract import prompts
from lcg.extract.cassette import (
    RecordingExtractor,
    ReplayExtractor,
    classify_entities_key,
    classify_relations_key,
    extract_key,
    failures_path,
)
from lcg.extract.extractor import (
    ExtractedEdge,
    ExtractedEntity,
    ExtractionFailure,
    ExtractionOutput,
    ExtractRequest,
)
from lcg.extract.ontology import parse_ontology
from lcg.extract.prompts import entity_system_prompt
from lcg.extract.scripted import ScriptedExtractor

OUT = ExtractionOutput(
    entities=[ExtractedEntity(name="Ada", entity_type="Person", summary="s")],
    edges=[ExtractedEdge(source_name="Ada", target_name="Bob", fact="f", relation_type="KNOWS")],
    entities_dropped_malformed=1,
    input_tokens=10,
    output_tokens=5,
    cost_usd=0.001,
)


def _req(body: str = "Ada knows Bob.", **kw: object) -> ExtractRequest:
    kw.setdefault("group_id", "g")
    kw.setdefault("reference_time", "2026-01-01T00:00:00Z")
    return ExtractRequest(body=body, **kw)  # type: ignore[arg-type]


def test_extract_key_is_sha256_of_the_compact_request_in_fixed_order() -> None:
    key, raw = extract_key(_req())
    assert key == hashlib.sha256(raw).hexdigest()
    obj = json.loads(raw)
    assert list(obj) == [
        "call_type", "source_type", "group_id", "reference_time", "custom_instructions",
        "episode_body", "entity_system_prompt", "entity_user_prompt", "edge_system_prompt",
    ]  # fmt: skip
    assert obj["call_type"] == "extract" and obj["custom_instructions"] is None
    assert obj["entity_system_prompt"] == entity_system_prompt("Text", None, None)
    assert raw == json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    assert extract_key(_req())[0] == key  # deterministic


def test_every_keyed_input_changes_the_key() -> None:
    base = extract_key(_req())[0]
    onto = parse_ontology("entity_types: [Person]\n")
    variants = [
        _req(body="other"),
        _req(source_type="Message"),
        _req(group_id="h"),
        _req(reference_time="2027-01-01T00:00:00Z"),
        _req(custom_instructions="be brief"),
        _req(ontology=onto),  # a different rendered prompt
    ]
    keys = {extract_key(r)[0] for r in variants}
    assert base not in keys and len(keys) == len(variants)
    # The chunk key is telemetry only and is not part of the key.
    assert extract_key(_req(chunk_key="x"))[0] == base


def test_classify_keys() -> None:
    k1, raw1 = classify_entities_key([("Ada", "s")], ["Person"])
    assert list(json.loads(raw1)) == ["call_type", "entities", "allowed_types", "system_prompt"]
    assert json.loads(raw1)["entities"] == [{"name": "Ada", "summary": "s"}]
    assert classify_entities_key([("Ada", "s")], None)[0] != k1
    k2, raw2 = classify_relations_key([("f", "T")], [("KNOWS", None), ("X", "d")])
    obj = json.loads(raw2)
    assert list(obj) == ["call_type", "edges", "allowed_types", "system_prompt"]
    assert obj["edges"] == [{"fact": "f", "current_type": "T"}]
    assert obj["allowed_types"] == [["KNOWS", None], ["X", "d"]]
    assert k2 == hashlib.sha256(raw2).hexdigest()


def test_record_then_replay_identical(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "rec.jsonl"
    inner = ScriptedExtractor({"Ada knows Bob.": OUT}, entity_types={"Ada": "Person"})
    rec = RecordingExtractor(inner, path)
    assert failures_path(path) == tmp_path / "sub" / "rec.jsonl.failures.jsonl"
    assert failures_path(path).exists() and failures_path(path).read_text() == ""
    out = rec.extract(_req())
    labels = rec.classify_entities([("Ada", "")], ["Person"])
    rels = rec.classify_relations([("f", "")], [("KNOWS", None)])
    assert rec.classify_entities([], None) == []  # an empty call is not recorded
    assert rec.model_id == inner.model_id
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["call_type"] for r in lines] == ["extract", "classify_entities", "classify_relations"]
    first = lines[0]
    assert list(first) == ["key", "call_type", "provider", "model", "timestamp", "request",
                           "response"]  # fmt: skip
    assert first["provider"] == "scripted" and first["model"] == inner.model_id
    assert first["timestamp"].endswith("Z")
    assert first["key"] == extract_key(_req())[0]
    assert first["response"]["entities"][0]["name"] == "Ada"
    replay = ReplayExtractor(path)
    assert replay.model_id == inner.model_id
    assert replay.extract(_req()) == out
    assert replay.classify_entities([("Ada", "")], ["Person"]) == labels == ["Person"]
    assert replay.classify_relations([("f", "")], [("KNOWS", None)]) == rels == [""]
    assert inner.calls == 1  # replay never reached the recorded extractor


def test_replay_miss_names_the_call_and_key(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("")
    replay = ReplayExtractor(path, model_id="m")
    key = extract_key(_req())[0]
    with pytest.raises(CassetteError, match=f"^cassette miss: no cassette record for extract call "
                                            f"with key {key}$"):  # fmt: skip
        replay.extract(_req())
    ckey = classify_entities_key([("a", "")], None)[0]
    with pytest.raises(CassetteError, match=f"classify_entities call with key {ckey}"):
        replay.classify_entities([("a", "")], None)
    with pytest.raises(CassetteError, match="classify_relations call"):
        replay.classify_relations([("a", "")], [])
    assert replay.model_id == "m" and len(replay) == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"key": "a", "response": {}}\nnot json\n', "cassette corrupt: .* line 2 is not JSON"),
        (b"[1, 2]\n", "cassette corrupt: .* line 1 is not a JSON object"),
        (b'{"call_type": "extract"}\n', "cassette corrupt: .* line 1 has no string key"),
        (b'{"key": 7}\n', "cassette corrupt: .* line 1 has no string key"),
    ],
)
def test_replay_load_errors(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(content)
    with pytest.raises(CassetteError, match=message):
        ReplayExtractor(path)


def test_replay_unusable_response_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    key = extract_key(_req())[0]
    ckey = classify_entities_key([("a", "")], None)[0]
    path.write_text(
        json.dumps({"key": key, "response": {"entities": "nope"}}) + "\n"
        + json.dumps({"key": ckey, "response": {"x": 1}}) + "\n"
    )  # fmt: skip
    replay = ReplayExtractor(path)
    with pytest.raises(CassetteError, match="cassette corrupt: record .* unusable response"):
        replay.extract(_req())
    with pytest.raises(CassetteError, match="response is not a list"):
        replay.classify_entities([("a", "")], None)
    with pytest.raises(CassetteError, match="cassette unreadable"):
        ReplayExtractor(tmp_path / "missing.jsonl")


def test_replayed_labels_are_fitted_to_the_input_length(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    key = classify_entities_key([("a", ""), ("b", "")], None)[0]
    path.write_text(json.dumps({"key": key, "response": ["A", 3, "C"]}) + "\n")
    assert ReplayExtractor(path).classify_entities([("a", ""), ("b", "")], None) == ["A", ""]


def test_failure_sidecar_rotates(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    record = ExtractionFailure(
        model="m", call_type="entities", chunk_key="k", classification="malformed",
        raw_body="x" * 200,
    )  # fmt: skip
    line_bytes = len(msgspec.json.encode(record)) + 1
    # Room for two lines per file: five writes fill two rotated files and start a third.
    rec = RecordingExtractor(ScriptedExtractor(), path, failure_rotate_bytes=line_bytes * 5 // 2)
    for _ in range(5):
        rec.failures.write(record)
    main = failures_path(path)
    rotated = sorted(tmp_path.glob("c.jsonl.failures.*.jsonl"))
    assert [p.name for p in rotated] == ["c.jsonl.failures.1.jsonl", "c.jsonl.failures.2.jsonl"]
    assert [len(p.read_text().splitlines()) for p in [*rotated, main]] == [2, 2, 1]
    decoded = msgspec.json.decode(main.read_text().splitlines()[0], type=ExtractionFailure)
    assert decoded.raw_body == "x" * 200 and decoded.classification == "malformed"
    assert cassette_mod.FAILURE_ROTATE_BYTES == 20 * 1024 * 1024


def test_recording_appends_every_call_an_identical_one_included(tmp_path: Path) -> None:
    # Documentation: "Every extraction call ... appends one line"; re-running recording
    # against an existing path "always appends, never truncates".
    path = tmp_path / "c.jsonl"
    inner = ScriptedExtractor({"Ada knows Bob.": OUT})
    rec = RecordingExtractor(inner, path)
    rec.extract(_req())
    rec.extract(_req())
    again = RecordingExtractor(inner, path)
    again.extract(_req())
    again.extract(_req(body="Ada knows Bob.", group_id="other"))
    assert inner.calls == 4
    keys = [json.loads(line)["key"] for line in path.read_text().splitlines()]
    assert keys == [extract_key(_req())[0]] * 3 + [extract_key(_req(group_id="other"))[0]]
    assert len(ReplayExtractor(path)) == 4


def _labels_line(key: str, label: str) -> str:
    # A cassette line written by hand in the documented format.
    return json.dumps({
        "key": key, "call_type": "classify_entities", "provider": "local", "model": "m",
        "timestamp": "2026-01-01T00:00:00Z", "request": {}, "response": [label],
    })  # fmt: skip


def test_identical_calls_are_served_fifo_in_recorded_order(tmp_path: Path) -> None:
    # Documentation: records are matched by key alone, independent of file order, and "two
    # calls with identical semantic content are served FIFO, in the order they were recorded".
    # The reference's code refuses such a file ("cassette duplicate key"); lcg follows the
    # documentation (ADR 0217). Past the last record of a key, the last answers again.
    key = classify_entities_key([("a", "")], None)[0]
    other = classify_entities_key([("b", "")], None)[0]
    path = tmp_path / "c.jsonl"
    lines = [_labels_line(key, "First"), _labels_line(other, "Other"),
             _labels_line(key, "Second"), _labels_line(key, "Third")]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    replay = ReplayExtractor(path)
    assert len(replay) == 4
    answers = [replay.classify_entities([("a", "")], None)[0] for _ in range(4)]
    assert answers == ["First", "Second", "Third", "Third"]
    assert replay.classify_entities([("b", "")], None) == ["Other"]


def test_a_recorded_run_with_repeated_calls_replays_in_order(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    first = ExtractionOutput(entities=[ExtractedEntity(name="Ada", entity_type="Person")])
    second = ExtractionOutput(entities=[ExtractedEntity(name="Bob", entity_type="Person")])

    class Changing(ScriptedExtractor):
        def extract(self, req: ExtractRequest) -> ExtractionOutput:
            self.calls += 1
            return first if self.calls == 1 else second

    rec = RecordingExtractor(Changing(), path)
    assert [rec.extract(_req()), rec.extract(_req())] == [first, second]
    replay = ReplayExtractor(path)
    assert [replay.extract(_req()), replay.extract(_req())] == [first, second]


def test_failure_sidecar_is_the_cassette_path_plus_failures_jsonl(tmp_path: Path) -> None:
    # Documentation: the sidecar is "<cassette-path>.failures.jsonl", created eagerly, rotated
    # to "<cassette-path>.failures.N.jsonl".
    for name in ("rec.jsonl", "rec", "rec.cassette"):
        path = tmp_path / name
        RecordingExtractor(ScriptedExtractor(), path)
        sidecar = tmp_path / (name + ".failures.jsonl")
        assert failures_path(path) == sidecar
        assert sidecar.is_file() and sidecar.read_text() == ""


def test_a_template_change_makes_recorded_calls_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.jsonl"
    recorded = RecordingExtractor(ScriptedExtractor({"Ada knows Bob.": OUT}), path).extract(_req())
    assert ReplayExtractor(path).extract(_req()) == recorded
    original = prompts.template

    def edited(name: str) -> str:
        text = original(name)
        return text + "\nOne more rule.\n" if name == "edges.txt" else text

    monkeypatch.setattr(prompts, "template", edited)
    with pytest.raises(CassetteError, match="cassette miss"):
        ReplayExtractor(path).extract(_req())
