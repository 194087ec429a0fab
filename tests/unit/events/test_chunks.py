"""The chunk-naming convention: one writer, one reader, each the other's inverse."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lcg.events import chunk_description, chunk_file


@given(st.text(min_size=1), st.text(min_size=1))
def test_the_file_read_back_is_the_file_written(source_file: str, chunk_id: str) -> None:
    assert chunk_file(chunk_id, chunk_description(source_file, chunk_id)) == source_file


def test_an_episode_without_a_file_has_none() -> None:
    assert chunk_file("note", "typed by hand") is None
    assert chunk_file("", "notes/a.md:") is None
    assert chunk_file("a.md#0123456789ab", ":a.md#0123456789ab") is None
    assert chunk_file("c1", "notes/a.md:c2") is None
