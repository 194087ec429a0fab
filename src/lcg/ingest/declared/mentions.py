"""Which chunks name another document's declared id (issue 29, ADR 0204).

An id is mentioned where it stands as a whole token of a chunk's prose: the characters
around it are not word characters or ``-`` (``STORY-0042`` does not mention ``STORY-004``),
and it is not inside code, an HTML comment or front matter (a Markdown file's chunks are
masked as ``prose.mask`` does, each carrying what the chunk before it of the same file left
open). Ids are matched as written (case counts). The text is read once: each token is looked
up in a table of the ids' first tokens, and an id is checked where it stands, so the cost
is linear in the text however many ids the tree declares. Only the runs of token characters
that start with a character some id's first token starts with are taken out of the text (one
regular expression whose first step is a character class, which the engine skips to in C),
so on ordinary prose Python touches only the few that may start an id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from lcg.ingest.declared.declare import is_markdown
from lcg.ingest.declared.model import DeclaredMention
from lcg.ingest.declared.prose import START, Carry, mask

__all__ = ["find_mentions"]

_TOKEN = re.compile(r"[\w-]+")
_TOKEN_CHAR = re.compile(r"[\w-]")


class _Ids:
    """The declared ids, by their first token (those that start with one)."""

    def __init__(self, ids: Iterable[str]) -> None:
        self.by_first: dict[str, list[str]] = {}
        others: list[str] = []
        for doc_id in sorted(set(ids), key=lambda i: (-len(i), i)):
            first = _TOKEN.match(doc_id)
            if first:
                self.by_first.setdefault(first.group(), []).append(doc_id)
            else:
                others.append(doc_id)
        # Ids that start with a character no token holds (rare): one alternation, longest first.
        self.others = re.compile("|".join(re.escape(i) for i in others)) if others else None
        # Runs of token characters from a character an id's first token starts with: the run
        # from a token's start is the token; one from inside a token is a suffix of it, which
        # ``_stands`` turns down below (no search step is a lookbehind: it would cost the
        # engine its skip to the first character).
        firsts = sorted({token[0] for token in self.by_first})
        self.runs = (
            re.compile("[" + "".join(re.escape(c) for c in firsts) + r"][\w-]*") if firsts else None
        )

    def found(self, text: str) -> set[str]:
        out: set[str] = set()
        # The candidate runs as one set (in C), met with the table's: only the few that equal
        # an id's first token are looked at again, each id where it is written.
        runs = set(self.runs.findall(text)) if self.runs is not None else set()
        for token in self.by_first.keys() & runs:
            for doc_id in self.by_first[token]:
                at = text.find(doc_id)
                while at >= 0 and doc_id not in out:
                    if _stands(text, at, doc_id):
                        out.add(doc_id)
                    at = text.find(doc_id, at + 1)
        if self.others is not None:
            for m in self.others.finditer(text):
                if _stands(text, m.start(), m.group()):
                    out.add(m.group())
        return out


def _stands(text: str, at: int, doc_id: str) -> bool:
    """Whether ``doc_id`` is written at ``at`` as a whole: no token character glued on."""
    if not text.startswith(doc_id, at):
        return False
    end = at + len(doc_id)
    if _TOKEN_CHAR.fullmatch(doc_id[-1]) and end < len(text) and _TOKEN_CHAR.match(text[end]):
        return False
    return not (_TOKEN_CHAR.fullmatch(doc_id[0]) and at and _TOKEN_CHAR.match(text[at - 1]))


def find_mentions(
    chunks: list[tuple[str, str, str]],
    ids: dict[str, list[str]],
    pick: Callable[[list[str], str], str | None],
) -> list[DeclaredMention]:
    """Mentions by ``chunks`` (chunk id, file path, text; a file's chunks in document order)
    of the documents whose ids ``ids`` maps to their paths. ``pick`` chooses among the paths
    declaring one id, for a chunk of a path (``None``: none of them, such as its own file)."""
    if not ids:
        return []
    table = _Ids(ids)
    carries: dict[str, Carry] = {}
    out: set[tuple[str, str]] = set()
    for chunk_id, path, text in chunks:
        if is_markdown(path):
            prose, carries[path] = mask(text, carries.get(path, START), whole_file=False)
        else:
            prose = text
        for doc_id in table.found(prose):
            holders = ids[doc_id]
            if path in holders:
                continue  # a file naming its own id mentions nothing
            target = pick(holders, path)
            if target is not None and target != path:
                out.add((chunk_id, target))
    return [DeclaredMention(chunk_id=c, target=t) for c, t in sorted(out)]
