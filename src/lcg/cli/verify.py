"""``lcg verify``: replay the streams into scratch projections and compare digests."""

from __future__ import annotations

import argparse
from typing import Any

import msgspec

from lcg.cli._common import config_from, emit_json, group_dir
from lcg.cli._holder import alone
from lcg.cli._service import open_direct
from lcg.cli._terminal import safe
from lcg.config import Config

__all__ = ["register"]

_HELP = """Prove the projections are exact functions of the streams: replay every group (or
one) into temporary projections and compare the graph, text and vector digests with the live
ones, each projection at the seq it stands at. Exits 1 on any difference; on damage: a
degraded group, or a replay that skipped seqs (a gap, a corrupt line); and when a group's
projections are behind its stream (BEHIND, as `lcg status` says after a crash, with the
remedy): what they hold matches the stream, but not all of it is applied yet.

Example:
  lcg verify
  lcg verify --group liminis --json
"""


def _run(args: argparse.Namespace) -> int:
    config = config_from(args, existing=True)
    if args.group is not None:
        # A group that does not exist is an error naming those that do, with a service or
        # without (an empty verdict of nothing would read as ok).
        group_dir(config, args.group)
    params = {"group_ids": [args.group]} if args.group else {}
    report: dict[str, Any]
    #: Groups whose vectors another embedder built: why their vectors digest differs.
    foreign: dict[str, str] = {}
    with alone(config, "verify") as client:
        if client is not None:
            report = client.call("knowledge_verify", params)
        else:
            report = _verify_here(config, args.group, foreign)
    if args.json:
        emit_json(report, indent=2)
    else:
        for g in report["groups"]:
            verdict = "ok" if g["equal"] else "DIFFERENT: " + ", ".join(g["differing"])
            if g.get("problems") and g["equal"]:
                verdict = "DAMAGED"
            elif g.get("behind") and g["equal"]:
                verdict = "BEHIND"
            print(f"{safe(g['group_id']):<24} applied seq {g['applied_seq']}: {safe(verdict)}")
            if g.get("behind"):
                print(f"  {safe(_behind(g))}")
            if g["group_id"] in foreign:
                print(safe(foreign[g["group_id"]]))
            for problem in g.get("problems", []):
                print(f"  {safe(problem)}")
        print("verify: ok" if report["ok"] else "verify: FAILED")
    return 0 if report["ok"] else 1


def _verify_here(config: Config, group: str | None, foreign: dict[str, str]) -> dict[str, Any]:
    """The verification in this process, which holds the workspace (``alone``): it only
    looks (nothing applied first, as a service's open would); ``foreign`` gets the groups
    whose vectors another embedder built, with why their digest differs."""
    from lcg.workspace import verify_workspace

    with open_direct(config, inspect=True) as ws:  # verifying only looks
        groups = [group] if group else None
        report: dict[str, Any] = msgspec.to_builtins(verify_workspace(ws, groups))
        configured = f"{ws.embedder.model_id} ({ws.embedder.dim}-d)"
        for gid, (model, dim, _, _) in ws.vectors.foreign_groups.items():
            foreign[gid] = (
                f"  the vectors of group {gid!r} were built with {model} ({dim}-d), the "
                f"configured embedder is {configured}: verify with {model} configured "
                "(LCG_EMBEDDER, LCG_EMBEDDING_DIM), or re-embed with "
                f"`lcg replay --group {gid} --force-clear`"
            )
    return report


def _behind(g: dict[str, Any]) -> str:
    """The lag of a group whose projections stand behind its stream, and the remedy (the
    words of ``lcg status``)."""
    applied = "-" if g["applied_seq"] is None else g["applied_seq"]
    return (
        f"behind: group {g['group_id']!r} is applied to seq {applied} of {g['max_seq']} "
        f"(each projection matches its stream where it stands: {g['seqs']}); `lcg serve` "
        f"applies the rest when it starts, or `lcg replay --group {g['group_id']} "
        "--force-clear` rebuilds the group"
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg verify``."""
    p = subparsers.add_parser(
        "verify",
        help="replay the streams and compare digests with the projections",
        description=_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--group", default=None, help="one group (default: every group)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_run)
