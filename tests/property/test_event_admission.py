"""No poison event, by construction (ADR 0150): every event the codec accepts applies to every
projection and replays to the same digests; what it refuses never reaches a stream.

Events of every type of the ``Event`` union (``event_registry``'s strategies) are generated
with extreme values: years 0001 and 9999, the spellings of times older lcg wrote and text that
names no time, the largest integers JSON carries and past them, strings from every Unicode
category (astral characters, NUL, lone surrogates, bidi controls) and, as explicit examples,
strings as long as the largest request the service accepts. Each goes through
``Workspace.commit`` (the writer's ``codec.admit``, then the live apply to the real Kuzu graph,
the BM25 text projection and the hnswlib vectors with the hash test embedder); the group's
projections are then read (searches), rebuilt from the stream and compared by digest. One
workspace serves every example, a fresh group each.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from event_registry import Values, strategies
from lcg.config import Config
from lcg.errors import InvalidParamsError
from lcg.events.model import EdgeRecord, EpisodeAdded, Event, RelationshipAsserted
from lcg.events.reader import ReadReport, StreamReader
from lcg.extract.embedders import HashEmbedder
from lcg.projections.graph.pointers import Pointer, Pointers, with_pointers
from lcg.query.search import Searcher
from lcg.timestamps import to_text
from lcg.workspace import Workspace

#: The largest request line ``lcg serve`` reads (``LCG_RPC_MAX_REQUEST_BYTES``' default): no
#: string a client sends is longer.
MAX_REQUEST_BYTES = Config.from_env(Path("/nonexistent"), env={}).rpc_max_request_bytes

# ---- values ----------------------------------------------------------------------------

#: Every Unicode category, surrogates (Cs) and unassigned code points (Cn) included.
any_char = st.characters(exclude_categories=())
odd_texts = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "\ud800",  # a lone surrogate: not Unicode text, the codec must refuse it
        "\U0010ffff",
        "😀" * 3,
        "ΟΔΥΣΣΕΥΣ",
        "İstanbul",
        "\u202ereversed",
        "\ufeff",
        "{}",
        "null",
        "1-01-01T00:00:00.000000Z",
        "$x OR 1=1 //",
        "\\u0000",
    ]
)


def mostly(common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``common`` nine times in ten: an event of many fields is still accepted often."""
    return st.integers(0, 9).flatmap(lambda i: rare if i == 0 else common)


#: Text a JSON document can hold (what a client can send): every category but Cs.
json_texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=24)
#: Mostly text a client can send; sometimes with lone surrogates, which the codec refuses.
texts = mostly(json_texts, st.text(any_char, max_size=24) | odd_texts)
#: A few shared ids, so events of one example meet the rows another one wrote.
ids = st.one_of(st.sampled_from(["a", "b", "c", "ep", ""]), texts)

EXTREME_TIMES = [
    "0001-01-01T00:00:00.000000Z",
    "9999-12-31T23:59:59.999999Z",
    "2024-02-29T12:00:00.000000Z",
    # Spellings older lines hold: upcast on the way in.
    "1-01-01T00:00:00.000000Z",
    "999-01-01T00:00:00.000000Z",
    "2024-05-01T14:00:00+02:00",
    "2024-05-01 12:00:00",
    "",
    # Names no time, or none of years 0001-9999 in UTC: refused.
    "9999-12-31T23:59:59-01:00",
    "0001-01-01T00:00:00+01:00",
    "0000-01-01T00:00:00.000000Z",
    "2023-02-29T00:00:00.000000Z",
    "soon",
]
recorded_times = st.datetimes(min_value=datetime(1, 1, 1)).map(to_text)
times = mostly(recorded_times, st.sampled_from(EXTREME_TIMES) | texts)
maybe_times = st.none() | times
#: Integers JSON carries: small, the 32/53/63/64-bit edges, and past 64 bits.
ints = st.one_of(
    st.integers(0, 3),
    st.sampled_from([2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -1, -(2**63), 10**40]),
)


def _pointer_attrs(src: str, group: str, state: str, uuid: str | None, seq: int | None) -> str:
    pointer = Pointer(
        source_group_id=group,
        endpoint_name=src,
        binding_state=state,  # type: ignore[arg-type]
        resolved_uuid=uuid,
        bound_at_seq=seq,
    )
    return with_pointers("{}", Pointers(src=pointer))


json_values = st.recursive(
    st.none() | st.booleans() | ints | st.floats() | json_texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(json_texts, inner, max_size=3),
    max_leaves=8,
)
attributes = st.one_of(
    st.just("{}"),
    texts,
    st.dictionaries(json_texts, json_values, max_size=3).map(
        lambda d: msgspec.json.encode(d).decode()
    ),
    st.builds(
        _pointer_attrs,
        json_texts,
        json_texts,
        st.sampled_from(["bound", "unbound", "ambiguous", "other"]),
        st.none() | st.sampled_from(["a", "b", "c"]) | json_texts,
        st.none() | ints,
    ),
)

