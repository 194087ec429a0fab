"""Where a client may make the service write: paths in requests, checked by location.

A path a client sends (``knowledge_dump_wal``'s ``target_dir``) is resolved the way the
service will use it — a relative one against the workspace, symlinks of its existing part
followed — and the result must lie inside the workspace or under ``LCG_EXPORT_ROOT``, and
outside the service's own state (streams, projections, cache). Checking where the path
lands, not how it is spelled, covers ``..``, symlinks and absolute paths alike (ADR 0083).
"""

from __future__ import annotations

import os
from pathlib import Path

from lcg.config import Config
from lcg.errors import InvalidParamsError
from lcg.workspace import projection_dirs

__all__ = ["export_target"]


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def export_target(config: Config, raw: str, *, param: str = "target_dir") -> Path:
    """The directory ``raw`` names, if the service may write there; else ``InvalidParamsError``."""
    if not raw or "\x00" in raw:
        raise InvalidParamsError(f"{param} must be a non-empty path")
    asked = Path(raw)
    target = _real(asked if asked.is_absolute() else config.workspace / asked)
    roots = [_real(config.workspace)]
    if config.export_root is not None:
        roots.append(_real(config.export_root))
    if not any(_within(target, root) for root in roots):
        allowed = " or ".join(str(r) for r in roots)
        raise InvalidParamsError(
            f"{param} {raw!r} resolves to {target}, outside {allowed}; give a path inside the "
            "workspace (relative paths are taken from it), or set LCG_EXPORT_ROOT for the "
            "service to allow a directory elsewhere"
        )
    state = (config.wal_dir, *projection_dirs(config), config.cache_dir)
    for own in state:
        if _within(target, _real(own)):
            raise InvalidParamsError(
                f"{param} {raw!r} resolves to {target}, inside the service's own state "
                f"({_real(own)}); choose a directory outside it"
            )
    return target
