"""Encoding and decoding of stream lines, with upcasting of older event versions.

A line is one JSON object terminated by ``\\n``. Decoding never raises for a bad line: it
returns a ``Decoded`` whose ``event`` is set, or whose ``problem`` names the class of defect:

* ``unparseable`` – not a JSON object, or missing the envelope (``seq``, ``type``);
* ``unrecognised`` – an unknown ``type``, or a ``v`` newer than this build knows;
* ``failed`` – a known type and version whose payload does not validate.

An older version is upcast by a pure function ``raw dict → raw dict`` before the typed
decode; lines on disk are never rewritten.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from lcg.events.model import CURRENT_VERSIONS, Event

__all__ = [
    "UPCASTERS",
    "Decoded",
    "Problem",
    "decode_line",
    "encode_event",
    "encode_events",
    "upcast_EpisodeAdded_v1_v2",
]

Problem = Literal["unparseable", "unrecognised", "failed"]

_encoder = msgspec.json.Encoder()
_typed_decoder: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)
_raw_decoder = msgspec.json.Decoder()


class Decoded(msgspec.Struct, frozen=True):
    """The result of decoding one line: an event, or the class of its defect and why."""

    event: Event | None = None
    problem: Problem | None = None
    detail: str = ""
    seq: int | None = None


def upcast_EpisodeAdded_v1_v2(raw: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
    """v1 named the episode text ``body``; v2 calls it ``content`` and adds ``content_hash``."""
    out = dict(raw)
    if "body" in out and "content" not in out:
        out["content"] = out.pop("body")
    out.setdefault("content_hash", "")
    out["v"] = 2
    return out


#: ``(type, from_version) → upcaster`` producing ``from_version + 1``.
UPCASTERS: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("EpisodeAdded", 1): upcast_EpisodeAdded_v1_v2,
}


def encode_event(event: Event) -> bytes:
    """One event as its line, newline included."""
    return _encoder.encode(event) + b"\n"


def encode_events(events: list[Event]) -> bytes:
    """Several events as consecutive lines."""
    buf = bytearray()
    for event in events:
        _encoder.encode_into(event, buf, -1)
        buf.extend(b"\n")
    return bytes(buf)


def decode_line(line: bytes) -> Decoded:
    """Decode one line (with or without its newline) into an event or a classified defect."""
    try:
        event = _typed_decoder.decode(line)
    except ValueError:  # msgspec.DecodeError, or UnicodeDecodeError for invalid UTF-8
        return _decode_slow(line)
    current = CURRENT_VERSIONS[event.__struct_config__.tag]  # type: ignore[index]
    if event.v == current:
        return Decoded(event=event, seq=event.seq)
    return _decode_slow(line)


def _decode_slow(line: bytes) -> Decoded:
    try:
        raw = _raw_decoder.decode(line)
    except ValueError as exc:  # msgspec.DecodeError or UnicodeDecodeError
        return Decoded(problem="unparseable", detail=f"not JSON: {exc}")
    if not isinstance(raw, dict):
        return Decoded(problem="unparseable", detail="line is not a JSON object")
    seq = raw.get("seq")
    kind = raw.get("type")
    if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(kind, str):
        return Decoded(problem="unparseable", detail="line lacks an integer seq or a type")
    current = CURRENT_VERSIONS.get(kind)
    if current is None:
        return Decoded(problem="unrecognised", detail=f"unknown event type {kind!r}", seq=seq)
    version = raw.get("v", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return Decoded(problem="failed", detail=f"{kind}: invalid version {version!r}", seq=seq)
    if version > current:
        return Decoded(
            problem="unrecognised",
            detail=f"{kind} v{version} is newer than this build (v{current}); upgrade lcg",
            seq=seq,
        )
    while version < current:
        upcaster = UPCASTERS.get((kind, version))
        if upcaster is None:
            return Decoded(problem="failed", detail=f"{kind}: no upcast from v{version}", seq=seq)
        raw = upcaster(raw)
        version += 1
    try:
        event = msgspec.convert(raw, Event)
    except msgspec.ValidationError as exc:
        return Decoded(problem="failed", detail=f"{kind}: {exc}", seq=seq)
    return Decoded(event=event, seq=seq)
