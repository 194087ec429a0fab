"""The checksum format of projection files (``lcg.projections._checksum``, ADR 0155)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import msgspec
import pytest

from lcg.projections._checksum import (
    MAGIC,
    ChecksumError,
    describe_failure,
    encode_sealed,
    file_crc,
    seal,
    unseal,
)

PAYLOAD = msgspec.msgpack.encode({"format": 2, "group_id": "g", "seq": 7, "kinds": {}})


def test_the_header_is_magic_crc_and_length_big_endian() -> None:
    sealed = seal(PAYLOAD)
    assert sealed[:8] == b"\xc1LCGCRC1" == MAGIC
    assert struct.unpack(">IQ", sealed[8:20]) == (zlib.crc32(PAYLOAD), len(PAYLOAD))
    assert sealed[20:] == PAYLOAD
    payload, verified = unseal(sealed)
    assert bytes(payload) == PAYLOAD and verified


def test_encoding_straight_after_the_header_gives_the_same_bytes() -> None:
    obj = {"format": 2, "group_id": "g", "seq": 7, "kinds": {}}
    assert bytes(encode_sealed(msgspec.msgpack.Encoder(), obj)) == seal(PAYLOAD)
    assert unseal(seal(b"")) == (memoryview(b""), True)


def test_a_file_of_the_previous_version_is_told_apart_by_its_first_byte() -> None:
    # 0xc1 is the one byte msgpack never uses: no msgpack document starts with the magic.
    with pytest.raises(msgspec.DecodeError):
        msgspec.msgpack.decode(MAGIC)
    payload, verified = unseal(PAYLOAD)
    assert bytes(payload) == PAYLOAD and not verified
    assert unseal(b"") == (memoryview(b""), False)  # the caller's decode then fails


def test_every_flipped_bit_is_found() -> None:
    sealed = seal(PAYLOAD)
    for i in range(len(sealed)):
        for bit in range(8):
            damaged = bytearray(sealed)
            damaged[i] ^= 1 << bit
            if i == 0:
                # The first byte no longer says "sealed": the bytes are read as a bare
                # msgpack document, which the magic's other bytes make undecodable.
                payload, verified = unseal(bytes(damaged))
                assert not verified
                with pytest.raises(msgspec.DecodeError):
                    msgspec.msgpack.decode(payload)
                continue
            with pytest.raises(ChecksumError):
                unseal(bytes(damaged))


def test_every_truncation_and_extension_is_found() -> None:
    sealed = seal(PAYLOAD)
    for cut in range(1, len(sealed)):
        with pytest.raises(ChecksumError, match="header is damaged|bytes after its header"):
            unseal(sealed[:cut])
    with pytest.raises(ChecksumError, match=f"{len(PAYLOAD) + 1} bytes after its header"):
        unseal(sealed + b"\x00")


def test_zeroed_bytes_are_found_and_named() -> None:
    sealed = bytearray(seal(PAYLOAD * 50))
    sealed[100:164] = bytes(64)
    with pytest.raises(ChecksumError, match=r"its CRC-32 is [0-9a-f]{8}, [0-9a-f]{8} recorded"):
        unseal(bytes(sealed))


@pytest.mark.parametrize("size", [0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 3, 3 << 20])
def test_file_crc_is_the_crc_of_the_whole_file(tmp_path: Path, size: int) -> None:
    data = bytes((i * 31 + 7) % 251 for i in range(size))
    path = tmp_path / "f.npy"
    path.write_bytes(data)
    assert file_crc(path) == (zlib.crc32(data), size)


def test_decoding_failures_are_described_in_our_words() -> None:
    try:
        b"\xfe".decode()
    except UnicodeDecodeError as exc:
        assert describe_failure(exc) == "a text field is not UTF-8 at byte 0"
    assert describe_failure(ValueError("bad length")) == "bad length"
    assert describe_failure(IndexError("unordered_map::at")) == "IndexError: unordered_map::at"
    assert describe_failure(KeyError()) == "KeyError: no detail"
