"""``lcg mark``: create, list and delete marks (named checkpoints) of a group's stream."""

from __future__ import annotations

import argparse

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
)
from lcg.errors import MarkError
from lcg.events.bounds import read_bounds
from lcg.events.generation import read_generation
from lcg.events.marks import create_mark, delete_mark, list_marks
from lcg.events.reader import generation_from_lines

__all__ = ["CreatedMark", "register"]


class CreatedMark(msgspec.Struct, kw_only=True):
    """The output of ``lcg mark create --json``."""

    success: bool
    name: str
    group_id: str
    seq: int | None
    generation: str | None


def _create(args: argparse.Namespace) -> int:
    config = config_from(args, existing=True)
    gdir = group_dir(config, args.group)
    bounds = read_bounds(gdir)
    seq: int | None = args.seq
    if seq is None:
        seq = bounds.max_seq
    elif bounds.max_seq is None or seq > bounds.max_seq:
        raise MarkError(
            f"--seq {seq} is past the end of group {args.group!r}'s stream "
            f"(max seq {bounds.max_seq})"
        )
    generation = read_generation(gdir) or generation_from_lines(gdir)
    record = create_mark(gdir, args.name, seq, generation)
    if args.json:
        emit_json(
            CreatedMark(
                success=True, name=record.name, group_id=args.group, seq=seq, generation=generation
            )
        )
    else:
        where = "an empty stream" if seq is None else f"seq {seq}"
        print(f"created mark {record.name!r} at {where} of group {args.group!r}")
    return 0


def _list(args: argparse.Namespace) -> int:
    config = config_from(args, existing=True)
    gdir = group_dir(config, args.group)
    bounds = read_bounds(gdir)
    generation = read_generation(gdir) or generation_from_lines(gdir)
    marks = list_marks(
        gdir, wal_min_seq=bounds.min_seq, wal_max_seq=bounds.max_seq, generation=generation
    )
    if args.json:
        emit_json({"group_id": args.group, "checkpoints": marks})
    elif not marks:
        print(f"no marks in group {args.group!r}")
    else:
        rows = [(m.name, m.seq, "yes" if m.reachable else "no", m.generation) for m in marks]
        print(format_table(["NAME", "SEQ", "REACHABLE", "GENERATION"], rows))
    return 0


def _delete(args: argparse.Namespace) -> int:
    config = config_from(args, existing=True)
    delete_mark(group_dir(config, args.group), args.name)
    if args.json:
        emit_json({"success": True, "name": args.name, "group_id": args.group})
    else:
        print(f"deleted mark {args.name!r} of group {args.group!r}")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg mark`` and its subcommands."""
    mark = subparsers.add_parser(
        "mark",
        help="create, list and delete marks (named checkpoints) of a stream",
        description="Create, list and delete marks: named seqs of a group's stream.",
        epilog="Example:\n  lcg mark create before-import\n  lcg mark list",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mark.set_defaults(func=None, _parser=mark)
    sub = mark.add_subparsers(dest="mark_command", metavar="COMMAND")

    create = add_command(
        sub,
        "create",
        summary="Create a mark at a seq of the stream (default: its last seq).",
        details="""
            Names are 1-200 characters of A-Z, a-z, 0-9, _ and -. A name that is already
            active is refused; a deleted name can be created again. The mark records the
            stream's generation, so it stops being reachable if the stream is replaced.
        """,
        example="""
            $ lcg mark create before-import
            created mark 'before-import' at seq 41 of group 'liminis'
        """,
        func=_create,
    )
    create.add_argument("name", help="the mark's name")
    create.add_argument(
        "--seq", type=non_negative, default=None, metavar="N", help="the seq to mark"
    )
    add_group_option(create, every=False)
    add_json_option(create)

    ls = add_command(
        sub,
        "list",
        summary="List a group's active marks, with whether each is still reachable.",
        example="""
            $ lcg mark list
            NAME           SEQ  REACHABLE  GENERATION
            before-import  41   yes        6f1c0a3e5b8d4e2f9a7c1b0d3e5f7a9c
        """,
        func=_list,
    )
    add_group_option(ls, every=False)
    add_json_option(ls)

    delete = add_command(
        sub,
        "delete",
        summary="Delete a mark (a tombstone is written; the name can be reused).",
        example="""
            $ lcg mark delete before-import
            deleted mark 'before-import' of group 'liminis'
        """,
        func=_delete,
    )
    delete.add_argument("name", help="the mark's name")
    add_group_option(delete, every=False)
    add_json_option(delete)
