"""``lcg wal``: look at the workspace's streams directly: list, tail, verify."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

import msgspec

from lcg.cli._common import (
    add_command,
    add_group_option,
    add_json_option,
    config_from,
    emit_json,
    format_table,
    group_dir,
    non_negative,
    selected_groups,
)
from lcg.events import (
    GENERATION_FILE,
    GenerationSource,
    LineSample,
    ReadReport,
    StreamReader,
    decode_line,
    encode_event,
    list_segments,
    read_bounds,
    stream_generation,
)

__all__ = ["GroupInfo", "VerifyResult", "register"]


class GroupInfo(msgspec.Struct, kw_only=True):
    """One row of ``lcg wal ls --json``."""

    group_id: str
    directory: str
    min_seq: int | None
    max_seq: int | None
    generation: str | None
    generation_source: GenerationSource | None
    files: int
    bytes: int


class VerifyResult(msgspec.Struct, kw_only=True):
    """One group's result in ``lcg wal verify --json``; ``ok`` is false on any defect."""

    group_id: str
    ok: bool
    events: int
    min_seq: int | None
    max_seq: int | None
    files: int
    generation: str | None
    generation_source: GenerationSource | None
    generations_seen: list[str]
    unparseable_lines: int
    unrecognised_lines: int
    failed_lines: int
    generation_mismatch_lines: int
    #: Lines whose checksum fails, or that lack one after lines that carry one.
    corrupt_lines: int
    seq_gaps: int
    seq_regressions: int
    #: Inclusive ``[first, last]`` ranges of the seqs a replay would skip.
    skipped_seqs: list[tuple[int, int]]
    torn_tail: bool
    defects: list[str]
    warnings: list[str]
    samples: list[LineSample]


def _generation(gdir: Path) -> tuple[str | None, GenerationSource | None]:
    witnesses = stream_generation(gdir)
    return witnesses.effective, witnesses.source


def _info(group_id: str, gdir: Path) -> GroupInfo:
    bounds = read_bounds(gdir)
    generation, source = _generation(gdir)
    return GroupInfo(
        group_id=group_id,
        directory=gdir.name,
        min_seq=bounds.min_seq,
        max_seq=bounds.max_seq,
        generation=generation,
        generation_source=source,
        files=bounds.file_count,
        bytes=bounds.byte_size,
    )


def _ls(args: argparse.Namespace) -> int:
    config = config_from(args, existing=True)
    infos = [_info(g, group_dir(config, g)) for g in selected_groups(config, args.group)]
    if args.json:
        emit_json(infos)
        return 0
    if not infos:
        print(f"no streams under {config.wal_dir}")
        return 0
    rows = [(i.group_id, i.min_seq, i.max_seq, i.generation, i.files, i.bytes) for i in infos]
    print(format_table(["GROUP", "MIN_SEQ", "MAX_SEQ", "GENERATION", "FILES", "BYTES"], rows))
    return 0


def _print_events(reader: StreamReader, from_seq: int) -> int:
    """Print the lines from ``from_seq`` on; return the seq after the last one printed."""
    next_seq = from_seq
    out = sys.stdout
    for event in reader.events(from_seq):
        out.write(encode_event(event).decode())
        next_seq = event.seq + 1
    out.flush()
    return next_seq


#: Signals that end ``lcg wal tail --follow`` normally (exit 0).
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _tail(args: argparse.Namespace) -> int:
    config = config_from(args, existing=True)
    gdir = group_dir(config, args.group)
    reader = StreamReader(gdir)
    last = reader.last_seq()
    start = 0 if last is None else max(0, last + 1 - args.lines)
    next_seq = _print_events(reader, start) if args.lines else (0 if last is None else last + 1)
    if not args.follow:
        return 0
    # Imported here: only ``--follow`` needs the file watcher.
    import threading

    import watchfiles

    # Ctrl-C and SIGTERM set an event the watcher checks every step, so the command stops
    # between two reads instead of wherever a KeyboardInterrupt would land.
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in _STOP_SIGNALS}
    try:
        # A timeout also re-reads the stream: a missed file event delays a line, never loses it.
        for _ in watchfiles.watch(
            gdir,
            debounce=50,
            step=20,
            recursive=False,
            rust_timeout=1000,
            yield_on_timeout=True,
            stop_event=stop,
            raise_interrupt=False,
        ):
            next_seq = _print_events(reader, next_seq)
            if stop.is_set():
                break
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _verify_group(group_id: str, gdir: Path) -> VerifyResult:
    generation, source = _generation(gdir)
    report = ReadReport()
    events = 0
    min_seq: int | None = None
    max_seq: int | None = None
    for event in StreamReader(gdir, generation=generation).events(report=report):
        events += 1
        min_seq = event.seq if min_seq is None else min_seq
        max_seq = event.seq
    defects: list[str] = []
    warnings: list[str] = []
    segments = list_segments(gdir)
    for seg in segments:
        with open(seg.path, "rb") as fh:
            first_line = fh.readline()
        first = decode_line(first_line).seq if first_line.endswith(b"\n") else None
        if first is not None and first != seg.first_seq:
            defects.append(
                f"{seg.path.name} is named for seq {seg.first_seq} but its first line is seq "
                f"{first}"
            )
    if min_seq is not None and min_seq != 0:
        defects.append(f"the stream starts at seq {min_seq}, not 0")
    if report.seq_gaps:
        defects.append(f"{report.seq_gaps} seq gap(s)")
    if report.seq_regressions:
        defects.append(f"{report.seq_regressions} seq regression(s)")
    for counter in (
        "unparseable_lines",
        "unrecognised_lines",
        "failed_lines",
        "generation_mismatch_lines",
        "corrupt_lines",
    ):
        n = getattr(report, counter)
        if n:
            defects.append(f"{n} {counter.replace('_', ' ')}")
    if len(report.generations_seen) > 1:
        defects.append(f"lines of {len(report.generations_seen)} generations")
    if source == "lines":
        warnings.append(f"{GENERATION_FILE} is missing; the next writer restores it from the lines")
    if report.torn_tail:
        warnings.append(
            "the last line is torn (a write that never completed); the next writer cuts it"
        )
    return VerifyResult(
        group_id=group_id,
        ok=not defects,
        events=events,
        min_seq=min_seq,
        max_seq=max_seq,
        files=len(segments),
        generation=generation,
        generation_source=source,
        generations_seen=report.generations_seen,
        unparseable_lines=report.unparseable_lines,
        unrecognised_lines=report.unrecognised_lines,
        failed_lines=report.failed_lines,
        generation_mismatch_lines=report.generation_mismatch_lines,
        corrupt_lines=report.corrupt_lines,
        seq_gaps=report.seq_gaps,
        seq_regressions=report.seq_regressions,
        skipped_seqs=report.skipped_seqs,
        torn_tail=report.torn_tail,
        defects=defects,
        warnings=warnings,
        samples=report.samples,
    )


