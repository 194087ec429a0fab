"""The process Cypher workers are forked from (``main(control_fd)``, started by the sandbox).

It imports the worker once and then forks one child per request, so a replacement for a
killed worker costs a fork and a database open rather than an interpreter start and a second
of imports — back-to-back crashes included (ADR 0152). It holds no thread and no database,
so forking it is safe. Its control socket (``SOCK_SEQPACKET``) carries:

* from the service, ``S`` with one passed file descriptor: fork a worker serving that socket;
* to the service, ``P<pid>`` for each fork and ``X<pid> <status>`` when a child exits (the
  status as ``subprocess`` reports it: negative for a signal).

It exits when the service's end of the control socket closes.
"""

from __future__ import annotations

import os
import signal
import socket
from multiprocessing.connection import Connection

from lcg.query.sandbox import worker

__all__ = ["main"]


def _status(raw: int) -> int:
    return -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)


def main(control_fd: int) -> int:
    """Fork workers until the control socket ``control_fd`` closes."""
    ctl = socket.socket(fileno=control_fd)

    def reap(_sig: int, _frame: object) -> None:
        while True:
            try:
                pid, raw = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            try:
                ctl.send(f"X{pid} {_status(raw)}".encode())
            except OSError:
                return

    signal.signal(signal.SIGCHLD, reap)
    # Ctrl-C on a terminal signals the whole foreground process group: the service stops its
    # workers itself (ADR 0197), so the zygote and the workers it forks ignore it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(ctl, 16, 1)
        except OSError:
            return 0
        if not msg:
            return 0
        if not fds:
            continue
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            ctl.close()
            code = 0
            try:
                worker.serve(Connection(fds[0]))
            except BaseException:  # noqa: BLE001 - a worker's failure is its exit status
                code = 1
            os._exit(code)
        os.close(fds[0])
        ctl.send(f"P{pid}".encode())
