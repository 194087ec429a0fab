"""The transports registry drives ``lcg publish`` and ``lcg follow`` (issue 31, ADR 0220).

Each transport is one object in ``lcg.replication.targets.TRANSPORTS``: its schemes, its own
options (shown in an argument group named for it, refused with another transport's target),
its publisher and its follower set-up. A third transport - the folder test double of
tests/folder_transport_double.py - is registered with one line and goes through ``lcg
publish --help``, ``lcg publish`` and ``lcg follow`` in-process (``main([...])``). Real git,
real files, a real NATS server for JetStream, a real replica service; the embedder is the
hash test double.
"""

from __future__ import annotations

import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from _nats_fixtures import nats_server
from _service_fixtures import eventually, temp_workspace
from folder_transport_double import FolderTransportDouble
from lcg.cli import main as cli_main
from lcg.config import Config
from lcg.events import encode_group
from lcg.replication import targets, transports
from lcg.rpc.client import Client
from replica_support import GIT_ENV, make_repos, write_batch
from replica_support import open_publisher as open_pub_ws

G = "team"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("LCG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("LCG_EMBEDDER", "hash")
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def pubws(tmp_path: Path) -> Path:
    """A publisher workspace holding group ``team``."""
    pub = open_pub_ws(tmp_path / "pubws")
    try:
        write_batch(pub, G, 3)
    finally:
        pub.close()
    return tmp_path / "pubws"


@pytest.fixture
def double(monkeypatch: pytest.MonkeyPatch) -> FolderTransportDouble:
    """The folder test double, registered as a third transport."""
    double = FolderTransportDouble()
    monkeypatch.setattr(targets, "TRANSPORTS", [*targets.TRANSPORTS, double])  # the one line
    return double


def _help(capsys: pytest.CaptureFixture[str], command: str) -> dict[str, str]:
    """``lcg COMMAND --help``'s argument groups: title → the text of the group."""
    with pytest.raises(SystemExit) as exit_:
        cli_main.main([command, "--help"])
    assert exit_.value.code == 0
    sections = capsys.readouterr().out.split("\n\n")
    return {s.splitlines()[0]: s for s in sections if s.strip()}


def _flags_in(section: str) -> set[str]:
    """The long options a help section lists (each at the start of its line)."""
    return {m.group(1) for m in re.finditer(r"^\s+(?:-\w \S+, |-\w, )?(--[\w-]+)", section, re.M)}


def test_the_registry_holds_git_and_jetstream_each_owning_its_targets() -> None:
    assert [t.name for t in transports()] == ["git", "jetstream"]
    schemes = [s for t in transports() for s in t.schemes]
    assert len(schemes) == len(set(schemes)), "a scheme names one transport"
    assert [t.name for t in transports() if t.paths] == ["git"], "one transport takes paths"
    assert targets.transport_for("/srv/pub").name == "git"
    assert targets.transport_for("nats://127.0.0.1:4222").name == "jetstream"


def test_help_groups_each_transport_s_own_options(capsys: pytest.CaptureFixture[str]) -> None:
    publish = _help(capsys, "publish")
    assert _flags_in(publish["git options (a path or a git URL):"]) == {"--message", "--with-marks"}
    jet = publish["JetStream options (nats://HOST:PORT[/PREFIX]):"]
    assert _flags_in(jet) == {"--all", "--live", "--status", "--replicas"}
    follow = _help(capsys, "follow")
    assert _flags_in(follow["git options (a path or a git URL):"]) == {"--pull-every"}


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["publish", "-g", G, "--to", "{repo}", "--live"],
            "Error: --live is JetStream's, for nats://HOST:PORT[/PREFIX]; --to {repo} is "
            "git's (a path or a git URL), which takes no such option",
        ),
        (
            ["publish", "-g", G, "--repo", "nats://127.0.0.1:9", "-m", "x", "--with-marks"],
            "Error: --message and --with-marks are git's, for a path or a git URL; --repo "
            "nats://127.0.0.1:9 is JetStream's",
        ),
        (
            ["follow", "nats://127.0.0.1:9", "--pull-every", "5"],
            "Error: --pull-every is git's, for a path or a git URL; nats://127.0.0.1:9 is "
            "JetStream's",
        ),
    ],
)
def test_another_transport_s_option_is_refused_before_anything_is_opened(
    pubws: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    said: str,
) -> None:
    repos = make_repos(tmp_path)
    argv = [a.format(repo=repos.pub) for a in argv]
    rc = cli_main.main(["-C", str(pubws), *argv])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert said.format(repo=repos.pub) in err
    assert not (tmp_path / "rws").exists()
    # The git target was never touched.
    assert not (repos.pub / encode_group(G)).exists()


