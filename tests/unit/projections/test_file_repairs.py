"""What the projector does with a damaged snapshot after a catch-up (``FileRepairs``, ADR 0155)."""

from __future__ import annotations

from lcg.events.position import Position
from lcg.projections._group_records import DamageBook, FileRepairs

FOUND = "text snapshot /ws/.lcg/text/a.bm25 is damaged (its CRC-32 is 00000001, 00000002 recorded)"


def _repairs() -> tuple[FileRepairs, DamageBook]:
    book = DamageBook(None)
    repairs = FileRepairs(book)
    repairs.note("text", {"a": FOUND})
    return repairs, book


Positions = dict[str, Position]


def _at(text: int | None, graph: int | None) -> Positions:
    def pos(seq: int | None) -> Position:
        return Position(group_id="a", generation=None if seq is None else "gen", seq=seq)

    return {"graph": pos(graph), "text": pos(text), "vectors": pos(graph)}


def test_caught_up_with_the_graph_is_noted_as_rebuilt() -> None:
    repairs, book = _repairs()
    repairs.settle("a", _at(text=41, graph=41))
    assert repairs.pending == {} and book.groups == {}
    assert repairs.notes("a") == [
        f"{FOUND}; its text projection was rebuilt from the stream through seq 41"
    ]


def test_short_of_the_graph_degrades_with_the_path_and_the_remedy() -> None:
    repairs, book = _repairs()
    repairs.settle("a", _at(text=None, graph=41))
    reason = book.reason("a")
    assert reason is not None and book.groups["a"].kind == "projection"
    assert reason.startswith(f"group 'a': {FOUND}; it could not be rebuilt")
    assert "lcg replay --group a --force-clear" in reason
    assert repairs.notes("a") == [f"{FOUND}; not yet rebuilt"]
    # A later rebuild (the remedy) heals it.
    repairs.settle("a", _at(text=41, graph=41))
    assert book.groups == {} and "rebuilt from the stream" in repairs.notes("a")[0]


def test_an_inspecting_open_rebuilds_nothing_and_says_how_to() -> None:
    repairs, book = _repairs()
    # Even where positions agree (an empty group), nothing ran, so nothing was rebuilt.
    repairs.settle("a", _at(text=None, graph=None), attempted=False)
    reason = book.reason("a")
    assert reason is not None and "`lcg serve` does so when it opens the workspace" in reason
    assert "lcg replay --group a --force-clear" in reason


def test_vectors_waiting_for_the_embedder_stay_pending_without_degrading() -> None:
    book = DamageBook(None)
    repairs = FileRepairs(book)
    repairs.note("vectors", {"a": "vector snapshot meta /x is damaged (cut)"})
    positions: Positions = {
        "graph": Position(group_id="a", generation="gen", seq=41),
        "text": Position(group_id="a", generation="gen", seq=41),
        "vectors": Position.none("a"),
    }
    repairs.settle("a", positions, embedder_down=True)
    assert book.groups == {} and repairs.notes("a") == [
        "vector snapshot meta /x is damaged (cut); not yet rebuilt"
    ]


def test_the_streams_own_damage_is_not_overwritten() -> None:
    repairs, book = _repairs()
    book.set("a", "behind", "group 'a': the stream lost its tail")
    repairs.settle("a", _at(text=None, graph=41))
    assert book.groups["a"].kind == "behind"


def test_a_cleared_group_forgets_its_files() -> None:
    repairs, book = _repairs()
    repairs.forget("a")
    repairs.settle("a", _at(text=None, graph=None))
    assert repairs.notes("a") == [] and book.groups == {}
