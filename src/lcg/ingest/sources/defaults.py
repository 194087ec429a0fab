"""What a tree holds that people do not mean as knowledge, skipped unless asked for (issue 28
item 3, ADR 0192): lock files, editor backups and swap files, minified files and source
maps, SVG.

Each kind is a few ignore patterns with the reason the summary names. They apply beneath
every ignore file of the tree: a file no ignore line decides is checked against them, and a
negation in ``.lcgignore`` (or ``.gitignore``) such as ``!Cargo.lock`` reads the file after
all. A code file whose text sits mostly on very long lines is minified whatever its name
(``minified``); a re-included file is not judged so either. A file named on the command line
is read as it is: these are defaults for walking a folder.
"""

from __future__ import annotations

from lcg.ingest.sources.ignore import IgnoreFile

__all__ = ["DEFAULT_SKIPS", "default_skip", "minified"]

#: (what the files are, their ignore patterns). ``#*#`` is written escaped (``\#*#``): a
#: line that starts with ``#`` is a comment in an ignore file.
DEFAULT_SKIPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "lock file",
        (
            "*.lock",
            "package-lock.json",
            "npm-shrinkwrap.json",
            "pnpm-lock.yaml",
            "yarn.lock",
            "Cargo.lock",
            "poetry.lock",
            "Pipfile.lock",
            "Gemfile.lock",
            "composer.lock",
            "go.sum",
            "bun.lockb",
        ),
    ),
    ("editor backup or swap file", ("*~", ".#*", "\\#*#", "*.swp", "*.swo")),
    ("minified file", ("*.min.js", "*.min.mjs", "*.min.css")),
    ("source map (generated)", ("*.js.map", "*.css.map")),
    ("SVG image (markup as data)", ("*.svg",)),
)

_RULES = tuple((what, IgnoreFile(patterns)) for what, patterns in DEFAULT_SKIPS)

#: A file of at least this many characters is judged minified by its lines.
_MINIFIED_MIN_CHARS = 2048
#: A line this long is not written by a person.
_LONG_LINE = 500
#: The share of the text on long lines that makes a file minified.
_MINIFIED_SHARE = 0.5


def _why(what: str, name: str) -> str:
    return f"{what} (skipped by default; `!{name}` in .lcgignore reads it)"


def default_skip(name: str) -> str | None:
    """Why the file ``name`` is skipped by default, or ``None``."""
    for what, rules in _RULES:
        if rules.decide(name, is_dir=False):
            return _why(what, name)
    return None


def minified(name: str, text: str) -> str | None:
    """Why the code file ``name`` holding ``text`` is skipped as minified, or ``None``."""
    if len(text) < _MINIFIED_MIN_CHARS:
        return None
    long_chars = sum(len(line) for line in text.split("\n") if len(line) > _LONG_LINE)
    share = long_chars / len(text)
    if share < _MINIFIED_SHARE:
        return None
    what = f"minified file ({share:.0%} of its text on lines over {_LONG_LINE} characters)"
    return _why(what, name)
