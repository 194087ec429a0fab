"""Lookup keys: the one normalisation names and group ids are compared by (ADR 0151).

A key is computed in Python, never by Kuzu: Kuzu's ``lower()`` and Python's disagree (final
sigma: ``ΟΔΥΣΣΕΥΣ``; dotted capital I: ``İstanbul``), and neither folds Unicode
normalisation (``Zoë`` as one code point or as ``o`` plus a combining diaeresis). The key is
NFC, full case folding (``str.casefold``: ``ß`` → ``ss``, every sigma → ``σ``), then NFC
again, so that a key is itself NFC (folding can decompose: ``ǰ`` folds to ``j`` + U+030C).
Names are stored as given; only their keys are folded.
"""

from __future__ import annotations

import unicodedata

__all__ = ["fold", "lookup_key"]


def fold(text: str) -> str:
    """``text`` in NFC, case-folded, in NFC again: equal for strings people read as equal."""
    if text.isascii():
        return text.lower()  # ASCII is NFC, and its casefold is lower()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


def lookup_key(name: str) -> str:
    """The key an entity is found by its name: ``fold`` of the trimmed name."""
    return fold(name.strip())
