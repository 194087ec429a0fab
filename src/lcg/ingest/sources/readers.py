"""Reading a file as text of a known kind: Markdown, plain text, reStructuredText, Org, HTML
(text only), JSON / JSONL, or source code.

The kind comes from the extension; a file with an unknown extension is read as plain text if
its content is text (UTF-8, no NUL byte). Binary content, a known binary format (images,
archives, PDF: no PDF reader is a dependency, ADR 0160) and undecodable bytes are refused with
a reason the summary names. HTML keeps its text and its headings (as Markdown headings, so the
Markdown chunker keeps them as context); scripts and styles are dropped (``markup``).

A file is opened through ``opening``: relative to its tree, never through a link, regular
files only, at most ``max_bytes`` read (ADR 0192). ``Unreadable`` is ``opening.Refusal``:
its ``kept`` says the failure is this run's (its stored chunks stay), not the file's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import msgspec

from lcg.ingest.sources.defaults import minified
from lcg.ingest.sources.markup import html_text
from lcg.ingest.sources.opening import DEFAULT_MAX_FILE_BYTES
from lcg.ingest.sources.opening import Refusal as Unreadable
from lcg.ingest.sources.opening import read_in_tree as read_bytes_in_tree

__all__ = [
    "CODE_EXTENSIONS",
    "Document",
    "Kind",
    "Unreadable",
    "decode_document",
    "html_text",
    "kind_of",
    "read_document",
    "read_in_tree",
]

Kind = Literal["markdown", "text", "rst", "org", "html", "json", "jsonl", "code"]

_KINDS: dict[str, Kind] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".mkd": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "rst",
    ".org": "org",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}

#: Source code read as code (chunked by top-level blocks).
CODE_EXTENSIONS = frozenset(
    ".py .pyi .js .mjs .cjs .jsx .ts .tsx .go .rs .java .kt .kts .scala .c .h .cc .cpp .cxx .hpp"
    " .hh .cs .swift .rb .php .pl .pm .lua .sh .bash .zsh .fish .sql .r .jl .ex .exs .erl .hs"
    " .ml .mli .clj .cljs .dart .vue .svelte .css .scss .less .toml .yaml .yml .ini .cfg"
    " .tf .proto .gradle .cmake .mk .el .vim .zig .nim".split()
)

#: Formats known to be binary: refused without reading them.
_BINARY_EXTENSIONS = frozenset(
    ".png .jpg .jpeg .gif .bmp .ico .webp .tif .tiff .psd .svgz .mp3 .mp4 .m4a .wav .flac .ogg"
    " .mov .avi .mkv .webm .zip .gz .tgz .bz2 .xz .zst .7z .rar .tar .jar .war .whl .egg .pdf"
    " .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .epub .exe .dll .so .dylib .a .o .obj"
    " .class .pyc .pyo .wasm .bin .dat .db .sqlite .sqlite3 .parquet .arrow .npy .npz .pkl"
    " .ttf .otf .woff .woff2 .eot .iso .dmg".split()
)

#: How far into a file a NUL byte is looked for (as git and grep do).
_SNIFF_BYTES = 8192


class Document(msgspec.Struct, frozen=True, kw_only=True):
    """A file's text (newlines normalised to ``\\n``) and the kind it is read as."""

    kind: Kind
    text: str


def kind_of(name: str) -> Kind | None:
    """The kind a file name's extension names, or ``None`` (sniffed from the content)."""
    ext = Path(name).suffix.lower()
    if ext in CODE_EXTENSIONS or name in ("Makefile", "Dockerfile", "Justfile"):
        return "code"
    return _KINDS.get(ext)


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
    ext = Path(name).suffix.lower()
    if ext == ".pdf":
        return Unreadable(reason="PDF (no PDF reader installed)")
    if ext in _BINARY_EXTENSIONS:
        return Unreadable(reason=f"binary format ({ext})")
    raw = read_bytes_in_tree(base, rel, max_bytes)
    if isinstance(raw, Unreadable):
        return raw
    doc = decode_document(name, raw)
    if defaults and isinstance(doc, Document) and doc.kind == "code":
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
    kind = kind_of(name) or "text"
    if kind == "html":
        return Document(kind="markdown", text=html_text(text))
    return Document(kind=kind, text=text)
