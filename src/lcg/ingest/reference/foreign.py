"""Which of an import's uuids another group of the workspace already holds.

Rows are keyed by uuid in the graph, so an imported row reusing the uuid of another group's
entity, edge or episode would replace that group's row (issue 27: ``Alice`` became
``Mallory``). Before anything is written, the workspace is opened (its projections brought up
to its streams) and each uuid the import would write is looked up; those held by a group the
import does not replace are returned with their owner, for ``rows`` to refuse.
"""

from __future__ import annotations

from typing import Final

from lcg.config import Config
from lcg.events import list_groups
from lcg.ingest.reference.rows import CARRIED_TABLES, Foreign
from lcg.projections import ProgressFn

__all__ = ["held_elsewhere"]

#: Uuids looked up per statement.
_PAGE: Final = 2000


def held_elsewhere(
    config: Config,
    uuids: dict[str, list[str]],
    imported: list[str],
    progress: ProgressFn | None = None,
) -> Foreign:
    """Per carried table, the ``uuids`` a workspace group outside ``imported`` holds, and
    that group; empty when the workspace has no other group."""
    from lcg.workspace import Workspace

    others = [g for g in list_groups(config.wal_dir) if g not in imported]
    if not others or not any(uuids.values()):
        return {}
    found: Foreign = {}
    with Workspace.open(config, progress=progress) as ws, ws.reading():
        for table, keys in uuids.items():
            assert table in CARRIED_TABLES
            for start in range(0, len(keys), _PAGE):
                rows = ws.graph.query(
                    f"UNWIND $keys AS k MATCH (n:{table} {{uuid: k}}) RETURN n.uuid, n.group_id",
                    {"keys": keys[start : start + _PAGE]},
                )
                for uuid, group_id in rows:
                    if group_id not in imported:
                        found.setdefault(table, {})[uuid] = str(group_id)
    return found
