"""The demo's Apollo corpus written as a folder of linked Markdown files (ADR 0209).

``examples/apollo/corpus_prose.jsonl`` holds each article's cleaned prose: the capture removed
the wiki markup, article links included. ``write_corpus`` writes one file per article — front
matter with its ``title`` and its ``revision_id`` as ``id``, then the prose — and restores the
links the way Wikipedia places them, on a first mention: the first whole-word occurrence of
another article's exact title in an article's prose becomes ``[[Title]]``. Titles are placed
longest first, so "Apollo 8 Genesis reading" claims its words before "Apollo 8" looks; an
occurrence inside a longer word ("Apollo 1" in "Apollo 11") or inside a link already placed
is passed over. The words of the prose are unchanged: only the brackets are added.

This is a reconstruction, not the source's own links: a mention Wikipedia did not link is
linked here, and a link whose words differ from the title (a piped link) is not restored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import msgspec

from lcg.errors import ConfigError

__all__ = ["CORPUS_FILE", "Article", "WrittenCorpus", "link_prose", "read_articles", "write_corpus"]

#: The corpus file inside the corpus folder.
CORPUS_FILE = "corpus_prose.jsonl"
#: The suffix of the files written (``write_corpus`` removes only files of this suffix).
_SUFFIX = ".md"
#: Characters that end or split a wiki link (``[[Target|label]]``, ``[[Target#Heading]]``):
#: a title holding one cannot be written as a link target, so it is never linked.
_WIKI_SYNTAX = re.compile(r"[\[\]|#\n]")
#: The file that marks a folder as the demo's own (hidden: the scan passes over it).
_MARKER = ".lcg-demo-corpus"
#: The longest file name written, in bytes before the suffix (file systems allow 255).
_MAX_NAME_BYTES = 200


class Article(msgspec.Struct, frozen=True):
    """One article of the corpus."""

    title: str
    revision_id: int
    prose: str


class WrittenCorpus(msgspec.Struct, kw_only=True):
    """What ``write_corpus`` did: the files (title → file name), how many links each got, and
    how many files it wrote, left as they were, and removed."""

    files: dict[str, str]
    links: dict[str, int]
    written: int = 0
    unchanged: int = 0
    removed: int = 0


def read_articles(corpus: Path, limit: int | None = None) -> list[Article]:
    """The articles of ``corpus/corpus_prose.jsonl`` in file order (its header line passed
    over), the first ``limit`` of them when given."""
    out: list[Article] = []
    with open(corpus / CORPUS_FILE, "rb") as fh:
        for line in fh:
            raw = msgspec.json.decode(line)
            if isinstance(raw, dict) and "_header" in raw:
                continue
            out.append(msgspec.convert(raw, Article))
    return out[:limit] if limit else out


def _title_patterns(titles: Sequence[str]) -> list[tuple[str, re.Pattern[str]]]:
    """A whole-word pattern per title that can be a link target, longest first."""
    usable = sorted(
        {t for t in titles if t.strip() == t and t and not _WIKI_SYNTAX.search(t)},
        key=lambda t: (-len(t), t),
    )
    return [(t, re.compile(r"(?<!\w)" + re.escape(t) + r"(?!\w)")) for t in usable]


def link_prose(prose: str, own_title: str, patterns: list[tuple[str, re.Pattern[str]]]) -> str:
    """``prose`` with the first free whole-word occurrence of each other title of
    ``patterns`` (longest first, as ``_title_patterns`` orders them) written ``[[Title]]``."""
    claimed: list[tuple[int, int]] = []
    for title, pattern in patterns:
        if title == own_title or title not in prose:
            continue
        for m in pattern.finditer(prose):
            start, end = m.span()
            if all(end <= s or start >= e for s, e in claimed):
                claimed.append((start, end))
                break
    out: list[str] = []
    at = 0
    for start, end in sorted(claimed):
        out.append(prose[at:start])
        out.append(f"[[{prose[start:end]}]]")
        at = end
    out.append(prose[at:])
    return "".join(out)


def _file_names(articles: Sequence[Article]) -> dict[str, str]:
    """A file name per title: the title with its path separators and control characters
    replaced, never hidden (the scan passes over dot files), within the name limit; a name
    taken already (any case) gets the revision id."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for a in articles:
        stem = re.sub(r"[/\\\x00-\x1f\x7f]", "_", a.title).lstrip(".") or "article"
        while len(stem.encode()) > _MAX_NAME_BYTES:
            stem = stem[:-1]
        name = stem + _SUFFIX
        if name.casefold() in taken:
            name = f"{stem} ({a.revision_id}){_SUFFIX}"
        taken.add(name.casefold())
        names.setdefault(a.title, name)
    return names


def _markdown(article: Article, body: str) -> str:
    # JSON's string form is YAML's double-quoted scalar: any title reads back as itself.
    title = msgspec.json.encode(article.title).decode()
    return f"---\ntitle: {title}\nid: {article.revision_id}\n---\n{body.rstrip()}\n"


def write_corpus(articles: Sequence[Article], folder: Path) -> WrittenCorpus:
    """Make ``folder`` hold exactly one linked Markdown file per article: a file whose text
    is already right is left as it is (so an unchanged corpus syncs as unchanged), other
    ``.md`` files directly in ``folder`` are removed (the folder is the demo's own).

    A folder that holds anything and was not made here (no marker file) is refused with a
    ``ConfigError``: the demo never rewrites or removes files it did not write."""
    if folder.is_dir() and any(folder.iterdir()) and not (folder / _MARKER).is_file():
        raise ConfigError(
            f"{folder} already holds files that lcg demo did not write: give the demo a "
            "workspace of its own (--workspace DIR)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / _MARKER
    if not marker.is_file():
        marker.write_text("written by lcg demo: its files are rewritten on each run\n")
    files = _file_names(articles)
    patterns = _title_patterns([a.title for a in articles])
    done = WrittenCorpus(files=files, links={})
    wanted: set[str] = set()
    for a in articles:
        name = files[a.title]
        if name in wanted:
            continue  # a title listed twice: its first article is the one written
        wanted.add(name)
        body = link_prose(a.prose, a.title, patterns)
        done.links[a.title] = body.count("[[") - a.prose.count("[[")
        text = _markdown(a, body)
        path = folder / name
        try:
            same = path.read_text(encoding="utf-8") == text
        except (FileNotFoundError, UnicodeDecodeError):
            same = False
        if same:
            done.unchanged += 1
        else:
            path.write_text(text, encoding="utf-8")
            done.written += 1
    for path in sorted(folder.iterdir()):
        if path.suffix == _SUFFIX and path.name not in wanted and path.is_file():
            path.unlink()
            done.removed += 1
    return done
