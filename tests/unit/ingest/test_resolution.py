"""Table tests of the entity-resolution rules (docs/adr/0032), restatement and summaries."""

from __future__ import annotations

import pytest

from lcg.ingest.resolution import (
    SUMMARY_CAP,
    ActiveEdge,
    Candidate,
    best_match,
    cap_summary,
    match_rule,
    merge_summary,
    name_key,
    restates,
    split_sentences,
)

# (incoming, existing, cosine, expected rule or None)
CASES: list[tuple[str, str, float | None, str | None]] = [
    # same name, case and spacing variants → exact
    ("Neil Armstrong", "Neil Armstrong", None, "exact"),
    ("neil armstrong", "Neil Armstrong", None, "exact"),
    ("  Neil   Armstrong ", "Neil Armstrong", None, "exact"),
    ("NEIL\tARMSTRONG", "Neil Armstrong", None, "exact"),
    ("Neil\x00 Armstrong", "Neil Armstrong", None, "exact"),
    ("ＮＡＳＡ", "NASA", None, "exact"),  # full-width letters (NFKC)
    ("Straße", "STRASSE", None, "exact"),  # casefold
    # near-duplicates that must merge → fuzzy
    ("Buzz Aldrinn", "Buzz Aldrin", None, "fuzzy"),
    ("Kennedy Space Centre", "Kennedy Space Center", None, "fuzzy"),
    ("Armstrong, Neil", "Neil Armstrong", None, "fuzzy"),
    ("Internatonal Space Station", "International Space Station", None, "fuzzy"),
    ("Apollo-11", "Apollo 11", None, "fuzzy"),
    # near-misses that must not merge
    ("Apollo 11", "Apollo 12", None, None),
    ("Apollo 11", "Apollo 12", 0.99, None),  # not even with a high cosine: numbers differ
    ("John Smith", "Jane Smith", None, None),
    ("John Smith", "Jane Smith", 0.95, None),  # given names differ
    ("Gemini 4", "Gemini 5", None, None),
    ("Saturn V", "Saturn IB", None, None),
    ("Saturn V", "Saturn IB", 0.97, None),  # short tokens differ
    ("George W Bush", "George H W Bush", None, None),
    ("Soyuz", "Soyuz 1", None, None),
    ("NASA", "NASB", None, None),  # too short for fuzzy
    ("Mars", "Mass", None, None),
    ("NASA", "National Aeronautics and Space Administration", 0.9, None),  # name floor
    # vector candidates confirmed by the name floor
    ("Apollo Lunar Module", "Lunar Module (Apollo)", 0.9, "fuzzy"),
    ("Lunar Module Eagle", "Eagle lunar module spacecraft", 0.88, "vector"),
    ("Lunar Module Eagle", "Eagle lunar module spacecraft", 0.80, None),  # below 0.85
]


@pytest.mark.parametrize(("incoming", "existing", "cosine", "expected"), CASES)
def test_match_rule_table(
    incoming: str, existing: str, cosine: float | None, expected: str | None
) -> None:
    assert match_rule(incoming, existing, cosine) == expected


@pytest.mark.parametrize(("incoming", "existing", "cosine", "expected"), CASES)
def test_match_rule_is_symmetric(
    incoming: str, existing: str, cosine: float | None, expected: str | None
) -> None:
    assert match_rule(existing, incoming, cosine) == expected


def test_name_key_normalisation() -> None:
    assert name_key(" Ada\u00a0 LOVELACE\n") == "ada lovelace"
    assert name_key("\x07") == ""


def test_best_match_prefers_exact_then_oldest() -> None:
    cands = [
        Candidate(uuid="b", name="Buzz Aldrinn", created_at="2020-01-01 00:00:00"),
        Candidate(uuid="c", name="buzz aldrin", created_at="2021-01-01 00:00:00"),
        Candidate(uuid="a", name="Buzz Aldrin", created_at="2022-01-01 00:00:00"),
        Candidate(uuid="d", name="Aldrin Buzz spaceman", cosine=0.99),
    ]
    m = best_match("Buzz Aldrin", cands)
    assert m is not None and m.rule == "exact" and m.candidate.uuid == "c"
    m = best_match("Buzz Aldrin", cands[:1])
    assert m is not None and m.rule == "fuzzy"
    assert best_match("Apollo 12", [Candidate(uuid="x", name="Apollo 11", cosine=0.99)]) is None


def test_best_match_vector_tie_breaks_on_uuid() -> None:
    cands = [
        Candidate(uuid="z", name="Eagle lunar module spacecraft", cosine=0.9),
        Candidate(uuid="y", name="Eagle lunar module craft", cosine=0.9),
    ]
    m = best_match("Lunar Module Eagle", cands)
    assert m is not None and m.rule == "vector" and m.candidate.uuid == "y"


# ---- summaries --------------------------------------------------------------------------


def test_summary_keeps_existing_and_appends_only_new_information() -> None:
    old = "Neil Armstrong was an American astronaut."
    assert merge_summary(old, "Neil Armstrong was an American astronaut.") == old
    assert merge_summary(old, "neil armstrong was an american astronaut") == old
    new = merge_summary(old, "Neil Armstrong was an American astronaut. He walked on the Moon.")
    assert new == old + " He walked on the Moon."
    assert merge_summary(old, "") == old
    assert merge_summary(old, "Armstrong was an astronaut.") == old, "no new words"
    longer = merge_summary("An astronaut.", "An astronaut who flew to the Moon.")
    assert longer == "An astronaut. An astronaut who flew to the Moon.", "new words are kept"
    assert merge_summary("", "He flew Gemini 8.") == "He flew Gemini 8."


def test_summary_stays_bounded_on_a_sentence_boundary() -> None:
    summary = "Apollo 11 landed on the Moon."
    for i in range(100):
        summary = merge_summary(summary, f"Fact number {i} about the landing is recorded here.")
        assert len(summary) <= SUMMARY_CAP
        assert summary.endswith(".")
    assert summary.startswith("Apollo 11 landed on the Moon.")


def test_cap_summary_cuts_an_overlong_sentence_on_a_word() -> None:
    text = "word " * 200
    out = cap_summary(text, 50)
    assert len(out) <= 50 and out.endswith("…") and "wor…" not in out
    assert cap_summary("One. Two. Three.", 9) == "One. Two."
    assert split_sentences("A b. C d!  E f?") == ["A b.", "C d!", "E f?"]


# ---- restatement ------------------------------------------------------------------------

EDGE = ActiveEdge(uuid="e1", relation_type="WORKED_FOR", fact="Neil Armstrong worked for NASA.")


@pytest.mark.parametrize(
    ("rtype", "fact", "expected"),
    [
        ("WORKED_FOR", "Armstrong was employed by NASA from 1962.", True),  # same specific type
        ("EMPLOYED_BY", "Neil Armstrong worked for NASA", True),  # near-identical fact
        ("EMPLOYED_BY", "neil armstrong worked for nasa.", True),
        ("EMPLOYED_BY", "Neil Armstrong left NASA in 1971.", False),
        ("UNCLASSIFIED", "Neil Armstrong left NASA in 1971.", False),
    ],
)
def test_restates_table(rtype: str, fact: str, expected: bool) -> None:
    assert restates(rtype, fact, EDGE) is expected


def test_generic_types_do_not_restate_on_type_alone() -> None:
    edge = ActiveEdge(uuid="e", relation_type="UNCLASSIFIED", fact="A met B in Houston.")
    assert not restates("UNCLASSIFIED", "A argued with B about budgets.", edge)
    assert restates("UNCLASSIFIED", "A met B in Houston", edge)
