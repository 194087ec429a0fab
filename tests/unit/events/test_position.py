"""``Position``: seqs are weighed within one generation only; questions about the generation
are answered, never mixed into a seq comparison."""

from __future__ import annotations

import pytest

from lcg.errors import GenerationError
from lcg.events.position import Position


def _at(seq: int | None, generation: str | None = "G", group: str = "g") -> Position:
    return Position(group_id=group, generation=generation, seq=seq)


def test_none_is_empty_and_equal_to_an_explicit_empty_position() -> None:
    none = Position.none("g")
    assert none.empty and none == _at(None, None)
    assert not _at(0).empty
    assert _at(3) == _at(3) and _at(3) != _at(3, "H") and _at(3) != _at(3, group="h")


def test_next_seq_counts_within_the_generation() -> None:
    assert Position.none("g").next_seq("G") == 0
    assert _at(None, "old").next_seq("G") == 0  # nothing applied: nothing to mistake
    assert _at(0).next_seq("G") == 1
    assert _at(41).next_seq("G") == 42


def test_next_seq_of_another_generation_is_refused() -> None:
    with pytest.raises(GenerationError, match="generation 'G'.*says nothing of generation 'H'"):
        _at(5).next_seq("H")
    with pytest.raises(GenerationError):
        _at(5, None).next_seq("H")


def test_stale_generation_names_the_generation_a_reset_replaced() -> None:
    assert _at(5, "old").stale_generation("new") == "old"
    assert _at(5, "old").stale_generation(None) == "old"
    assert _at(5).stale_generation("G") is None
    assert Position.none("g").stale_generation("G") is None  # nothing recorded, nothing reset


def test_continues_only_at_the_next_seq_of_the_same_or_no_generation() -> None:
    assert Position.none("g").continues(0, "G")
    assert not Position.none("g").continues(1, "G")  # a gap: catch up first
    assert _at(4).continues(5, "G")
    assert not _at(4).continues(4, "G") and not _at(4).continues(6, "G")
    assert not _at(4).continues(5, "H")  # another generation never continues this one
    assert _at(4, None).continues(5, "G")


def test_behind_weighs_the_same_generation_and_refuses_others() -> None:
    assert not Position.none("g").behind(Position.none("g"))
    assert _at(None).behind(_at(0))
    assert not _at(3).behind(_at(3)) and _at(2).behind(_at(3)) and not _at(4).behind(_at(3))
    with pytest.raises(GenerationError, match="generations 'G' and 'H'"):
        _at(1).behind(_at(1, "H"))
    with pytest.raises(GenerationError, match="groups 'g' and 'h'"):
        _at(1).behind(_at(1, group="h"))
