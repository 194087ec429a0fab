"""The read-only guard of ``knowledge_query_cypher``.

The graph is a projection of the streams: a raw Cypher write would change it behind the
stream's back and vanish at the next rebuild. So only reads are accepted. A statement is
refused when, after removing string literals, comments and backquoted names, any word is a
write or an escape hatch: ``CREATE MERGE SET DELETE DETACH REMOVE DROP ALTER COPY LOAD
INSTALL ATTACH DETACH USE CALL IMPORT EXPORT CHECKPOINT BEGIN COMMIT ROLLBACK``. Several
statements separated by ``;`` are refused too. Matching ignores case and spacing.
"""

from __future__ import annotations

import re

from lcg.errors import ReadOnlyError

__all__ = ["FORBIDDEN_KEYWORDS", "check_read_only"]

FORBIDDEN_KEYWORDS = frozenset(
    {
        "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "ALTER", "COPY",
        "LOAD", "INSTALL", "ATTACH", "USE", "CALL", "IMPORT", "EXPORT", "CHECKPOINT",
        "BEGIN", "COMMIT", "ROLLBACK", "TRUNCATE", "RENAME",
    }
)  # fmt: skip

_LITERALS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`", re.DOTALL)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_read_only(query: str) -> None:
    """Raise ``ReadOnlyError`` unless ``query`` is a single read-only statement."""
    stripped = _COMMENTS.sub(" ", _LITERALS.sub(" '' ", query))
    if ";" in stripped.strip().rstrip(";"):
        raise ReadOnlyError(
            "knowledge_query_cypher runs one read-only statement at a time; send them separately"
        )
    for word in _WORDS.findall(stripped):
        if word.upper() in FORBIDDEN_KEYWORDS:
            raise ReadOnlyError(
                f"knowledge_query_cypher is read-only and refused a statement containing "
                f"{word.upper()}: the graph is rebuilt from the event stream, so write through "
                "the knowledge_* methods instead"
            )
