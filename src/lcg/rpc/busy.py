"""The busy app: what a command that holds a workspace exclusively serves on its socket.

A command whose work has no service method and needs the workspace to itself (``lcg
import-reference``, ``lcg replay``, ``dump``, ``verify``, ``mark`` with no service running,
ADR 0199 addendum) still serves the socket while it holds the lock, so another command or an
agent is answered at once instead of waiting for the lock: ``health_check`` and
``knowledge_status`` answer ``degraded`` with the reason (what holds the workspace, and when to
try again), and every other method of the service is refused with that reason (-32001), by the
dispatcher's own degraded guard. Nothing here opens the workspace.
"""

from __future__ import annotations

from typing import Any

from lcg.errors import DegradedError
from lcg.rpc.dispatch import State
from lcg.rpc.methods import METHODS
from lcg.rpc.methods_admin import Health
from lcg.rpc.registry import CallContext, MethodSpec, NoParams, Registry, Result
from lcg.workspace import degraded_status

__all__ = ["BusyApp", "busy_reason"]


def busy_reason(command: str, pid: int) -> str:
    """The reason a busy holder gives: who writes the workspace and what to do."""
    return (
        f"busy: lcg {command} (pid {pid}) is using this workspace by itself; run this again "
        "when it has finished"
    )


class BusyApp:
    """An ``App`` that answers health and status as degraded with ``reason``, and refuses
    every other method of the service with it."""

    def __init__(self, reason: str) -> None:
        """Serve ``reason`` as the degraded state's reason."""
        self.reason = reason
        answers = {"health_check": self._health, "knowledge_status": self._status}
        specs: list[MethodSpec] = []
        for d in METHODS:
            specs.append(d.serve_with(answers.get(d.name, self._refuse)))
        self._registry = Registry(specs)

    @property
    def registry(self) -> Registry:
        """The service's method table: all refused but health and status."""
        return self._registry

    async def open(self) -> None:
        """Nothing to open: the command that serves this holds the workspace."""

    async def close(self) -> None:
        """Nothing to release."""

    def state(self) -> tuple[State, str | None]:
        """Always degraded, with the reason."""
        return "degraded", self.reason

    async def _health(self, ctx: CallContext, p: NoParams) -> Result:
        return Health(ok=False, healthy=False, state="degraded", reason=self.reason)

    async def _refuse(self, ctx: CallContext, p: Any) -> Result:
        raise DegradedError(self.reason)

    async def _status(self, ctx: CallContext, p: NoParams) -> Result:
        return degraded_status(self.reason, initializing=False)
