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
from lcg.cli._holder import alone
from lcg.errors import LcgError, MarkError
from lcg.events import LCG_DIR

__all__ = ["CreatedMark", "register"]


class CreatedMark(msgspec.Struct, kw_only=True):
    """The output of ``lcg mark create --json``."""

    success: bool
    name: str
    group_id: str
    seq: int | None
    generation: str | None


def _in_cli_words(exc: LcgError) -> MarkError:
    """The stream layer's "checkpoint" (the reference's word) is this command's "mark", and
    the seq it was given is its ``--seq``."""
    message = str(exc).replace("checkpoint ", "mark ", 1)
    if message.startswith("seq "):
        message = f"--{message}"
    return MarkError(message)


def _create(args: argparse.Namespace) -> int:
    from lcg.workspace import create_stream_mark, writing_offline

    config = config_from(args, existing=True)
    group_dir(config, args.group)  # refuses a group with no stream, naming the ones there are
    with alone(config, "mark") as client:
        if client is not None:
            # The service holds the workspace: it marks the seq it has applied, like every
            # other admin command that goes through it.
            if args.seq is not None:
                raise MarkError(
                    f"--seq cannot be used while `lcg serve` runs in {config.workspace}: the "
                    "service marks the seq it has applied; omit --seq, or stop the service"
                )
            try:
                answer = client.call(
                    "knowledge_wal_mark_create", {"name": args.name, "group_id": args.group}
                )
            except LcgError as exc:
                raise _in_cli_words(exc) from exc
            created = msgspec.convert(answer, CreatedMark)
        else:
            # This process holds the workspace (``alone``): it writes the mark itself.
            try:
                with writing_offline(config.workspace / LCG_DIR):
                    record = create_stream_mark(config, args.group, args.name, args.seq)
            except MarkError as exc:
                raise _in_cli_words(exc) from exc
            created = CreatedMark(
                success=True,
                name=record.name,
                group_id=args.group,
                seq=record.seq,
                generation=record.wal_generation,
            )
    if args.json:
        emit_json(created)
    else:
        where = "an empty stream" if created.seq is None else f"seq {created.seq}"
        print(f"created mark {created.name!r} at {where} of group {args.group!r}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from lcg.workspace import group_marks

    config = config_from(args, existing=True)
    group_dir(config, args.group)
    marks = group_marks(config, args.group)
    if args.json:
        emit_json({"group_id": args.group, "checkpoints": marks})
    elif not marks:
        print(f"no marks in group {args.group!r}")
    else:
        rows = [(m.name, m.seq, "yes" if m.reachable else "no", m.generation) for m in marks]
        print(format_table(["NAME", "SEQ", "REACHABLE", "GENERATION"], rows))
    return 0


def _delete(args: argparse.Namespace) -> int:
    from lcg.workspace import delete_group_mark, writing_offline

    config = config_from(args, existing=True)
    group_dir(config, args.group)
    try:
        with alone(config, "mark") as client:
            if client is not None:  # the service holds the workspace: it deletes, as it creates
                client.call(
                    "knowledge_wal_mark_delete", {"name": args.name, "group_id": args.group}
                )
            else:
                with writing_offline(config.workspace / LCG_DIR):
                    delete_group_mark(config, args.group, args.name)
    except LcgError as exc:
        raise _in_cli_words(exc) from exc
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
        epilog=(
            "Every subcommand takes --group (default liminis, the reference's default group).\n\n"
            "Example:\n  lcg mark create before-import --group notes\n  lcg mark list --group notes"
        ),
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
            $ lcg mark create before-import --group notes
            created mark 'before-import' at seq 41 of group 'notes'
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
            $ lcg mark list --group notes
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
            $ lcg mark delete before-import --group notes
            deleted mark 'before-import' of group 'notes'
        """,
        func=_delete,
    )
    delete.add_argument("name", help="the mark's name")
    add_group_option(delete, every=False)
    add_json_option(delete)