# ---- events ----------------------------------------------------------------------------

G = st.just("-")  # replaced by the example's own group
#: Extreme values in every field of every event type (``event_registry``'s strategies).
VALUES = Values(
    group=G, texts=texts, ids=ids, endpoints=ids, content=texts, times=times,
    maybe_times=maybe_times, ints=ints, attributes=attributes,
)  # fmt: skip
EVENTS: dict[str, st.SearchStrategy[Event]] = strategies(VALUES)

#: Strings as long as a request may carry (its JSON framing aside), in the fields that every
#: projection indexes: an episode's content (text, vectors, graph) and an edge's fact.
_LONG = MAX_REQUEST_BYTES - 1024
_LONG_WORDS = ("lorem ipsum 😀 dolor " * (_LONG // 24))[: _LONG // 4]
LONGEST: list[Event] = [
    EpisodeAdded(
        group_id="-", uuid="ep", name="n" * 4096, content="x" * _LONG,
        created_at="9999-12-31T23:59:59.999999Z", valid_at="0001-01-01T00:00:00.000000Z",
    ),
    RelationshipAsserted(
        group_id="-", created=True,
        edge=EdgeRecord(
            uuid="r", name="P" * 4096, source_uuid="a", target_uuid="b", fact=_LONG_WORDS,
            valid_at="0001-01-01T00:00:00.000000Z", created_at="9999-12-31T23:59:59.999999Z",
        ),
    ),
]  # fmt: skip


# ---- the property ----------------------------------------------------------------------

_GROUPS = itertools.count()
#: Fields holding uuids (or lists of them). Commands mint uuid4s, unique across groups; the
#: graph keys its rows by uuid alone, so each example's ids are scoped to its group (a stream
#: that reuses another group's uuids is another matter: see ADR 0150).
_ID_FIELDS = frozenset({"uuid", "source_uuid", "target_uuid", "episode_uuid", "canonical_uuid"})
_ID_LISTS = frozenset({"episodes", "mentions", "episode_uuids"})


def _scoped(value: Any, prefix: str) -> Any:
    """``value`` with every uuid it names prefixed (``""``, an unbound endpoint, kept)."""
    if isinstance(value, list):
        return [_scoped(v, prefix) for v in value]
    if not isinstance(value, msgspec.Struct):
        return value
    changes: dict[str, Any] = {}
    for name in value.__struct_fields__:
        v = getattr(value, name)
        if name in _ID_FIELDS and isinstance(v, str) and v:
            changes[name] = prefix + v
        elif name in _ID_LISTS and isinstance(v, list):
            changes[name] = [prefix + u if u else u for u in v]
        elif isinstance(v, (list, msgspec.Struct)):
            changes[name] = _scoped(v, prefix)
    return msgspec.structs.replace(value, **changes)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """One real workspace for every example (each example writes a group of its own)."""
    root = tmp_path_factory.mktemp("admission")
    config = Config.from_env(root, env={"LCG_EMBEDDER": "hash", "LCG_WAL_FSYNC": "off"})
    with Workspace.open(config, HashEmbedder()) as opened:
        yield opened


def _read_everything(ws: Workspace, group: str) -> None:
    """Every read a client can make of the group's rows answers (no value breaks a read)."""
    searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
    with ws.reading():
        for groups in ([group], None):
            searcher.find_entities("a lorem", groups)
            searcher.find_relationships("a lorem", groups)
            for fusion in ("weighted", "rrf"):
                searcher.search_passages(
                    "x lorem last year",
                    groups,
                    min_score=0.0,
                    fusion=fusion,  # type: ignore[arg-type]
                )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(events=st.lists(st.one_of(*EVENTS.values()), min_size=1, max_size=6))
@example(events=LONGEST)
def test_every_event_the_codec_accepts_applies_everywhere_and_replays_the_same(
    ws: Workspace, events: list[Event]
) -> None:
    group = f"g{next(_GROUPS)}"
    accepted: list[Event] = []
    for event in events:
        event = _scoped(msgspec.structs.replace(event, group_id=group), f"{group}/")
        try:
            accepted += ws.commit(group, [event])
        except InvalidParamsError as exc:
            assert "cannot be recorded" in str(exc)  # the codec's refusal, nothing else's
            continue
        # Applied live by every projection: a failure here is a lagging group (a poison).
        assert ws.io_faults() == [], (event, ws.io_faults())
    # Nothing refused reached the stream, and everything accepted reads back as applied.
    report = ReadReport()
    on_disk = list(StreamReader(ws.store.group_dir(group)).events(report=report))
    assert on_disk == accepted and report.bad_lines == 0
    if not accepted:
        return
    assert ws.projector.degraded_reason(group) is None
    _read_everything(ws, group)
    live = ws.digests(group)
    with ws.group_lock(group), ws.rw.write():
        result = ws.projector.rebuild(group, force_clear=True)
    assert result.success and not result.failed_lines and not result.seqs_skipped, result
    assert ws.digests(group) == live
