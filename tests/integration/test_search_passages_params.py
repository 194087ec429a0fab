"""``knowledge_search_passages``'s issue-14 parameters over a real socket: ``fusion``, ``as_of``,
``valid_after`` / ``valid_before`` (real service, real Kuzu; the hash embedder is a TEST
DOUBLE)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import _service_fixtures as sf
from lcg.rpc.client import Client
from lcg.rpc.errors import RemoteInvalidParamsError


@pytest.fixture(scope="module")
def socket_path() -> Iterator[Path]:
    from lcg import telemetry

    telemetry.set_sink(None, enabled=False)
    with sf.in_process_service() as svc:
        yield Path(svc.socket_path)


@pytest.fixture(scope="module")
def conn(socket_path: Path) -> Iterator[sf.RawConnection]:
    with sf.RawConnection(socket_path) as c:
        for i, (text, when) in enumerate(
            (
                ("we paddled two rivers in Maine", "2023-04-10T09:00:00Z"),
                ("the river was cold in May", "2023-05-20T09:00:00Z"),
                ("a river cruise next summer", "2023-08-01T09:00:00Z"),
            )
        ):
            c.result(
                "knowledge_process_chunk",
                {
                    "chunk_text": text,
                    "chunk_id": f"trip#{i}",
                    "source_file": "trip.txt",
                    "reference_time": when,
                },
            )
        yield c


def _names(conn: sf.RawConnection, **params: object) -> list[str]:
    # These tests are of the bounds and fusions, not the cosine floor (the hash embedder's
    # cosines are low): min_score 0 keeps every passage with a non-negative cosine.
    result = conn.result(
        "knowledge_search_passages", {"query": "river", "min_score": 0.0, **params}
    )
    return [p["name"] for p in result["passages"]]


def test_fusions_and_time_bounds(conn: sf.RawConnection) -> None:
    everything = _names(conn)
    assert sorted(everything) == ["trip#0", "trip#1", "trip#2"]  # "rivers" found by "river"
    assert sorted(_names(conn, fusion="rrf")) == sorted(everything)
    assert sorted(_names(conn, as_of="2023-06-01T00:00:00Z")) == ["trip#0", "trip#1"]
    window = _names(conn, valid_after="2023-05-01T00:00:00Z", valid_before="2023-06-01T00:00:00Z")
    assert window == ["trip#1"]
    # The recency prior's half-life (ADR 0094; its effect on the order is tested in
    # tests/unit/projections/test_search_passages.py): 0 turns it off, the bounds still hold.
    june = "2023-06-01T00:00:00Z"
    assert sorted(_names(conn, as_of=june, recency_half_life_days=0)) == ["trip#0", "trip#1"]
    assert sorted(_names(conn, recency_half_life_days=30.5)) == sorted(everything)


@pytest.mark.parametrize(
    "as_of", ["0001-01-01T00:00:00Z", "0001-03-01T12:00:00Z", "9999-12-31T23:59:59Z"]
)
def test_asking_at_the_ends_of_the_calendar_is_answered(conn: sf.RawConnection, as_of: str) -> None:
    # Relative expressions whose window would fall outside years 1..9999 name no window.
    for query in ("river last year", "river in December", "river 2 days ago", "past 999 years"):
        answer = conn.request("knowledge_search_passages", {"query": query, "as_of": as_of})
        assert "result" in answer, answer
    names = _names(conn, as_of="9999-12-31T23:59:59Z", valid_after="0001-01-01T00:00:00Z")
    assert sorted(names) == ["trip#0", "trip#1", "trip#2"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"fusion": "borda"}, "fusion must be one of weighted, rrf (got 'borda')"),
        ({"as_of": "last tuesday"}, "as_of must be an RFC 3339 timestamp"),
        ({"valid_before": "2023-13-01"}, "valid_before must be an RFC 3339 timestamp"),
        ({"recency_half_life_days": -1}, "recency_half_life_days must be between 0 (off)"),
        ({"recency_half_life_days": 1e6}, "recency_half_life_days must be between 0 (off)"),
        ({"recency_half_life_days": "5"}, "recency_half_life_days"),
    ],
)
def test_bad_values_are_parameter_errors(
    conn: sf.RawConnection, params: dict[str, object], message: str
) -> None:
    answer = conn.request("knowledge_search_passages", {"query": "river", **params})
    assert answer["error"]["code"] == -32602, answer
    assert message in answer["error"]["message"]


def test_the_python_client_passes_every_parameter(
    conn: sf.RawConnection, socket_path: Path
) -> None:
    with Client(socket_path) as client:
        result = client.search_passages(
            "river",
            min_score=0.0,
            fusion="rrf",
            as_of="2023-06-01T00:00:00Z",
            valid_after="2023-05-01T00:00:00Z",
            recency_half_life_days=0.0,
        )
        assert [p["name"] for p in result["passages"]] == ["trip#1"]
        with pytest.raises(
            RemoteInvalidParamsError, match="recency_half_life_days must be between"
        ):
            client.search_passages("river", recency_half_life_days=-2.0)
