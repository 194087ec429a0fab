"""A publication directory read as a ``Source``: a git clone, a shared folder, a copy.

The directory holds ``<encoded group>/`` stream directories. It is someone else's input
(ADR 0154), read without any lock and never trusted:

* the root is listed, never walked (``replication.scan``); a group directory is judged by
  ``lstat`` on every pass - a symlinked one stops that group;
* every file is opened guarded (``events.guarded``: never through a link, regular files only,
  within ``ReadLimits``), and the verifying tail-reader (``events.tail.VerifiedTail``, this
  source's ``GroupCursor``) reads complete lines only, in bounded chunks, re-hashing a
  verified prefix whenever a file's stat changes;
* ``.wal-generation.json`` is read strictly: unsafe, oversized or malformed stops the group,
  as does a sidecar naming another generation than the first line (a partial copy);
* the watcher watches the root and each real group directory, not recursively, and is set up
  again when the group directories change: a symlink out of the publication is never walked.

What the follower verified is kept in ``.lcg/replica/<group>.json`` of the replica's own
workspace (``replication.verified``), so a restart notices bytes changed in place since.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from lcg.errors import GenerationError, StreamError
from lcg.events import (
    BOUNDS_FILE,
    GENERATION_FILE,
    SEGMENT_DIGITS,
    SEGMENT_SUFFIX,
    ReadLimits,
    TailDefect,
    VerifiedTail,
    check_real_dir,
    decode_line,
    encode_group,
    list_segments,
    read_tail,
    stream_generation,
)
from lcg.replication.scan import PublicationScan, scan_publication
from lcg.replication.transport import GroupCursor, SourceTail
from lcg.replication.verified import load_saved, save_verified

__all__ = ["TreeSource"]

log = logging.getLogger(__name__)


class TreeSource:
    """A directory of group streams, read as untrusted input (a ``Source``)."""

    def __init__(
        self, root: Path, *, limits: ReadLimits | None = None, label: str | None = None
    ) -> None:
        #: The publication directory (a replica's ``.lcg/wal``, a link to it, is fine).
        self.root = root
        #: The bounds every file of the publication is read under.
        self.limits = limits or ReadLimits()
        self._label = label or str(root)

    @property
    def label(self) -> str:
        """The publication, as statuses name it."""
        return self._label

    def group_dir(self, group_id: str) -> Path:
        """Where ``group_id``'s stream lives in the publication."""
        return self.root / encode_group(group_id)

    # ---- the groups and their generations ---------------------------------------------------

    def list_groups(self) -> PublicationScan:
        """List the root once (no entry is followed or opened)."""
        return scan_publication(self.root)

    def generation(self, group_id: str) -> str | None:
        """The group's effective generation; a link, a split or a bad sidecar stops it."""
        gdir = self.group_dir(group_id)
        # A symlinked group directory would be read wherever it points (outside the root).
        check_real_dir(gdir)
        try:
            witnesses = stream_generation(gdir, limits=self.limits)
        except GenerationError as exc:
            raise TailDefect(
                f"group {group_id!r}: {exc}; the replica stops this group rather than guess "
                "its generation - the publisher must republish it (`lcg publish` rewrites "
                "the sidecar)"
            ) from None
        if witnesses.split:
            sidecar, lines = witnesses.sidecar, witnesses.lines
            raise TailDefect(
                f"the publication of group {group_id!r} mixes generations: {GENERATION_FILE} "
                f"names {sidecar!r} but its first line carries {lines!r}; it was copied "
                "partially or by hand - the publisher must republish the whole directory "
                "(`lcg publish --reset` if the stream was replaced)"
            )
        return witnesses.effective

    # ---- cursors ----------------------------------------------------------------------------

    def cursor(self, group_id: str, generation: str | None = None) -> VerifiedTail:
        """A tail-reader at the start of the group's directory."""
        gdir = self.group_dir(group_id)
        check_real_dir(gdir)
        return VerifiedTail(group_id, gdir, generation, limits=self.limits)

    def resume(self, group_id: str, generation: str, state_dir: Path) -> VerifiedTail:
        """A tail-reader past the prefixes a previous run verified, once they re-hash the same.

        Without them a restarted replica could re-verify seqs and generations but not notice
        that bytes it applied before were since changed in place.
        """
        track = self.cursor(group_id)
        saved = load_saved(state_dir, group_id)
        if saved is None or saved.generation != generation:
            return track  # purged, reset or never applied: the saved marks say nothing now
        if self.generation(group_id) != saved.generation:
            return track  # a reset: handled by the pass
        for entry in saved.files:
            if not _is_segment_name(entry.name):
                return self.cursor(group_id)  # not marks of ours
            try:
                track.restore(entry.name, entry.consumed, entry.lines, bytes.fromhex(entry.digest))
            except FileNotFoundError:
                raise TailDefect(
                    f"segment {entry.name} of group {group_id!r} disappeared from the "
                    "publication since this replica last ran, while the generation stayed the "
                    "same; a stream is append-only - the publisher must publish a reset as a "
                    "new generation (`lcg publish --reset`)"
                ) from None
        track.generation = saved.generation
        track.next_seq = saved.next_seq
        track.lines.checksummed = saved.checksummed
        return track

    def save(self, cursor: GroupCursor, state_dir: Path) -> None:
        """Save the prefixes ``cursor`` verified (``.lcg/replica/<group>.json``)."""
        if isinstance(cursor, VerifiedTail):
            save_verified(state_dir, cursor)

    # ---- lag --------------------------------------------------------------------------------

    def tail(self, group_id: str) -> SourceTail:
        """The seq and ``ts`` of the publication's last complete line (empty if none).

        Read guarded and bounded: a group stopped for a symlink, a FIFO or a huge file has
        no known tail, and the lag of the others is still computed.
        """
        group_dir = self.group_dir(group_id)
        try:
            check_real_dir(group_dir)
            segments = list_segments(group_dir)
        except (StreamError, OSError):
            return SourceTail()
        for seg in reversed(segments):
            try:
                tail = read_tail(seg.path, max_line_bytes=self.limits.max_line_bytes)
            except FileNotFoundError:
                continue
            except (StreamError, OSError):
                return SourceTail()
            if tail.last_line is None:
                continue
            decoded = decode_line(tail.last_line)
            if decoded.seq is not None:
                ts = decoded.event.ts if decoded.event is not None else None
                return SourceTail(decoded.seq, ts)
        return SourceTail()

    # ---- watching ---------------------------------------------------------------------------

    def relevant(self, path: str) -> bool:
        """Whether a changed path can change what the follower applies."""
        p = Path(path)
        for root in (self.root, self.root.resolve()):
            try:
                rel = p.relative_to(root)
                break
            except ValueError:
                continue
        else:
            return False
        parts = rel.parts
        if not parts or parts[0].startswith("."):
            return False  # .git and other dot-dirs of the publication root
        if len(parts) == 1:
            return True  # a group directory appeared or went away
        name = parts[-1]
        return (
            len(parts) == 2
            and (name.endswith(SEGMENT_SUFFIX) or name == GENERATION_FILE)
            and name != BOUNDS_FILE
        )

    def watched(self, groups: Sequence[str]) -> dict[Path, int]:
        """What the watcher watches: the root and each real group directory, by inode."""
        root = self.root.resolve()
        paths = [root, *(root / encode_group(g) for g in groups)]
        out: dict[Path, int] = {}
        for path in paths:
            try:
                st = os.lstat(path)
            except OSError:
                continue
            # Never a symlink: a watch follows it, and a link to / would walk the disk.
            if stat.S_ISDIR(st.st_mode):
                out[path] = st.st_ino
        return out

    def changes(
        self,
        groups: Callable[[], Sequence[str]],
        stop: threading.Event,
        *,
        step_ms: int,
        rescan_ms: int,
    ) -> Iterator[None]:
        """Yield after each batch of relevant changes (and every ``rescan_ms``) until ``stop``.

        Changes are grouped until ``step_ms`` pass without another (the debounce). The watch
        is not recursive (``watched``) and is set up again when the group directories change
        (checked after the caller's pass, which may follow new groups).
        """
        import watchfiles

        self.root.mkdir(parents=True, exist_ok=True)
        while not stop.is_set():
            watched = self.watched(groups())
            try:
                for _changes in watchfiles.watch(
                    *watched,
                    watch_filter=lambda _change, path: self.relevant(path),
                    debounce=max(step_ms * 10, 500),
                    step=step_ms,
                    stop_event=stop,
                    rust_timeout=rescan_ms,
                    yield_on_timeout=True,
                    raise_interrupt=False,
                    recursive=False,
                ):
                    if stop.is_set():
                        break
                    yield
                    if self.watched(groups()) != watched:
                        break  # a group directory appeared, went or was replaced: watch anew
            except OSError as exc:
                # A directory went away between listing and watching (a pull): list again.
                log.debug("watch of %s failed (%s); watching anew", self.root, exc)
                if stop.wait(step_ms / 1000):
                    break
                yield


def _is_segment_name(name: str) -> bool:
    """Whether ``name`` is a segment file name (saved marks name nothing else)."""
    stem = name[: -len(SEGMENT_SUFFIX)]
    return name.endswith(SEGMENT_SUFFIX) and len(stem) == SEGMENT_DIGITS and stem.isdigit()
