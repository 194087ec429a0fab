"""Reading a group stream: events in seq order between inclusive bounds, never raising.

Files are located by name, so reading from ``from_seq`` opens no earlier file. Each line
passes the one line check (``linecheck.LineCheck``, shared with publish and the follower);
every bad line is counted by class in a ``ReadReport`` with de-duplicated samples:

* ``unparseable_lines`` – not JSON, or no envelope;
* ``unrecognised_lines`` – unknown event type, or a version newer than this build;
* ``failed_lines`` – a known type whose payload does not validate;
* ``generation_mismatch_lines`` – a line stamped with another generation than the stream's;
* ``corrupt_lines`` – a line whose checksum does not match its bytes, or a line without a
  checksum after lines that carry one (only lines written before checksums may lack it);
* ``torn_tail`` – the last line of the last file has no newline (a write that never happened);
* ``seq_gaps`` / ``seq_regressions`` – a line whose seq is not the previous one + 1 (a read
  from ``from_seq`` expects its first line to be ``from_seq``).

``skipped_seqs`` lists, as inclusive ranges, the seqs the read did not yield: the seqs of bad
lines whose seq can be trusted, and the holes that gaps (and lost lines) leave.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec

from lcg.events.codec import decode_line
from lcg.events.guarded import open_regular
from lcg.events.linecheck import CheckedLine, LineCheck
from lcg.events.model import Event
from lcg.events.segments import list_segments, read_tail, segments_from

__all__ = ["LineSample", "ReadReport", "StreamReader"]

_MAX_SAMPLES = 10
#: The most ranges ``skipped_seqs`` keeps; ``seqs_skipped`` still counts every seq.
_MAX_SKIPPED_RANGES = 100


class LineSample(msgspec.Struct, kw_only=True):
    """One class of bad line: where it was first seen and how often."""

    problem: str
    detail: str
    file: str
    line_no: int
    count: int = 1
    #: The seq the line claims (``None`` when it has none that could be read).
    seq: int | None = None


class ReadReport(msgspec.Struct, kw_only=True):
    """Counters of one read; ``samples`` are de-duplicated by (problem, detail)."""

    events_read: int = 0
    unparseable_lines: int = 0
    unrecognised_lines: int = 0
    failed_lines: int = 0
    generation_mismatch_lines: int = 0
    corrupt_lines: int = 0
    seq_gaps: int = 0
    seq_regressions: int = 0
    torn_tail: bool = False
    files_read: int = 0
    generations_seen: list[str] = []
    samples: list[LineSample] = []
    samples_dropped: int = 0
    #: Inclusive ``(first, last)`` ranges of seqs not yielded (bad lines, gaps), in order.
    skipped_seqs: list[tuple[int, int]] = []
    #: How many seqs ``skipped_seqs`` covers (ranges past the cap included).
    seqs_skipped: int = 0
    #: Where a read continuing this one starts: past every line read, bad ones included.
    resume_seq: int = 0

    @property
    def bad_lines(self) -> int:
        """Lines that could not be applied, all classes together."""
        return (
            self.unparseable_lines
            + self.unrecognised_lines
            + self.failed_lines
            + self.generation_mismatch_lines
            + self.corrupt_lines
        )

    @property
    def damaged(self) -> bool:
        """True if the read skipped anything: a bad line, a gap or a regression."""
        return bool(self.bad_lines or self.seq_gaps or self.seq_regressions or self.seqs_skipped)

    def skip(self, first: int, last: int) -> None:
        """Record that seqs ``first..last`` (inclusive) were not yielded."""
        if last < first:
            return
        self.seqs_skipped += last - first + 1
        if self.skipped_seqs and self.skipped_seqs[-1][1] + 1 >= first:
            prev = self.skipped_seqs[-1]
            self.skipped_seqs[-1] = (prev[0], max(prev[1], last))
        elif len(self.skipped_seqs) < _MAX_SKIPPED_RANGES:
            self.skipped_seqs.append((first, last))

    def note(
        self, problem: str, detail: str, file: str, line_no: int, seq: int | None = None
    ) -> None:
        """Count one bad line of class ``problem`` and keep a sample of it."""
        key = detail[:200]
        for sample in self.samples:
            if sample.problem == problem and sample.detail == key:
                sample.count += 1
                return
        if len(self.samples) < _MAX_SAMPLES:
            self.samples.append(
                LineSample(problem=problem, detail=key, file=file, line_no=line_no, seq=seq)
            )
        else:
            self.samples_dropped += 1


class StreamReader:
    """Reads one group's stream directory; readers take no lock."""

    def __init__(
        self,
        group_dir: Path,
        *,
        generation: str | None = None,
        max_segment_bytes: int | None = None,
    ) -> None:
        self.group_dir = group_dir
        #: Lines stamped with another generation are skipped and counted; ``None`` = any.
        self.generation = generation
        #: A larger segment raises ``UnsafeFileError`` (a publication); ``None``: no limit.
        self.max_segment_bytes = max_segment_bytes

    def events(
        self,
        from_seq: int = 0,
        to_seq: int | None = None,
        report: ReadReport | None = None,
    ) -> Iterator[Event]:
        """Yield the valid events with ``from_seq <= seq <= to_seq`` in seq order."""
        for batch in self.batches(from_seq, to_seq, report=report, batch_size=256):
            yield from batch

    def batches(
        self,
        from_seq: int = 0,
        to_seq: int | None = None,
        *,
        batch_size: int = 64,
        report: ReadReport | None = None,
    ) -> Iterator[list[Event]]:
        """Yield lists of at most ``batch_size`` valid events, in seq order."""
        rep = report if report is not None else ReadReport()
        segments = list_segments(self.group_dir)
        selected = segments_from(segments, from_seq)
        last_path = segments[-1].path if segments else None
        # The first line read must be ``from_seq``: a stream that starts later lost its head.
        expected_next: int = from_seq
        # Lines whose seq cannot be trusted (unparseable, corrupt) since the last good one:
        # the gap before the next good line covers them; at the end they are a lost tail.
        untrusted = 0
        check = LineCheck(self.generation)
        batch: list[Event] = []
        for seg in selected:
            if to_seq is not None and seg.first_seq > to_seq:
                break
            rep.files_read += 1
            lines = self._lines(seg.path, seg.path == last_path, rep)
            name = seg.path.name
            for line_no, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                checked = check.check(line)
                seq = checked.seq
                if seq is not None and seq < from_seq:
                    continue
                if seq is not None and to_seq is not None and seq > to_seq:
                    self._close_tail(rep, expected_next, untrusted, to_seq)
                    if batch:
                        yield batch
                    return
                event = checked.event
                if event is None:
                    expected_next, untrusted = self._refused(
                        rep, checked, name, line_no, expected_next, untrusted
                    )
                    continue
                self._advance(rep, expected_next, event.seq, name, line_no, untrusted)
                expected_next = event.seq + 1
                untrusted = 0
                if event.gen not in rep.generations_seen:
                    rep.generations_seen.append(event.gen)
                if checked.problem == "generation_mismatch":
                    rep.generation_mismatch_lines += 1
                    rep.note(
                        "generation_mismatch",
                        f"seq {event.seq}: {checked.detail}",
                        name,
                        line_no,
                        event.seq,
                    )
                    rep.skip(event.seq, event.seq)
                    continue
                rep.events_read += 1
                batch.append(event)
                if len(batch) >= batch_size:
                    yield batch
                    batch = []
        self._close_tail(rep, expected_next, untrusted, to_seq)
        if batch:
            yield batch

    def _lines(self, path: Path, is_last: bool, rep: ReadReport) -> list[bytes]:
        """The lines of one segment; a torn last line of the last segment is dropped (and
        reported), of an earlier one kept for the line check to judge."""
        # Guarded: a symlinked or non-regular segment (a FIFO) is refused, never read.
        with open_regular(path, max_bytes=self.max_segment_bytes) as fh:
            data = fh.read()
        lines = data.split(b"\n")
        # The element after the final newline is b"" for a whole file; anything else is torn.
        tail = lines.pop()
        if tail:
            if is_last:
                rep.torn_tail = True
            else:
                lines.append(tail)
        return lines

    def _refused(
        self,
        rep: ReadReport,
        checked: CheckedLine,
        name: str,
        line_no: int,
        expected_next: int,
        untrusted: int,
    ) -> tuple[int, int]:
        """Report a line the check refused; the next expected seq and the count of untrusted
        lines after it (a line whose seq cannot be trusted is one more)."""
        seq = checked.seq
        problem = checked.problem or "unparseable"
        setattr(rep, f"{problem}_lines", getattr(rep, f"{problem}_lines") + 1)
        where = "" if seq is None else f"seq {seq}: "
        rep.note(problem, where + checked.detail, name, line_no, seq)
        if seq is None or problem == "corrupt":
            return expected_next, untrusted + 1
        self._advance(rep, expected_next, seq, name, line_no, untrusted)
        rep.skip(seq, seq)
        return max(expected_next, seq + 1), 0

    @staticmethod
    def _advance(
        rep: ReadReport, expected: int, seq: int, file: str, line_no: int, untrusted: int = 0
    ) -> None:
        """Count a gap (and skip its seqs) or a regression before a line of ``seq``.

        A hole no wider than the bad lines just before it is theirs (each already counted in
        its class): its seqs are skipped, but it is not counted again as a gap.
        """
        if expected < seq <= expected + untrusted:
            rep.skip(expected, seq - 1)
        elif seq > expected:
            rep.seq_gaps += 1
            rep.note("seq_gap", f"seq {seq} after {expected - 1}", file, line_no, seq)
            rep.skip(expected, seq - 1)
        elif seq < expected:
            rep.seq_regressions += 1
            rep.note("seq_regression", f"seq {seq} after {expected - 1}", file, line_no, seq)

    @staticmethod
    def _close_tail(rep: ReadReport, expected: int, untrusted: int, to_seq: int | None) -> None:
        """Bad lines after the last good one each stood for a seq: count them as skipped."""
        rep.resume_seq = max(rep.resume_seq, expected + untrusted)
        if untrusted:
            last = expected + untrusted - 1
            rep.skip(expected, last if to_seq is None else min(last, to_seq))

    def last_seq(self) -> int | None:
        """The seq of the last complete line of the stream, or ``None`` if it has none."""
        for seg in reversed(list_segments(self.group_dir)):
            tail = read_tail(seg.path)
            if tail.last_line is None:
                continue
            seq = decode_line(tail.last_line).seq
            if seq is not None:
                return seq
        return None
