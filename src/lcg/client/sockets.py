"""What a path on disk says about a service before any call: no file, no socket, nobody
listening. Only the path's kind and a bare connect are examined."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

from lcg.client.errors import TransportError

__all__ = ["check_listening", "check_socket", "default_socket"]


def default_socket() -> Path:
    """The socket of the workspace the environment names (``LCG_*``, the current folder)."""
    from lcg.config import Config

    return Config.from_env().socket_path


def check_socket(path: Path) -> None:
    """Raise ``TransportError`` saying why ``path`` is no service socket (nothing if it is one).

    Only the path's kind is examined (no connection is made): missing → "no such file", not a
    socket → "not a socket". Callers use it to fail at once instead of waiting for a service
    that cannot be there.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise TransportError(
            f"no such file: {path} (no service socket there; start one with `lcg serve` in "
            "its workspace, or pass the socket of a running one)"
        ) from None
    except OSError as exc:
        raise TransportError(f"cannot reach {path}: {exc.strerror or exc}") from None
    if not stat.S_ISSOCK(mode):
        raise TransportError(f"{path} is not a socket (a service socket is .lcg/service.sock)")


def check_listening(path: Path) -> None:
    """Raise at once when ``path`` cannot be a service: missing, no socket, or nobody listens."""
    check_socket(path)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except ConnectionRefusedError:
        raise TransportError(
            f"nothing listens on {path} (a service that stopped left it; start `lcg serve`)"
        ) from None
    except OSError:
        pass  # busy or slow: keep polling until the timeout
    finally:
        probe.close()
