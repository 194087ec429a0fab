"""The transport is chosen by the target's form: a path or a git URL is git, another scheme
is refused with the reason; ``lcg publish --to`` and ``lcg follow`` go through that one point.
Real git, real files; the embedder is the hash test double."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lcg.cli import main as cli_main
from lcg.errors import ConfigError
from lcg.replication import GitPublisher, GitPuller
from lcg.replication.targets import follow_setup, open_publisher, transport_of
from replica_support import GIT_ENV, git, make_repos, write_batch
from replica_support import open_publisher as open_pub_ws

G = "team"


@pytest.mark.parametrize(
    "target",
    [
        "/srv/pub",
        "pub",
        "./pub",
        "~/pub",
        "file:///srv/pub.git",
        "ssh://git@host/team/pub.git",
        "https://host/team/pub.git",
        "git://host/pub.git",
        "git@host:team/pub.git",
    ],
)
def test_a_path_or_a_git_url_is_git(target: str) -> None:
    assert transport_of(target) == "git"


@pytest.mark.parametrize("target", ["kafka://broker:9092", "zz://x", "S3://bucket/pub"])
def test_another_scheme_is_refused_naming_what_is_known(target: str, tmp_path: Path) -> None:
    scheme = target.split("://")[0].lower()
    with pytest.raises(ConfigError, match=f"no transport for {scheme}://.*a path or a git URL"):
        transport_of(target)
    with pytest.raises(ConfigError, match=f"no transport for {scheme}://"):
        open_publisher(target)
    with pytest.raises(ConfigError, match=f"no transport for {scheme}://"):
        follow_setup(target, tmp_path / "rws")
    # Refused before anything is written: no replica workspace was made.
    assert not (tmp_path / "rws").exists()


def test_a_git_url_is_git_but_must_be_cloned_first(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="git URL.*git clone git@host:t/p.git DIR"):
        open_publisher("git@host:t/p.git")
    with pytest.raises(ConfigError, match="git URL.*lcg follow reads a clone"):
        follow_setup("https://host/t/p.git", tmp_path / "rws")


def test_a_path_is_published_and_followed_by_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    repos = make_repos(tmp_path)
    publisher = open_publisher(str(repos.pub))
    assert isinstance(publisher, GitPublisher) and publisher.label == str(repos.pub.resolve())
    setup = follow_setup(str(repos.replica), tmp_path / "rws", pull_every=5)
    assert setup.label == str(repos.replica.resolve()) and setup.source is None
    assert isinstance(setup.puller, GitPuller) and setup.puller.repo == repos.replica.resolve()
    assert setup.config.wal_dir.resolve() == repos.replica.resolve()
    assert follow_setup(str(repos.replica), tmp_path / "rws").puller is None


def test_cli_publish_to_a_path_and_refusals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key in list(os.environ):
        if key.startswith("LCG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("LCG_EMBEDDER", "hash")
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    repos = make_repos(tmp_path)
    pub = open_pub_ws(tmp_path / "pubws")
    try:
        write_batch(pub, G, 1)
    finally:
        pub.close()
    ws = str(tmp_path / "pubws")
    assert cli_main.main(["-C", ws, "publish", "-g", G, "--to", str(repos.pub)]) == 0
    assert capsys.readouterr().out.startswith(f"published group {G} through seq ")
    assert "lcg publish team" in git(repos.pub, "log", "-1", "--format=%s")
    # A refusal names the option the target came with.
    assert cli_main.main(["-C", ws, "publish", "-g", G, "--to", str(tmp_path)]) == 1
    assert "Error: --to" in capsys.readouterr().err
    assert cli_main.main(["-C", ws, "publish", "-g", G, "--to", "zz://host/x"]) == 1
    assert "no transport for zz://" in capsys.readouterr().err
    rws = str(tmp_path / "rws")
    assert cli_main.main(["-C", rws, "follow", "zz://host/x"]) == 1
    assert "no transport for zz://" in capsys.readouterr().err
    # --to and --repo are one option under two names: not both.
    with pytest.raises(SystemExit):
        cli_main.main(["-C", ws, "publish", "-g", G, "--to", "a", "--repo", "b"])