def _verify(args: argparse.Namespace) -> int:
    config = config_from(args, existing=True)
    results = [_verify_group(g, group_dir(config, g)) for g in selected_groups(config, args.group)]
    if args.json:
        emit_json(results)
    elif not results:
        print(f"no streams under {config.wal_dir}")
    for r in [] if args.json else results:
        span = "empty" if r.max_seq is None else f"seq {r.min_seq}..{r.max_seq}"
        state = "ok" if r.ok else "DEFECT"
        print(
            f"{r.group_id}: {state} - {r.events} events ({span}), {r.files} file(s), "
            f"generation {r.generation or 'unknown'}"
        )
        for defect in r.defects:
            print(f"  defect: {defect}")
        for warning in r.warnings:
            print(f"  warning: {warning}")
        if r.skipped_seqs:
            spans = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in r.skipped_seqs)
            print(f"  skipped seqs: {spans}")
        for s in r.samples:
            # A line no projection can apply is named by seq as well as by place (ADR 0150).
            seq = "" if s.seq is None else f" (seq {s.seq})"
            print(f"  {s.problem} x{s.count} at {s.file}:{s.line_no}{seq}: {s.detail}")
    return 0 if all(r.ok for r in results) else 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg wal`` and its subcommands."""
    wal = subparsers.add_parser(
        "wal",
        help="inspect the event streams (WAL) of the workspace",
        description="Inspect the event streams (WAL) of the workspace, directly on its files.",
        epilog="Example:\n  lcg wal ls\n  lcg wal tail --group notes -n 5\n  lcg wal verify",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    wal.set_defaults(func=None, _parser=wal)
    sub = wal.add_subparsers(dest="wal_command", metavar="COMMAND")

    ls = add_command(
        sub,
        "ls",
        summary="List the groups with their seq bounds, generation, files and bytes.",
        example="""
            $ lcg wal ls
            GROUP    MIN_SEQ  MAX_SEQ  GENERATION                        FILES  BYTES
            notes    0        41       6f1c0a3e5b8d4e2f9a7c1b0d3e5f7a9c  1      18532
        """,
        func=_ls,
    )
    add_group_option(ls, every=True)
    add_json_option(ls)

    tail = add_command(
        sub,
        "tail",
        summary="Print the last lines of a group's stream, oldest first.",
        details="""
            Events are printed as JSON, one per line, as this build decodes them (an older
            version upcast to the current one; lines that cannot be applied are skipped and
            counted by `lcg wal verify`). With --follow, new lines are printed as they are
            appended, until Ctrl-C.
        """,
        example="""
            $ lcg wal tail --group notes -n 1
            {"type":"EpisodeAdded","seq":41,"ts":"2024-05-01T12:00:00.000000Z",...}
            $ lcg wal tail --group notes --follow
        """,
        func=_tail,
    )
    add_group_option(tail, every=False)
    tail.add_argument(
        "-n", "--lines", type=non_negative, default=10, metavar="N", help="lines to print"
    )
    tail.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")

    verify = add_command(
        sub,
        "verify",
        summary="Check streams: seq contiguity, generation consistency, bad-line counts.",
        details="""
            Exits 1 if any group has a defect: a seq gap or regression, a stream not starting
            at 0, a file not named by its first seq, lines of two generations, or lines that
            cannot be applied (unparseable, unrecognised, failed, other generation, corrupt:
            a checksum that does not match, each reported by seq and file:line). A torn
            last line and a missing generation sidecar are warnings: the next writer repairs
            them.
        """,
        example="""
            $ lcg wal verify
            notes: ok - 42 events (seq 0..41), 1 file(s), generation 6f1c0a3e...
        """,
        func=_verify,
    )
    add_group_option(verify, every=True)
    add_json_option(verify)
