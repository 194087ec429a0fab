"""Line encoding and decoding: round trips, defect classes, upcasting."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from lcg.events.codec import (
    UPCASTERS,
    decode_line,
    encode_event,
    encode_events,
    upcast_EpisodeAdded_v1_v2,
)
from lcg.events.model import CURRENT_VERSIONS, EpisodeAdded, Event

GOLDEN_V1 = (
    Path(__file__).resolve().parents[3]
    / "wal-fixtures/v1-episode-added/wal/liminis/000000000000.jsonl"
)


def test_catalogue_has_fifteen_types_each_with_a_version(events: list[Event]) -> None:
    tags = [type(e).__struct_config__.tag for e in events]
    assert sorted(tags) == sorted(CURRENT_VERSIONS)
    assert len(tags) == 15
    for event in events:
        assert event.v == CURRENT_VERSIONS[type(event).__struct_config__.tag]  # type: ignore[index]


def test_every_type_round_trips(events: list[Event]) -> None:
    for i, event in enumerate(events):
        stamped = msgspec.structs.replace(event, seq=i, ts="2024-01-01T00:00:00.000000Z", gen="g")
        line = encode_event(stamped)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        decoded = decode_line(line)
        assert decoded.problem is None
        assert decoded.event == stamped
        assert decoded.seq == i
        assert decode_line(line.rstrip(b"\n")).event == stamped


def test_line_starts_with_the_type_tag_then_the_envelope(events: list[Event]) -> None:
    line = encode_event(events[0])
    assert line.startswith(b'{"type":"EpisodeAdded","seq":-1,"ts":"","gen":"","v":2,')


def test_encode_events_is_consecutive_lines(events: list[Event]) -> None:
    assert encode_events(events) == b"".join(encode_event(e) for e in events)
    assert encode_events([]) == b""


def test_events_carry_no_vectors(events: list[Event]) -> None:
    # Text only: no float arrays anywhere in a line.
    for event in events:
        raw = msgspec.json.decode(encode_event(event))
        stack: list[object] = [raw]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                assert not any(isinstance(x, float) for x in item)
                stack.extend(item)


@pytest.mark.parametrize(
    ("line", "problem", "detail"),
    [
        (b"not json", "unparseable", "not JSON"),
        (b"", "unparseable", "not JSON"),
        (b"[1, 2]", "unparseable", "not a JSON object"),
        (b'{"type":"EpisodeAdded"}', "unparseable", "lacks an integer seq"),
        (b'{"seq":true,"type":"EpisodeAdded"}', "unparseable", "lacks an integer seq"),
        (b'{"seq":1}', "unparseable", "lacks an integer seq"),
        (b'{"seq":1,"type":"Nope","v":1}', "unrecognised", "unknown event type 'Nope'"),
        (
            b'{"seq":1,"type":"EpisodeAdded","v":3,"group_id":"g"}',
            "unrecognised",
            "EpisodeAdded v3 is newer than this build (v2); upgrade lcg",
        ),
        (b'{"seq":1,"type":"GroupPurged","v":0,"group_id":"g"}', "failed", "invalid version 0"),
        (b'{"seq":1,"type":"GroupPurged","v":"1","group_id":"g"}', "failed", "invalid version"),
        (b'{"seq":1,"type":"GroupPurged","v":1}', "failed", "group_id"),
        (
            b'{"seq":1,"type":"GroupPurged","v":1,"group_id":"g","reason":"bogus"}',
            "failed",
            "reason",
        ),
    ],
)
def test_bad_lines_are_classified_never_raised(line: bytes, problem: str, detail: str) -> None:
    decoded = decode_line(line)
    assert decoded.event is None
    assert decoded.problem == problem
    assert detail in decoded.detail
    if problem != "unparseable":
        assert decoded.seq == 1


def test_missing_upcaster_is_a_failed_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(UPCASTERS, ("EpisodeAdded", 1))
    decoded = decode_line(GOLDEN_V1.read_bytes().splitlines()[0])
    assert decoded.problem == "failed"
    assert "no upcast from v1" in decoded.detail


def test_v1_episode_added_golden_line_is_upcast_to_v2() -> None:
    line = GOLDEN_V1.read_bytes().splitlines()[0]
    raw = msgspec.json.decode(line)
    assert raw["v"] == 1 and "body" in raw and "content" not in raw
    decoded = decode_line(line)
    assert decoded.problem is None, decoded.detail
    event = decoded.event
    assert isinstance(event, EpisodeAdded)
    assert event.v == 2
    assert event.content == "Episode number 0."
    assert event.content_hash == ""
    assert (event.seq, event.gen, event.uuid) == (0, "a" * 32, "ep0")
    # Re-encoding writes the current version; the line on disk is never rewritten.
    assert b'"v":2' in encode_event(event) and b'"content":' in encode_event(event)


def test_upcaster_is_pure() -> None:
    raw = {"type": "EpisodeAdded", "v": 1, "body": "text"}
    out = upcast_EpisodeAdded_v1_v2(raw)
    assert raw == {"type": "EpisodeAdded", "v": 1, "body": "text"}
    assert out == {"type": "EpisodeAdded", "v": 2, "content": "text", "content_hash": ""}
    # A v1 line that already had ``content`` keeps it.
    assert upcast_EpisodeAdded_v1_v2({"v": 1, "content": "c"})["content"] == "c"
