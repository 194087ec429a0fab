"""Reading a file as text of a known kind: Markdown, plain text, reStructuredText, Org, HTML
(text only), JSON / JSONL, or source code.

The kind comes from the extension; a file with an unknown extension is read as plain text if
its content is text (UTF-8, no NUL byte). Binary content, a known binary format (images,
archives, PDF: no PDF reader is a dependency, ADR 0160) and undecodable bytes are refused with
a reason the summary names. HTML keeps its text and its headings (as Markdown headings, so the
Markdown chunker keeps them as context); scripts and styles are dropped.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Literal

import msgspec

__all__ = [
    "CODE_EXTENSIONS",
    "Document",
    "Kind",
    "Unreadable",
    "html_text",
    "kind_of",
    "read_document",
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


class Unreadable(msgspec.Struct, frozen=True, kw_only=True):
    """Why a file is not read."""

    reason: str


def kind_of(name: str) -> Kind | None:
    """The kind a file name's extension names, or ``None`` (sniffed from the content)."""
    ext = Path(name).suffix.lower()
    if ext in CODE_EXTENSIONS or name in ("Makefile", "Dockerfile", "Justfile"):
        return "code"
    return _KINDS.get(ext)


def read_document(path: Path) -> Document | Unreadable:
    """Read ``path`` as a document, or say why it cannot be."""
    ext = path.suffix.lower()
    if ext == ".pdf":
        return Unreadable(reason="PDF (no PDF reader installed)")
    if ext in _BINARY_EXTENSIONS:
        return Unreadable(reason=f"binary format ({ext})")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return Unreadable(reason=f"unreadable: {exc.strerror}")
    if b"\x00" in raw[:_SNIFF_BYTES]:
        return Unreadable(reason="binary content")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Unreadable(reason="not UTF-8 text")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    kind = kind_of(path.name) or "text"
    if kind == "html":
        return Document(kind="markdown", text=html_text(text))
    return Document(kind=kind, text=text)


_BLOCKS = frozenset(
    "p div section article main header footer aside nav li ul ol table tr blockquote pre "
    "dl dt dd figure figcaption form fieldset details summary address br hr".split()
)
_SKIP = frozenset({"script", "style", "noscript", "template", "head", "svg"})


class _TextOnly(HTMLParser):
    """Collects an HTML page's text: headings as ``#`` lines, blocks as paragraphs."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0
        self._heading: int | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skipping += 1
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._heading = int(tag[1])
            self.parts.append("\n\n" + "#" * self._heading + " ")
        elif tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._heading = None
            self.parts.append("\n\n")
        elif tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        # Inside a block, HTML's whitespace is one space; a heading stays on its line.
        core = " ".join(data.split())
        lead = " " if data[:1].isspace() else ""
        trail = " " if data[-1:].isspace() and core else ""
        self.parts.append(lead + core + trail)


def html_text(markup: str) -> str:
    """The text of an HTML page, with headings as Markdown ``#`` lines."""
    parser = _TextOnly()
    parser.feed(markup)
    parser.close()
    paragraphs = [" ".join(p.split()) for p in "".join(parser.parts).split("\n\n")]
    return "\n\n".join(p for p in paragraphs if p.strip("# "))
