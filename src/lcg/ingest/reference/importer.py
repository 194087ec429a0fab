"""``lcg import-reference``: bring a reference workspace's groups into this workspace.

1. Find the reference's group streams (``layout``) and refuse, before any work, a group this
   workspace already has a stream for, unless ``force``.
2. Read every chosen group's lines into one in-memory model of the reference's tables
   (``replay``; one model, so a cross-group hop finds its endpoint): each line is parsed
   against the documented templates and applied as parsed values, never executed (ADR 0194).
   One stream given alone (a dump of every group, a flat root: ``by_row``) is read whole
   first; its groups are those its rows name, each row going to its own (ADR 0212), and the
   refusal of step 1 comes after that read. Its lines are counted once, with the first group.
3. Look up, in the workspace, the uuids the import would write: a row whose uuid another group
   holds is refused (``foreign``). Then read each group's rows as our events (``rows``), as
   ``lcg dump`` would write them.
4. If anything could not be mapped and the loss is not accepted, stop there: nothing is
   written, the report says what and where.
5. Write each group's events as a new stream with a fresh generation into a temporary root
   beside the workspace's streams (the way ``dump`` writes), then, holding the workspace
   lock, put each group's directory in place (a replaced group's old stream is removed).
6. Open the workspace: the catch-up applies the new streams (a replaced group's projections
   see a new generation: a reset, purged and replayed in full), embedding the text again.

It runs without a service (the caller refuses while one answers): the service holds the
workspace, and a stream replaced under it would be a reset it must notice (issue 19 item 7).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from lcg.config import Config
from lcg.errors import LcgError
from lcg.events import (
    LCG_DIR,
    Event,
    WalStore,
    encode_group,
    fsync_dir,
    list_groups,
    private_dir,
    remove_tree,
    rename_into_place,
)
from lcg.ingest.reference import layout
from lcg.ingest.reference.foreign import held_elsewhere
from lcg.ingest.reference.model import ReferenceGraph
from lcg.ingest.reference.replay import LineReport, replay
from lcg.ingest.reference.rows import (
    events_of_group,
    groups_of_rows,
    rows_of_groups,
    rows_of_no_group,
    rows_of_other_groups,
)
from lcg.projections import ProgressFn
from lcg.workspace import writing_offline

__all__ = ["GroupImport", "ImportResult", "Skipped", "import_reference"]

_PAGE = 500


class Skipped(msgspec.Struct, kw_only=True):
    """A sample of something not mapped: why, where, and the detail."""

    reason: str
    where: str
    detail: str


class GroupImport(msgspec.Struct, kw_only=True):
    """What the import did with one reference group. Of a stream routed by row (a dump of
    every group), every group counts the stream's files, and the first its lines."""

    group_id: str
    files: int
    lines: int
    lines_replayed: int
    entities: int = 0
    edges: int = 0
    episodes: int = 0
    mentions: int = 0
    events_written: int = 0
    replaced: bool = False
    generation: str | None = None
    #: Things not mapped, by reason (lines and rows); ``samples`` shows a few of each.
    unmapped: dict[str, int] = {}
    samples: list[Skipped] = []
    #: Read and not carried on purpose (vectors are recomputed, index statements, the
    #: direct Entity->Entity copy of each edge, deletes that found nothing, seq regressions).
    not_carried: dict[str, int] = {}


class ImportResult(msgspec.Struct, kw_only=True):
    """The outcome of ``lcg import-reference``."""

    success: bool
    written: bool
    source: str
    #: ``multi-group``, ``flat`` or ``stream`` (one directory given alone, e.g. a dump).
    layout: str
    #: Whether each row went to the group its own ``group_id`` names (``flat``, ``stream``).
    routed_by_row: bool = False
    groups: list[GroupImport]
    unmapped_total: int = 0
    loss_accepted: bool = False
    duration_ms: int = 0
    message: str = ""


LinesFn = Callable[[int, int, str], None]


def _chosen(found: list[str], groups: list[str] | None, root: Path) -> list[str]:
    if not groups:
        return sorted(found)
    missing = [g for g in groups if g not in found]
    if missing:
        names = ", ".join(sorted(found)) or "none"
        raise LcgError(f"no reference group {', '.join(missing)} under {root} (found: {names})")
    return list(dict.fromkeys(groups))


