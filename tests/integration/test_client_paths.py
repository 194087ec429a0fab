"""What a socket client can make the service create: marks and dump targets (issue 11 item 9).

* ``knowledge_wal_mark_create`` on a group never written is refused and creates nothing — in
  particular no ``caseg`` stream directory beside ``CaseG`` (it used to bypass the
  case-collision guard).
* ``knowledge_dump_wal``'s ``target_dir`` lands inside the workspace (relative paths are
  taken from it) or under ``LCG_EXPORT_ROOT``: ``../../x``, an absolute path elsewhere, a
  symlink out, and the service's own state directories are refused, and nothing is written.
"""

from __future__ import annotations

from pathlib import Path

import _service_fixtures as sf


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_a_mark_on_a_group_never_written_is_refused_and_creates_nothing() -> None:
    with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
        c.result("knowledge_assert_entity", {"name": "Ada", "group_id": "CaseG"})
        wal = svc.config.wal_dir
        before = _tree(wal)
        for group in ("caseg", "never-written"):
            err = c.error("knowledge_wal_mark_create", {"name": "m1", "group_id": group})
            assert "has never been written" in err["message"], err
        assert _tree(wal) == before
        assert sorted(p.name for p in wal.iterdir() if p.is_dir()) == ["CaseG"]
        # The written group takes marks as before.
        made = c.result("knowledge_wal_mark_create", {"name": "m1", "group_id": "CaseG"})
        assert made["seq"] == 0 and made["group_id"] == "CaseG"


def test_dump_targets_outside_the_workspace_are_refused() -> None:
    with sf.temp_workspace() as outside:
        with sf.in_process_service() as svc, sf.RawConnection(svc.socket_path) as c:
            ws = svc.workspace
            c.result("knowledge_assert_entity", {"name": "Ada"})
            escape = outside / "link-out"
            (ws / "link-out").symlink_to(outside)
            for target in (
                "../../x",
                str(outside / "abs"),
                "link-out/d",
                ".lcg/wal/liminis2",
                str(svc.config.db_dir / "d"),
            ):
                err = c.error("knowledge_dump_wal", {"group_id": "liminis", "target_dir": target})
                assert err["code"] == -32602, (target, err)
                assert "LCG_EXPORT_ROOT" in err["message"] or "own state" in err["message"]
            assert not (ws.parent.parent / "x").exists()
            assert not escape.exists() or list(outside.iterdir()) == []
            assert sorted(p.name for p in svc.config.wal_dir.iterdir()) == ["liminis"]
            # Inside the workspace, relative or absolute, it works.
            done = c.result("knowledge_dump_wal", {"group_id": "liminis", "target_dir": "out/a"})
            assert done["target_dir"] == str((ws / "out" / "a").resolve())
            done = c.result(
                "knowledge_dump_wal", {"group_id": "liminis", "target_dir": str(ws / "out" / "b")}
            )
            assert (ws / "out" / "b").is_dir()


def test_an_export_root_allows_absolute_dump_targets_under_it() -> None:
    with sf.temp_workspace() as exports:
        env = {"LCG_EXPORT_ROOT": str(exports)}
        with sf.in_process_service(env=env) as svc, sf.RawConnection(svc.socket_path) as c:
            c.result("knowledge_assert_entity", {"name": "Ada"})
            done = c.result(
                "knowledge_dump_wal", {"group_id": "liminis", "target_dir": str(exports / "d")}
            )
            assert done["success"] is True and (exports / "d").is_dir()
            err = c.error(
                "knowledge_dump_wal", {"group_id": "liminis", "target_dir": str(exports.parent)}
            )
            assert err["code"] == -32602
