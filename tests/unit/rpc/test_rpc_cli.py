"""``lcg methods`` and ``lcg mcp`` argument handling."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

import lcg.rpc
from lcg.cli import mcp as cli_mcp
from lcg.cli import methods as cli_methods
from lcg.rpc import mcp_server
from lcg.rpc.registry import CallContext, MethodSpec, Params, Registry


async def _h(ctx: CallContext, params: Any) -> dict[str, Any]:
    return {}


class _GroupParams(Params):
    group_id: str | None = None


REGISTRY = Registry(
    [
        MethodSpec("health_check", "none", _h, "Readiness probe.", exempt=True),
        MethodSpec(
            "knowledge_rebuild_from_wal",
            "admin",
            _h,
            "Rebuild a group.\nMore text.",
            params=_GroupParams,
            streaming=True,
            writes=True,
        ),
    ]
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lcg")
    sub = parser.add_subparsers(dest="command")
    cli_methods.register(sub)
    cli_mcp.register(sub)
    return parser


def test_methods_table_and_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # lcg methods takes the registry from the rpc face when it runs.
    monkeypatch.setattr(lcg.rpc, "default_registry", lambda: REGISTRY)
    args = _parser().parse_args(["methods"])
    assert args.func(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["METHOD", "SCOPE", "STREAMS", "EXEMPT", "DESCRIPTION"]
    assert out[1].split() == ["health_check", "none", "yes", "Readiness", "probe."]
    assert out[2].split() == [
        "knowledge_rebuild_from_wal",
        "admin",
        "yes",
        "Rebuild",
        "a",
        "group.",
    ]
    args = _parser().parse_args(["methods", "--json"])
    assert args.func(args) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["health_check", "knowledge_rebuild_from_wal"]
    assert rows[1]["streaming"] is True and rows[1]["writes"] is True
    assert rows[1]["params"] == {"type": "object", "properties": {"group_id": {"type": "string"}}}


def test_methods_of_the_real_registry() -> None:
    rows = cli_methods.method_rows()
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names)) > 1
    by_name = {r["name"]: r for r in rows}
    assert by_name["health_check"]["scope"] == "none" and by_name["health_check"]["exempt"]
    assert {r["scope"] for r in rows} <= {"read", "write", "cypher", "admin", "none"}


def test_mcp_arguments() -> None:
    args = _parser().parse_args(
        ["mcp", "--scope", "read,cypher", "--connect", "x.sock", "--allow-remote-close"]
    )
    assert (args.scope, args.connect, args.allow_remote_close) == ("read,cypher", "x.sock", True)
    defaults = _parser().parse_args(["mcp"])
    assert (defaults.scope, defaults.connect, defaults.allow_remote_close) == ("all", None, False)
    # `all` includes cypher, as the reference's scope table says (commit 899eb4c).
    assert mcp_server.parse_scopes(defaults.scope) == frozenset(
        {"read", "write", "admin", "cypher"}
    )


def test_mcp_bad_scope_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    args = _parser().parse_args(["mcp", "--scope", "read,"])
    assert args.func(args) == 2
    assert "empty scope token" in capsys.readouterr().err


def test_visible_tools_never_include_scope_none() -> None:
    names = [
        s.name
        for s in mcp_server.visible_tools(REGISTRY, {"read", "write", "admin", "cypher", "none"})
    ]
    assert names == ["knowledge_rebuild_from_wal"]
    assert (
        mcp_server.visible_tools(REGISTRY, {"admin"}, hidden={"knowledge_rebuild_from_wal"}) == []
    )