def test_jetstream_publish_once_goes_through_the_registry(
    pubws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with nats_server(tmp_path / "nats") as server:
        argv = ["-C", str(pubws), "publish", "--to", server.url, "--group", G]
        assert cli_main.main(argv) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"published group {G} through seq {_top(pubws)}, generation ")
        assert f"{_top(pubws) + 1} message(s)" in out and f"JetStream stream lcg_{G} at " in out
        assert cli_main.main(argv) == 0
        assert (
            f"already holds it through seq {_top(pubws)}; nothing to publish"
            in capsys.readouterr().out
        )
        assert cli_main.main([*argv[:-2], "--all", "--status", "--json"]) == 0
        assert f'"group_id":"{G}"' in capsys.readouterr().out


def test_a_third_transport_is_one_registry_line(
    double: FolderTransportDouble,
    pubws: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    publish = _help(capsys, "publish")
    assert _flags_in(publish["folder double options (double-folder://DIR):"]) == {"--double-note"}
    assert _flags_in(_help(capsys, "follow")["folder double options (double-folder://DIR):"]) == {
        "--double-tag"
    }
    folder = tmp_path / "folder"
    target = f"double-folder://{folder}"
    argv = ["-C", str(pubws), "publish", "-g", G, "--to", target]
    assert cli_main.main([*argv, "--double-note", "hello"]) == 0
    out = capsys.readouterr().out
    assert (
        out
        == f"published group {G} through seq {_top(pubws)}, generation {_generation(pubws)} to "
        + (f"{target}: 1 item(s), {_stream_bytes(pubws)} bytes\n")
    )
    assert (folder / "NOTE").read_text() == "hello"
    assert _segments(folder) == _segments(pubws / ".lcg" / "wal")
    assert cli_main.main(argv) == 0
    assert capsys.readouterr().out == (
        f"group {G}: {target} already holds it through seq {_top(pubws)}; nothing to publish\n"
    )
    # Its option is its own: refused with git's target and JetStream's, and theirs with it.
    repos = make_repos(tmp_path)
    for other in (str(repos.pub), "nats://127.0.0.1:9"):
        rc = cli_main.main(
            ["-C", str(pubws), "publish", "-g", G, "--to", other, "--double-note", "x"]
        )
        assert rc == 1
        assert "Error: --double-note is folder double's, for double-folder://DIR;" in (
            capsys.readouterr().err
        )
    assert cli_main.main([*argv, "--with-marks"]) == 1
    assert f"--with-marks is git's, for a path or a git URL; --to {target} is folder" in (
        capsys.readouterr().err
    )


def test_follow_goes_through_the_third_transport(
    double: FolderTransportDouble, pubws: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "folder"
    target = f"double-folder://{folder}"
    assert cli_main.main(["-C", str(pubws), "publish", "-g", G, "--to", target]) == 0
    seen: dict[str, Any] = {}
    top = _top(pubws)
    with temp_workspace("lcg-reg-") as rws:
        sock = Config.from_env(rws).socket_path

        def watch() -> None:
            """Read the replica once it has applied the top seq, then stop it as Ctrl-C would."""
            try:
                eventually(lambda: ended.is_set() or sock.exists(), "the replica never bound")
                if ended.is_set():
                    return
                with Client(sock, timeout=120) as client:
                    client.wait_ready(120, starting=True)
                    eventually(
                        lambda: _applied(client) == top, lambda: f"never applied: {_status(client)}"
                    )
                    source = client.call("knowledge_replica_status", {})["source"]
                    seen.update(_status(client), source=source)
            finally:
                # Always stop the follow (a failure here shows instead of a hang), never
                # the test run once the follow has ended by itself.
                if not ended.is_set():
                    os.kill(os.getpid(), signal.SIGINT)

        ended = threading.Event()
        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        argv = ["-C", str(rws), "follow", target, "-g", G, "--double-tag", "seen"]
        try:
            rc = cli_main.main(argv)
        finally:
            ended.set()
        thread.join(60)
        assert rc == 0 and not thread.is_alive()
    assert double.followed == [{"double_tag": "seen"}]
    assert seen["source"] == target and seen["applied_seq"] == top and seen["state"] == "following"


def _status(client: Client) -> dict[str, Any]:
    groups = client.call("knowledge_replica_status", {})["groups"]
    return dict(groups.get(G) or {})


def _applied(client: Client) -> int | None:
    return _status(client).get("applied_seq")


def _generation(ws: Path) -> str:
    from lcg.events import read_generation

    gen = read_generation(ws / ".lcg" / "wal" / encode_group(G))
    assert gen is not None
    return gen


def _stream_bytes(ws: Path) -> int:
    return sum(len(data) for data in _segments(ws / ".lcg" / "wal").values())


def _segments(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / encode_group(G)).glob("*.jsonl"))}


def _top(ws: Path) -> int:
    """The seq of the group's last event."""
    from lcg.events import decode_line

    last = list(_segments(ws / ".lcg" / "wal").values())[-1].splitlines()[-1]
    return decode_line(last).seq
