"""The tests' event types come from one registry, counted against the ``Event`` union (issue 31,
ADR 0221): a member of the union with no entry in ``tests/event_registry.py`` fails here by
name, and everything derived from the registry (samples, strategies, the workspace history the
dump round trip replays) holds exactly one kind per member."""

from __future__ import annotations

from typing import get_args

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

import event_registry
from event_registry import KINDS, UNION, Values, sample_events, strategies, tag_of, unregistered
from event_samples import history
from lcg.events.model import CURRENT_VERSIONS, Event


def test_the_registry_counts_against_the_union_itself() -> None:
    assert UNION == get_args(Event)
    assert sorted(tag_of(t) for t in UNION) == sorted(CURRENT_VERSIONS)


def test_every_event_type_has_an_entry() -> None:
    assert unregistered() == [], (
        f"add an EventKind for {unregistered()} to tests/event_registry.py "
        "(its sample, strategy and history step)"
    )
    assert event_registry.unknown() == []


def test_a_type_missing_from_the_registry_is_named() -> None:
    class Frobnicated(msgspec.Struct, tag="Frobnicated"):
        pass

    union = (*UNION, Frobnicated)
    event_registry.UNION = union  # type: ignore[assignment]
    try:
        assert event_registry.unregistered() == ["Frobnicated"]
    finally:
        event_registry.UNION = UNION


def test_samples_hold_exactly_one_event_of_every_type() -> None:
    assert [type(e) for e in sample_events()] == list(UNION)
    assert {e.group_id for e in sample_events("x")} == {"x"}


def test_strategies_cover_every_type_and_draw_it() -> None:
    plain = st.text(max_size=3)
    values = Values(
        group=st.just("g"), texts=plain, ids=plain, endpoints=plain, content=plain,
        times=st.just("2024-05-01T12:00:00.000000Z"), maybe_times=st.none(),
        ints=st.integers(0, 3), attributes=st.just("{}"),
    )  # fmt: skip
    built = strategies(values)
    assert sorted(built) == sorted(CURRENT_VERSIONS)

    @settings(max_examples=5, database=None)
    @given(data=st.data())
    def draws_its_own_type(data: st.DataObject) -> None:
        for tag, strategy in built.items():
            assert tag_of(type(data.draw(strategy))) == tag

    draws_its_own_type()


def test_every_kind_has_a_history_step() -> None:
    # The dump round trip checks each step records its type (tests/integration/test_dump_replay).
    assert all(callable(kind.step) for kind in KINDS.values())


def test_the_graph_story_passes_through_every_type_but_the_purge() -> None:
    assert {tag_of(type(e)) for e in history()} == set(CURRENT_VERSIONS) - {"GroupPurged"}
