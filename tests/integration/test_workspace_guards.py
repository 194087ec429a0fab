"""Opening a workspace makes its state private and refuses streams others control (ADR 0082).

Real files, real Kuzu; the embedder is the hash test double.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import _service_fixtures as sf
from lcg.config import Config
from lcg.errors import StreamError
from lcg.workspace import Workspace


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_state_directory_is_private_even_when_it_was_not() -> None:
    with sf.temp_workspace() as ws:
        lcg = ws / ".lcg"
        lcg.mkdir()
        lcg.chmod(0o755)  # as older versions left it
        with sf.in_process_service(ws) as svc, sf.RawConnection(svc.socket_path) as c:
            c.result("knowledge_assert_entity", {"name": "Ada"})
            c.result("knowledge_wal_mark_create", {"name": "m"})
            config = svc.config
            assert _mode(lcg) == 0o700
            for path in (config.wal_dir, config.db_dir, config.cache_dir):
                assert _mode(path) == 0o700, path
            # Every file lcg itself writes into the streams and the cache is 0600 (Kuzu's
            # and hnswlib's own files are behind the 0700 state directory).
            for root in (config.wal_dir, config.cache_dir):
                for path in root.rglob("*"):
                    want = 0o700 if path.is_dir() else 0o600
                    assert _mode(path) == want, path


def test_a_symlinked_group_directory_refuses_the_workspace(tmp_path: Path) -> None:
    config = Config.from_env(tmp_path / "ws", env=sf.HASH_ENV)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config.wal_dir.mkdir(parents=True)
    (config.wal_dir / "liminis").symlink_to(elsewhere)
    with pytest.raises(StreamError, match="is a symlink.*replace the link"):
        Workspace.open(config)
    assert list(elsewhere.iterdir()) == []
