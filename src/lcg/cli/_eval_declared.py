"""``lcg eval declared``: the declared-structure lane (ADR 0208), a subcommand of ``lcg eval``.

A seeded backlog is committed into a scratch git repository, ingested by the real ``lcg
ingest`` through a scratch workspace's service this command hosts, withdrawn from and
ingested again; the service's reads are scored after each pass (``lcg.eval``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

from lcg.cli._common import add_command, config_from, emit_json
from lcg.cli._terminal import safe
from lcg.config import Config

__all__ = ["register_declared"]


def _scratch_config(workspace: Path) -> Config:
    """The settings of the declared lane's scratch workspace: the environment's, with every
    path inside it (a ``LCG_WAL_DIR``/``LCG_DB_PATH``/``LCG_SOCKET_PATH`` pointing elsewhere
    would write the corpus there: refused) and no LLM (the lane scores deterministic writes)."""
    from lcg.eval import EvalRefusedError

    config = Config.from_env(workspace)
    for name, path in (
        ("LCG_WAL_DIR", config.wal_dir),
        ("LCG_DB_PATH", config.db_dir),
        ("LCG_SOCKET_PATH", config.socket_path),
    ):
        if not path.is_relative_to(config.workspace):
            raise EvalRefusedError(
                f"{name} points outside the scratch workspace ({path}): the declared lane "
                "would write its corpus there; unset it for this run"
            )
    return msgspec.structs.replace(
        config,
        anthropic_api_key=None,
        extraction_url=None,
        extraction_uds=None,
        record_llm=None,
        replay_llm=None,
    )


def _declared(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from lcg.cli._holder import service
    from lcg.eval import (
        DECLARED_GROUP,
        commit_corpus,
        generate_declared,
        render_declared,
        run_declared,
        save_declared,
    )

    config = config_from(args)
    corpus = generate_declared(args.seed)
    # A short path of its own: the scratch service's socket must fit a Unix socket's 107 bytes.
    scratch = Path(tempfile.mkdtemp(prefix="lcg-declared-"))
    repo, workspace = scratch / "corpus", scratch / "ws"
    out = sys.stderr if args.json else sys.stdout
    print(
        f"lcg eval declared: seed {corpus.seed}, {len(corpus.files)} files, "
        f"{len(corpus.gold.commits)} commits, gold {corpus.digest[:12]}; scratch {scratch}",
        file=out,
        flush=True,
    )
    try:
        shas = commit_corpus(corpus, repo)
        workspace.mkdir()
        scratch_config = _scratch_config(workspace)
        ingest = [sys.executable, "-m", "lcg", "-C", str(workspace), "ingest", str(repo)]
        ingest += ["--group", DECLARED_GROUP, "--silent"]
        with service(scratch_config, "eval", quiet=True) as (client, _how):
            report = run_declared(corpus, repo, shas, client, ingest)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    if args.keep:
        report = msgspec.structs.replace(report, scratch=str(scratch))
    text = render_declared(report)
    path = save_declared(report, config.workspace, text)
    if args.json:
        emit_json({"report": str(path), **msgspec.to_builtins(report)})
    else:
        print(safe(text, lines=True), end="")
        print(f"report: {path}")
        if args.keep:
            print(f"kept: {repo} (the repository), {workspace} (the workspace)")
    return 0 if report.structural_passed else 1


def register_declared(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg eval declared`` to ``lcg eval``'s subcommands."""
    p = add_command(
        sub,
        "declared",
        summary="Score the declared-structure pass on a seeded backlog in a scratch git repo.",
        details="""
        Generates a product backlog from the seed (epics, features and stories with ids,
        parents and supersessions, notes linking by wiki link, Markdown link and id, tags, a
        small Python package, and decoys), commits it into a scratch git repository one
        dated commit per file, runs the real `lcg ingest` into a scratch workspace, withdraws
        one story in a later commit and ingests again. After each pass it scores, through the
        service's reads: link recall over every declared edge (must be 1.0), precision (each
        extra edge named), phantom ids (none), decoys (none served) and read slots (children,
        current truth after a supersession, entities by source, what changed in a window, the
        withdrawn file on no read). No LLM is used. Exits 1 when a structural score is short.
        The report lands in .lcg/eval/declared/.
        """,
        example="""
        lcg eval declared
        lcg eval declared --seed 11 --keep
        lcg eval declared --json
        """,
        func=_declared,
    )
    p.add_argument("--seed", type=int, default=7, help="the corpus's seed (default 7)")
    p.add_argument("--keep", action="store_true", help="keep the scratch repository and workspace")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
