"""Only what decodes is appended (ADR 0150): ``codec.admit``, the ``Timestamp`` type and the
upcaster of older time spellings."""

from __future__ import annotations

from pathlib import Path

import msgspec
import msgspec.inspect as mi
import pytest

from lcg.errors import InvalidParamsError
from lcg.events.codec import (
    TIMESTAMP_FIELDS,
    admit,
    decode_line,
    encode_event,
    upcast_timestamp_spelling,
)
from lcg.events.model import EdgeRecord, EntityAsserted, EntityRecord, Event, RelationshipAsserted
from lcg.events.writer import StreamWriter

TS = "2024-05-01T12:00:00.000000Z"


def _edge(valid_at: str | None) -> RelationshipAsserted:
    record = EdgeRecord(
        uuid="r1", name="P", source_uuid="a", target_uuid="b", fact="f", valid_at=valid_at,
        created_at=TS,
    )  # fmt: skip
    return RelationshipAsserted(group_id="g", edge=record, created=True)


def _struct_fields(t: mi.Type, seen: set[type]) -> list[tuple[str, mi.Type]]:
    out: list[tuple[str, mi.Type]] = []
    if isinstance(t, mi.UnionType):
        for u in t.types:
            out += _struct_fields(u, seen)
    elif isinstance(t, mi.Metadata):
        out += _struct_fields(t.type, seen)
    elif isinstance(t, mi.ListType):
        out += _struct_fields(t.item_type, seen)
    elif isinstance(t, mi.StructType) and t.cls not in seen:
        seen.add(t.cls)
        for f in t.fields:
            out.append((f.encode_name, f.type))
            out += _struct_fields(f.type, seen)
    return out


def test_the_timestamp_fields_are_read_from_the_model_and_name_nothing_else() -> None:
    assert TIMESTAMP_FIELDS == {
        "created_at", "valid_at", "invalid_at", "expired_at", "canonical_created_at",
        "synced_at",
    }  # fmt: skip
    # The upcaster finds times by field name: no field of another type may share one.
    for name, t in _struct_fields(mi.type_info(Event), set()):
        if name in TIMESTAMP_FIELDS:
            inner = t.types if isinstance(t, mi.UnionType) else (t,)
            assert any(isinstance(u, mi.Metadata) and u.extra for u in inner), name


@pytest.mark.parametrize(
    "valid_at", ["soon", "2023-02-29T00:00:00.000000Z", "0000-01-01T00:00:00.000000Z"]
)
def test_admit_refuses_an_event_whose_line_would_not_decode(valid_at: str) -> None:
    with pytest.raises(InvalidParamsError, match=r"0001-9999.*\$\.edge\.valid_at"):
        admit([_edge(valid_at)])


@pytest.mark.parametrize(
    ("older", "recorded"),
    [
        ("2024-05-01T14:00:00+02:00", "2024-05-01T12:00:00.000000Z"),
        ("1-01-01T00:00:00.000000Z", "0001-01-01T00:00:00.000000Z"),
    ],
)
def test_admit_writes_and_returns_an_older_spelling_as_it_decodes(
    older: str, recorded: str
) -> None:
    data, (got,) = admit([_edge(older)])
    assert isinstance(got, RelationshipAsserted)
    assert got.edge.valid_at == recorded
    # The line on disk is the event the caller applies: a replay applies the same.
    assert decode_line(data).event == got
    assert data == encode_event(got)


def test_admit_refuses_a_string_that_is_not_unicode() -> None:
    entity = EntityRecord(uuid="e", name="lone \ud800", labels=["Entity"], created_at=TS)
    with pytest.raises(InvalidParamsError, match="EntityAsserted cannot be recorded"):
        admit([EntityAsserted(group_id="g", entity=entity, created=True)])


def test_a_refused_event_leaves_the_stream_as_it_was(tmp_path: Path) -> None:
    root = tmp_path
    with StreamWriter(root, "g", fsync="off") as writer:
        writer.append([_edge(TS)])
        with pytest.raises(InvalidParamsError):
            writer.append([_edge(TS), _edge("soon")])
        assert writer.next_seq == 1
        (later,) = writer.append([_edge(None)])
        assert later.seq == 1
    lines = (root / "g" / "000000000000.jsonl").read_bytes().splitlines(keepends=True)
    assert [decode_line(line).seq for line in lines] == [0, 1]


def test_the_spelling_upcaster_is_pure_and_leaves_non_times_alone() -> None:
    raw = {
        "type": "EpisodeExtracted",
        "edges_created": [{"valid_at": "999-01-01T00:00:00.000000Z", "invalid_at": ""}],
        "edges_invalidated": [{"invalid_at": "soon"}],
        "model": "1-01-01T00:00:00.000000Z",  # not a time field: untouched
    }
    before = msgspec.json.encode(raw)
    out = upcast_timestamp_spelling(raw)
    assert msgspec.json.encode(raw) == before
    assert out["edges_created"] == [{"valid_at": "0999-01-01T00:00:00.000000Z", "invalid_at": None}]
    assert out["edges_invalidated"] == [{"invalid_at": "soon"}]
    assert out["model"] == "1-01-01T00:00:00.000000Z"
