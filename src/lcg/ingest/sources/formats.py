"""The formats lcg reads, in one table: each entry owns everything about its kind of file.

A ``Format`` names its extensions (and exact file names), its reader (decoded text → the
text to chunk), its sectioner (``sections``: how its text divides before chunks are packed),
the joiner of its pieces, and the extraction prompt its chunks get. An ``Unread`` entry is a
format lcg knows and does not read (PDF, images, archives): a file of it is skipped with its
reason, without being opened. Discovery (``discover``: an ``Unread`` file is skipped there),
reading (``readers``), chunking (``chunking``) and the choice of the extraction prompt
(``prompt_of``) all consult ``FORMATS`` and nothing else; ``lcg ingest --help`` lists it
(``format_list``), and a test holds the README's list to it.

Adding a format is its module (a reader and, if none here fits, a sectioner) and one line
here. A ``Format`` without a sectioner or a prompt does not type-check (and fails to build);
an extension in two entries fails at the first lookup. A name no entry lists is read as
``UNLISTED`` (plain text) when its content is text, and skipped with its reason when it is not
(``binary content``, ``not UTF-8 text``): what people keep in a tree without an extension
(``LICENSE``, ``notes``) is read, as before (ADR 0219).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Final

from lcg.ingest.sources.markup import html_text
from lcg.ingest.sources.sections import (
    Sectioner,
    code_sections,
    json_sections,
    jsonl_sections,
    markdown_sections,
    org_sections,
    rst_sections,
    text_sections,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from lcg.extract import SourceType

__all__ = [
    "FORMATS",
    "UNLISTED",
    "Entry",
    "Format",
    "Unread",
    "as_is",
    "entry_of",
    "format_list",
    "format_named",
    "prompt_of",
]


def as_is(text: str) -> str:
    """The reader of a format whose text is chunked as it is written."""
    return text


@dataclass(frozen=True, slots=True, kw_only=True)
class Format:
    """A format lcg reads: its extensions, reader, sectioner and extraction prompt."""

    #: Its name: the ``kind`` of the ``Document`` it reads (unless ``reads_as`` says other).
    name: str
    #: As ``lcg ingest --help`` and the README list it.
    title: str
    #: Lower-case, with their dot (``.md``).
    extensions: tuple[str, ...]
    #: Decoded text (UTF-8, ``\n`` newlines) → the text that is chunked and stored.
    read: Callable[[str], str]
    #: The text → its sections (heading path, pieces) in document order.
    sections: Sectioner
    #: The extraction prompt its chunks are extracted with.
    prompt: SourceType
    #: Exact file names of it that have no extension (``Makefile``).
    file_names: tuple[str, ...] = ()
    #: Between two pieces packed into one chunk.
    joiner: str = "\n\n"
    #: The format whose text ``read`` gives, if another (HTML is read as Markdown).
    reads_as: str = ""
    #: Whether a file of it whose text sits on very long lines is skipped as minified.
    judge_minified: bool = False

    @property
    def kind(self) -> str:
        """The ``kind`` of the document it reads (``reads_as``, else its name)."""
        return self.reads_as or self.name


@dataclass(frozen=True, slots=True, kw_only=True)
class Unread:
    """A format lcg knows and does not read: its files are skipped, never opened."""

    title: str
    extensions: tuple[str, ...]
    #: Why, as the summary names it; ``{ext}`` is the file's extension.
    reason: str

    def why(self, name: str) -> str:
        """The reason the file ``name`` (of this format) is skipped."""
        return self.reason.replace("{ext}", PurePosixPath(name).suffix.lower())


#: An entry of the table.
Entry = Format | Unread

_BINARY = "binary format ({ext})"

#: The formats, in the order ``lcg ingest --help`` lists those it reads.
FORMATS: tuple[Entry, ...] = (
    Format(
        name="markdown",
        title="Markdown",
        extensions=(".md", ".markdown", ".mdown", ".mkd"),
        read=as_is,
        sections=markdown_sections,
        prompt="Text",
    ),
    Format(
        name="text",
        title="text",
        extensions=(".txt", ".text"),
        read=as_is,
        sections=text_sections,
        prompt="Text",
    ),
    Format(
        name="rst",
        title="reStructuredText",
        extensions=(".rst",),
        read=as_is,
        sections=rst_sections,
        prompt="Text",
    ),
    Format(
        name="org",
        title="Org",
        extensions=(".org",),
        read=as_is,
        sections=org_sections,
        prompt="Text",
    ),
    Format(
        name="html",
        title="HTML (text only)",
        extensions=(".html", ".htm", ".xhtml"),
        read=html_text,
        sections=markdown_sections,
        reads_as="markdown",
        prompt="Text",
    ),
    Format(
        name="json",
        title="JSON",
        extensions=(".json",),
        read=as_is,
        sections=json_sections,
        joiner="\n",
        prompt="Json",
    ),
    Format(
        name="jsonl",
        title="JSONL",
        extensions=(".jsonl", ".ndjson"),
        read=as_is,
        sections=jsonl_sections,
        joiner="\n",
        prompt="Json",
    ),
    Format(
        name="code",
        title="source code",
        extensions=tuple(
            ".py .pyi .js .mjs .cjs .jsx .ts .tsx .go .rs .java .kt .kts .scala .c .h .cc .cpp"
            " .cxx .hpp .hh .cs .swift .rb .php .pl .pm .lua .sh .bash .zsh .fish .sql .r .jl"
            " .ex .exs .erl .hs .ml .mli .clj .cljs .dart .vue .svelte .css .scss .less .toml"
            " .yaml .yml .ini .cfg .tf .proto .gradle .cmake .mk .el .vim .zig .nim".split()
        ),
        file_names=("Makefile", "Dockerfile", "Justfile"),
        read=as_is,
        sections=code_sections,
        prompt="Text",
        judge_minified=True,
    ),
    # No PDF reader is a dependency (ADR 0160).
    Unread(title="PDF", extensions=(".pdf",), reason="PDF (no PDF reader installed)"),
    Unread(
        title="images",
        extensions=tuple(".png .jpg .jpeg .gif .bmp .ico .webp .tif .tiff .psd .svgz".split()),
        reason=_BINARY,
    ),
    Unread(
        title="audio and video",
        extensions=tuple(".mp3 .mp4 .m4a .wav .flac .ogg .mov .avi .mkv .webm".split()),
        reason=_BINARY,
    ),
    Unread(
        title="archives and packages",
        extensions=tuple(
            ".zip .gz .tgz .bz2 .xz .zst .7z .rar .tar .jar .war .whl .egg .iso .dmg".split()
        ),
        reason=_BINARY,
    ),
    Unread(
        title="office documents and e-books",
        extensions=tuple(".doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .epub".split()),
        reason=_BINARY,
    ),
    Unread(
        title="executables and compiled code",
        extensions=tuple(".exe .dll .so .dylib .a .o .obj .class .pyc .pyo .wasm".split()),
        reason=_BINARY,
    ),
    Unread(
        title="data files",
        extensions=tuple(".bin .dat .db .sqlite .sqlite3 .parquet .arrow .npy .npz .pkl".split()),
        reason=_BINARY,
    ),
    Unread(title="fonts", extensions=tuple(".ttf .otf .woff .woff2 .eot".split()), reason=_BINARY),
)

#: The format a file is read as when no entry lists its name (if its content is text).
UNLISTED: Final = "text"


@dataclass(frozen=True, slots=True)
class _Index:
    by_extension: dict[str, Entry]
    by_file_name: dict[str, Entry]
    by_name: dict[str, Format]


@lru_cache(maxsize=4)
def _index(table: tuple[Entry, ...]) -> _Index:
    """The lookups of ``table``; an extension, file name or format name in two entries is an
    error (so no entry can shadow another, as a list checked first once did)."""
    index = _Index({}, {}, {})
    for entry in table:
        keyed: list[tuple[dict[str, Entry], str]] = [
            (index.by_extension, e) for e in entry.extensions
        ]
        if isinstance(entry, Format):
            keyed += [(index.by_file_name, n) for n in entry.file_names]
            if entry.name in index.by_name:
                raise ValueError(f"two formats are named {entry.name!r}")
            index.by_name[entry.name] = entry
        for where, key in keyed:
            if key != key.lower() and where is index.by_extension:
                raise ValueError(f"{entry.title}: the extension {key!r} is not lower-case")
            if key in where:
                raise ValueError(f"{key!r} is listed by {where[key].title} and {entry.title}")
            where[key] = entry
    for entry in index.by_name.values():
        if entry.kind not in index.by_name:
            raise ValueError(f"{entry.title} reads as {entry.kind!r}, which no format is")
    return index


def entry_of(name: str) -> Entry | None:
    """The entry for the file ``name`` (its exact name, then its extension in any case), or
    ``None``: no entry lists it (read as ``UNLISTED`` if its content is text)."""
    index = _index(FORMATS)
    found = index.by_file_name.get(name)
    if found is None:
        found = index.by_extension.get(PurePosixPath(name).suffix.lower())
    return found


def format_named(kind: str) -> Format:
    """The format named ``kind`` (a ``Document``'s kind); ``ValueError`` for no such format."""
    found = _index(FORMATS).by_name.get(kind)
    if found is None:
        raise ValueError(f"no format is named {kind!r}")
    return found


def prompt_of(source_file: str) -> SourceType:
    """The extraction prompt of a chunk of ``source_file`` (a path or a served name)."""
    entry = entry_of(source_file.rsplit("/", 1)[-1])
    fmt = entry if isinstance(entry, Format) else format_named(UNLISTED)
    return fmt.prompt


def format_list() -> str:
    """The formats lcg reads, in words: ``Markdown, text, … and source code``."""
    titles = [e.title for e in FORMATS if isinstance(e, Format)]
    return ", ".join(titles[:-1]) + " and " + titles[-1] if len(titles) > 1 else titles[0]
