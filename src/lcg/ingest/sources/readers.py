"""Reading a file as text of a known kind: its format's reader, as the table of formats
(``formats.FORMATS``, the one list of them) names it.

The format comes from the file's name; a name no entry lists is read as plain text if its
content is text (UTF-8, no NUL byte). A format the table lists as not read (images, archives,
PDF: no PDF reader is a dependency, ADR 0160) and undecodable bytes are refused with a reason
the summary names. HTML keeps its text and its headings (as Markdown headings, so the Markdown
sectioner keeps them as context); scripts and styles are dropped (``markup``).

A file is opened through ``opening``: relative to its tree, never through a link, regular
files only, at most ``max_bytes`` read (ADR 0192). ``Unreadable`` is ``opening.Refusal``:
its ``kept`` says the failure is this run's (its stored chunks stay), not the file's.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from lcg.ingest.sources.defaults import minified
from lcg.ingest.sources.formats import UNLISTED, Format, Unread, entry_of, format_named
from lcg.ingest.sources.markup import html_text
from lcg.ingest.sources.opening import DEFAULT_MAX_FILE_BYTES
from lcg.ingest.sources.opening import Refusal as Unreadable
from lcg.ingest.sources.opening import read_in_tree as read_bytes_in_tree

__all__ = [
    "Document",
    "Unreadable",
    "decode_document",
    "html_text",
    "kind_of",
    "read_document",
    "read_in_tree",
]

#: How far into a file a NUL byte is looked for (as git and grep do).
_SNIFF_BYTES = 8192


class Document(msgspec.Struct, frozen=True, kw_only=True):
    """A file's text (newlines normalised to ``\\n``) and the kind it is read as (the name of
    its format in ``formats.FORMATS``, whose sectioner chunks it)."""

    kind: str
    text: str


def kind_of(name: str) -> str | None:
    """The kind the file ``name`` is read as by its name, or ``None`` (no format of the table
    reads it: unlisted, sniffed from the content; or listed as not read)."""
    entry = entry_of(name)
    return entry.kind if isinstance(entry, Format) else None


def read_in_tree(
    base: Path, rel: str, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES, defaults: bool = False
) -> Document | Unreadable:
    """Read the file ``rel`` below ``base`` as a document, or say why it cannot be.

    The file is opened relative to ``base`` without following a link anywhere in ``rel``,
    only if it is a regular file, and never read past ``max_bytes``, whatever its size
    said when the tree was walked (``opening.read_in_tree``). With ``defaults``, code
    that is minified is refused (``defaults.minified``).
    """
    name = rel.rsplit("/", 1)[-1]
    entry = entry_of(name)
    if isinstance(entry, Unread):
        return Unreadable(reason=entry.why(name))
    raw = read_bytes_in_tree(base, rel, max_bytes)
    if isinstance(raw, Unreadable):
        return raw
    doc = decode_document(name, raw)
    if defaults and isinstance(doc, Document) and _format_of(entry).judge_minified:
        why = minified(name, doc.text)
        if why is not None:
            return Unreadable(reason=why)
    return doc


def read_document(path: Path, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Document | Unreadable:
    """Read the file ``path`` as a document (its last component never a link)."""
    return read_in_tree(path.parent, path.name, max_bytes=max_bytes)


def decode_document(name: str, raw: bytes) -> Document | Unreadable:
    """The document the bytes of the file ``name`` hold, or why they are not text."""
    if b"\x00" in raw[:_SNIFF_BYTES]:
        return Unreadable(reason="binary content")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Unreadable(reason="not UTF-8 text")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    entry = entry_of(name)
    if isinstance(entry, Unread):
        return Unreadable(reason=entry.why(name))
    fmt = _format_of(entry)
    return Document(kind=fmt.kind, text=fmt.read(text))


def _format_of(entry: Format | Unread | None) -> Format:
    """The format a readable file is read as: its entry's, else ``UNLISTED``."""
    return entry if isinstance(entry, Format) else format_named(UNLISTED)
