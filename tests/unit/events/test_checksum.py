"""Every line carries a CRC-32 of its bytes (ADR 0075): damage is a ``corrupt`` line, never data."""

from __future__ import annotations

import msgspec
import pytest

from lcg.events.codec import CHECKSUM_FIELD, decode_line, encode_event, seal, verify_checksum
from lcg.events.model import EntityAsserted, EntityRecord, EpisodeAdded, Event

TS = "2024-05-01T12:00:00.000000Z"


def _entity_line(name: str = "Ada Lovelace") -> bytes:
    record = EntityRecord(uuid="e1", name=name, labels=["Entity"], created_at=TS)
    event = EntityAsserted(group_id="g", seq=7, ts=TS, gen="G", entity=record, created=True)
    return encode_event(event)


def test_a_line_ends_with_its_checksum_and_reads_back() -> None:
    line = _entity_line()
    assert line.endswith(b'"}\n')
    assert b',"' + CHECKSUM_FIELD.encode() + b'":"' in line[-22:]
    decoded = decode_line(line)
    assert decoded.problem is None and decoded.checksummed
    assert isinstance(decoded.event, EntityAsserted)
    assert decoded.event.entity.name == "Ada Lovelace"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"Ada Lovelace", b"Ada Lovelacf"),  # one letter of an entity name
        (b'"seq":7', b'"seq":8'),  # the envelope is covered too
        (b'"gen":"G"', b'"gen":"H"'),
    ],
)
def test_any_changed_byte_makes_the_line_corrupt(old: bytes, new: bytes) -> None:
    damaged = _entity_line().replace(old, new)
    assert verify_checksum(damaged) is False
    decoded = decode_line(damaged)
    assert decoded.event is None
    assert decoded.problem == "corrupt"
    assert "checksum" in decoded.detail


def test_a_damaged_checksum_is_corrupt_too() -> None:
    line = _entity_line()
    digits = line[-11:-3]
    assert verify_checksum(line.replace(digits, b"zzzzzzzz")) is False
    flipped = bytes([digits[0] ^ 1]) + digits[1:]
    assert decode_line(line.replace(digits, flipped)).problem == "corrupt"


def test_a_line_without_checksum_is_legacy_and_still_reads() -> None:
    raw = msgspec.json.decode(_entity_line())
    del raw[CHECKSUM_FIELD]
    legacy = msgspec.json.encode(raw) + b"\n"
    assert verify_checksum(legacy) is None
    decoded = decode_line(legacy)
    assert decoded.event is not None and not decoded.checksummed


def test_every_event_type_round_trips_with_its_checksum(events: list[Event]) -> None:
    for event in events:
        decoded = decode_line(encode_event(event))
        assert decoded.event == event and decoded.checksummed


def test_seal_checksums_a_hand_written_object() -> None:
    obj = msgspec.json.encode(
        EpisodeAdded(group_id="g", uuid="u", name="n", content="c", created_at=TS, seq=0)
    )
    line = seal(obj)
    assert line == encode_event(msgspec.json.decode(obj, type=EpisodeAdded))
    assert verify_checksum(line) is True
