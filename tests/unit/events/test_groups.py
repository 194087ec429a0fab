"""Group ids and their stream directory names."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from lcg.errors import GroupNameError
from lcg.events.groups import (
    decode_group,
    encode_group,
    guard_case_collision,
    list_groups,
    nfc_group_ids,
)
from lcg.events.writer import StreamWriter


@pytest.mark.parametrize("group_id", ["liminis", "A-b_9", "x" * 200])
def test_plain_ids_are_their_own_directory(group_id: str) -> None:
    assert encode_group(group_id) == group_id
    assert decode_group(group_id) == group_id


@pytest.mark.parametrize(
    ("group_id", "dir_name"),
    [
        ("team a", "team%20a"),
        ("100%", "100%25"),
        ("a/b", "a%2Fb"),
        ("ß", "%C3%9F"),
        (".hidden", "%2Ehidden"),
        ("x" * 201, "x" * 201),
    ],
)
def test_other_ids_are_percent_encoded_byte_by_byte(group_id: str, dir_name: str) -> None:
    if len(dir_name) > 200:
        with pytest.raises(GroupNameError, match="limit is 200"):
            encode_group(group_id)
        return
    assert encode_group(group_id) == dir_name
    assert decode_group(dir_name) == group_id


def test_empty_id_is_refused() -> None:
    with pytest.raises(GroupNameError, match="non-empty"):
        encode_group("")


def test_long_encoding_is_refused() -> None:
    with pytest.raises(GroupNameError, match="encodes to 210 characters"):
        encode_group("é" * 35)


@pytest.mark.parametrize(
    "dir_name",
    [
        "",
        ".checkpoints",
        ".wal-bounds.json",
        "%41",  # decodes to "A", which encodes as "A": not the round trip
        "a%2fb",  # lowercase hex is not what the encoder writes
        "a%2",  # truncated escape
        "%FF",  # not UTF-8
        "a b",  # a space must have been encoded
        "x" * 201,
    ],
)
def test_names_that_do_not_round_trip_are_not_groups(dir_name: str) -> None:
    assert decode_group(dir_name) is None


def test_list_groups_decodes_and_skips_non_groups(wal_root: Path) -> None:
    for name in ["b", "team%20a", "a", ".quarantine", "%41", "not a group"]:
        (wal_root / name).mkdir()
    (wal_root / "file").write_text("x")
    assert list_groups(wal_root) == ["a", "b", "team a"]
    assert list_groups(wal_root / "missing") == []


def test_case_collision_is_refused(wal_root: Path) -> None:
    (wal_root / "Alpha").mkdir()
    guard_case_collision(wal_root, "Alpha")  # the same directory is not a collision
    guard_case_collision(wal_root, "Beta")
    with pytest.raises(GroupNameError, match="collide with existing 'Alpha'"):
        guard_case_collision(wal_root, "alpha")
    with pytest.raises(GroupNameError, match="collide"):
        StreamWriter(wal_root, "ALPHA", fsync="off")
    assert not (wal_root / "ALPHA").exists()


def test_a_group_differing_only_by_normalisation_or_unicode_case_is_refused(
    wal_root: Path,
) -> None:
    # ADR 0151: "grüppe" as NFC and as NFD print alike; "GRÜPPE" differs only by case (its
    # encoded name differs by more than ASCII case: %C3%9C against %C3%BC).
    composed = unicodedata.normalize("NFC", "grüppe")
    decomposed = unicodedata.normalize("NFD", "grüppe")
    (wal_root / encode_group(composed)).mkdir()
    guard_case_collision(wal_root, encode_group(composed))  # itself
    guard_case_collision(wal_root, encode_group("gruppe"))  # another name
    for other in (decomposed, "GRÜPPE"):
        with pytest.raises(GroupNameError, match="differ only by case or Unicode normalisation"):
            guard_case_collision(wal_root, encode_group(other))
        with pytest.raises(GroupNameError, match="collide with existing group"):
            StreamWriter(wal_root, other, fsync="off")
        assert not (wal_root / encode_group(other)).exists()
    assert list_groups(wal_root) == [composed]


def test_group_ids_enter_in_nfc() -> None:
    decomposed = unicodedata.normalize("NFD", "grüppe")
    composed = unicodedata.normalize("NFC", "grüppe")
    assert nfc_group_ids(decomposed) == composed
    assert nfc_group_ids([decomposed, 3, "plain"]) == [composed, 3, "plain"]
    assert nfc_group_ids(7) == 7
