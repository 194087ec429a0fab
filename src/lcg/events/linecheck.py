"""The one check every stream line passes, wherever it is read.

Replay and ``lcg wal verify`` (``reader.StreamReader``), a replica following a publication
(``tail.VerifiedTail``) and ``lcg publish`` all ask ``LineCheck.check`` the same questions, in
order:

1. do the line's bytes match its checksum, and do they decode into a known event
   (``codec.decode_line``: ``unparseable`` / ``unrecognised`` / ``failed`` / ``corrupt``)?
2. does a line without a checksum come after lines that carry one? Only lines written before
   checksums existed may lack it, and those all come first: such a line was rewritten
   (``corrupt``);
3. is it stamped with the stream's generation (``generation_mismatch``)?

What to do with a bad line is the caller's policy: the reader skips and counts it, the
follower stops, publish refuses another generation. Seq order is the caller's too: the reader
counts gaps, the follower stops at one.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from lcg.events.codec import decode_line
from lcg.events.model import Event

__all__ = ["CheckedLine", "LineCheck", "LineProblem"]

#: ``codec.Problem``, plus a valid line of another generation than the stream's.
LineProblem = Literal["unparseable", "unrecognised", "failed", "corrupt", "generation_mismatch"]

_raw = msgspec.json.Decoder()


class CheckedLine(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One line after the check: its event, or the class of its defect and why.

    ``event`` is also set for ``generation_mismatch`` (the line is valid, of another stream).
    """

    event: Event | None = None
    problem: LineProblem | None = None
    detail: str = ""
    #: The seq the line claims (``None`` when none could be read).
    seq: int | None = None
    #: The generation the line claims: its event's, or read from a bad line's JSON.
    gen: str | None = None


def _claimed_gen(line: bytes) -> str | None:
    # Only for bad lines (rare): a generation is worth knowing even when the event is not.
    try:
        raw = _raw.decode(line)
    except ValueError:  # msgspec.DecodeError or UnicodeDecodeError
        return None
    gen = raw.get("gen") if isinstance(raw, dict) else None
    return gen if isinstance(gen, str) and gen else None


class LineCheck:
    """Checks one stream's lines in order; remembers whether checksummed lines were seen."""

    __slots__ = ("checksummed", "generation")

    def __init__(self, generation: str | None = None, *, checksummed: bool = False) -> None:
        #: The stream's generation; ``None`` accepts lines of any generation.
        self.generation = generation
        #: True once a line with a checksum was read: a line without one is corrupt after it.
        self.checksummed = checksummed

    def check(self, line: bytes) -> CheckedLine:
        """Check the next line of the stream (with or without its newline)."""
        decoded = decode_line(line)
        event = decoded.event
        if event is None:
            return CheckedLine(
                problem=decoded.problem or "unparseable",
                detail=decoded.detail,
                seq=decoded.seq,
                gen=_claimed_gen(line),
            )
        if decoded.checksummed:
            self.checksummed = True
        elif self.checksummed:
            return CheckedLine(
                problem="corrupt",
                detail="line has no checksum after lines that carry one",
                seq=event.seq,
                gen=event.gen or None,
            )
        if self.generation is not None and event.gen != self.generation:
            return CheckedLine(
                event=event,
                problem="generation_mismatch",
                detail=f"line generation {event.gen!r}, stream {self.generation!r}",
                seq=event.seq,
                gen=event.gen or None,
            )
        return CheckedLine(event=event, seq=event.seq, gen=event.gen or None)