def _existing(config: Config, groups: list[str]) -> list[str]:
    present = set(list_groups(config.wal_dir))
    return [g for g in groups if g in present]


def _refuse_existing(config: Config, groups: list[str]) -> None:
    existing = _existing(config, groups)
    if existing:
        names = ", ".join(repr(g) for g in existing)
        which = (
            f"group {names} already exists"
            if len(existing) == 1
            else (f"groups {names} already exist")
        )
        raise LcgError(
            f"{which} in the workspace {config.workspace}; pass --force to replace its stream "
            "with the imported one (the current stream and its marks are removed)"
        )


def _group_result(group_id: str, files: int, report: LineReport) -> GroupImport:
    return GroupImport(
        group_id=group_id,
        files=files,
        lines=report.lines,
        lines_replayed=report.replayed,
        unmapped=dict(sorted(report.unmapped.items())),
        samples=[Skipped(reason=s.reason, where=s.where, detail=s.detail) for s in report.samples],
        not_carried=dict(sorted(report.notes.items())),
    )


def _read(
    streams: layout.ReferenceStreams, names: list[str], on_lines: LinesFn | None
) -> tuple[ReferenceGraph, dict[str, LineReport]]:
    """The lines of the streams ``names`` replayed into one model; each stream's report."""
    graph = ReferenceGraph()
    reports: dict[str, LineReport] = {}
    total = sum(layout.count_lines(streams.groups[g]) for g in names)
    done = 0
    for name in names:
        report = reports[name] = LineReport()

        def tick(n: int, name: str = name) -> None:
            nonlocal done
            done += n
            if on_lines is not None:
                on_lines(done, total, name)

        # Streamed: a reference line carries its vectors, a few kB each.
        replay(graph, layout.read_lines(streams.groups[name]), report, tick)
    return graph, reports


def _translate(
    config: Config,
    streams: layout.ReferenceStreams,
    read: tuple[ReferenceGraph, dict[str, LineReport]],
    found: list[str],
    chosen: list[str],
    progress: ProgressFn | None,
) -> tuple[dict[str, list[Event]], list[GroupImport]]:
    graph, reports = read
    foreign = held_elsewhere(config, rows_of_groups(graph, chosen), chosen, progress)
    events: dict[str, list[Event]] = {}
    results: list[GroupImport] = []
    orphans = LineReport()
    rows_of_no_group(graph, found, orphans)
    [stream] = streams.groups if streams.by_row else [None]
    for group_id in chosen:
        first = group_id == chosen[0]
        if stream is None:
            report, files = reports[group_id], streams.groups[group_id]
        else:  # one stream of every group: its lines are counted once, with the first
            report = reports[stream] if first else LineReport()
            files = streams.groups[stream]
            if first:
                report.note("rows_of_groups_not_chosen", rows_of_other_groups(graph, found, chosen))
        if first:  # rows no group owns are reported once, with the first
            for s in orphans.samples:
                report.samples.append(s)
            for reason, n in orphans.unmapped.items():
                report.unmapped[reason] = report.unmapped.get(reason, 0) + n
        group_events, counts = events_of_group(graph, group_id, report, foreign)
        events[group_id] = group_events
        result = _group_result(group_id, len(files), report)
        result.entities, result.edges = counts.entities, counts.edges
        result.episodes, result.mentions = counts.episodes, counts.mentions
        result.events_written = len(group_events)
        results.append(result)
    return events, results


def _write_streams(config: Config, events: dict[str, list[Event]], tmp: Path) -> dict[str, str]:
    """Each group's events as a new stream (fresh generation) under ``tmp``; generations."""
    store = WalStore(
        tmp, fsync="batch", max_events_per_file=config.wal_max_events_per_file, max_bytes_per_file=0
    )
    generations: dict[str, str] = {}
    try:
        for group_id, group_events in events.items():
            for start in range(0, len(group_events), _PAGE):
                store.append(group_id, group_events[start : start + _PAGE])
            writer = store.writer(group_id)  # an empty group still gets a stream
            writer.sync()
            generations[group_id] = writer.generation
    finally:
        store.close()
    for gdir in tmp.iterdir():
        fsync_dir(gdir)
    return generations


def _put_in_place(config: Config, groups: list[str], tmp: Path, force: bool) -> list[str]:
    """Move each group's new stream from ``tmp`` into the workspace; the groups replaced."""
    lcg_dir = config.workspace / LCG_DIR
    private_dir(lcg_dir)
    replaced: list[str] = []
    with writing_offline(lcg_dir):
        if not force:
            _refuse_existing(config, groups)  # again, now that no one else can write
        private_dir(config.wal_dir)
        for group_id in groups:
            name = encode_group(group_id)
            dest = config.wal_dir / name
            if dest.exists():
                remove_tree(dest)
                replaced.append(group_id)
            rename_into_place(tmp / name, dest, sync_dir=False)
        fsync_dir(config.wal_dir)
    return replaced


def _tmp_prefix(wal_dir: Path) -> str:
    return f".{wal_dir.name}.import-"


def _sweep_dead_imports(wal_dir: Path) -> None:
    """Remove the temporary roots of imports whose process is gone (killed midway)."""
    prefix = _tmp_prefix(wal_dir)
    for entry in wal_dir.parent.iterdir():
        pid = entry.name[len(prefix) : -len(".tmp")]
        if not (entry.name.startswith(prefix) and entry.name.endswith(".tmp") and pid.isdigit()):
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            remove_tree(entry, durable=False)
        except PermissionError:
            continue  # another user's live process


def import_reference(
    config: Config,
    source: Path,
    *,
    groups: list[str] | None = None,
    force: bool = False,
    accept_loss: bool = False,
    on_lines: LinesFn | None = None,
    progress: ProgressFn | None = None,
) -> ImportResult:
    """Import the reference streams under ``source`` into ``config``'s workspace."""
    from lcg.workspace import Workspace

    started = time.monotonic()
    streams = layout.find_streams(source)
    if streams.by_row:
        # One stream of any number of groups: its groups are known once it is read.
        read = _read(streams, list(streams.groups), on_lines)
        found = groups_of_rows(read[0]) or list(streams.groups)
        chosen = _chosen(found, groups, streams.root)
        if not force:
            _refuse_existing(config, chosen)
    else:
        chosen = found = _chosen(list(streams.groups), groups, streams.root)
        if not force:
            _refuse_existing(config, chosen)
        read = _read(streams, chosen, on_lines)
    events, results = _translate(config, streams, read, found, chosen, progress)
    lost = sum(sum(r.unmapped.values()) for r in results)
    result = ImportResult(
        success=lost == 0 or accept_loss,
        written=False,
        source=str(streams.root),
        layout=streams.layout,
        routed_by_row=streams.by_row,
        groups=results,
        unmapped_total=lost,
        loss_accepted=bool(lost) and accept_loss,
    )
    if lost and not accept_loss:
        result.message = (
            f"{lost} line(s) or row(s) could not be mapped; nothing was written. Rerun with "
            "--accept-loss to import the rest"
        )
        result.duration_ms = int((time.monotonic() - started) * 1000)
        return result
    config.wal_dir.parent.mkdir(parents=True, exist_ok=True)
    _sweep_dead_imports(config.wal_dir)
    tmp = config.wal_dir.parent / f"{_tmp_prefix(config.wal_dir)}{os.getpid()}.tmp"
    remove_tree(tmp, durable=False)
    tmp.mkdir(mode=0o700)
    try:
        generations = _write_streams(config, events, tmp)
        replaced = _put_in_place(config, chosen, tmp, force)
    finally:
        with contextlib.suppress(OSError):  # the failure being raised is the one to report
            remove_tree(tmp, durable=False)
    for r in results:
        r.generation = generations.get(r.group_id)
        r.replaced = r.group_id in replaced
    result.written = True
    with Workspace.open(config, catch_up=False) as ws:
        applied = ws.catch_up(progress)
    failed = [
        g for g in chosen if g not in applied or not applied[g].success or applied[g].failed_lines
    ]
    if failed:
        result.success = False
        result.message = (
            f"the imported stream of {', '.join(failed)} did not apply cleanly; inspect it with "
            "`lcg wal verify`"
        )
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result
