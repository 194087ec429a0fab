"""Group ids and the names of their stream directories.

A group id made only of ``[A-Za-z0-9_-]`` (1 to 200 characters) is its own directory name.
Any other id is percent-encoded byte by byte: every UTF-8 byte outside that set, ``%``
included, becomes ``%XX`` (uppercase hex). Only directory names that decode and re-encode to
themselves are groups. A new directory whose group id differs from an existing one's only by
case or Unicode normalisation (``grüppe`` as NFC and as NFD; ``lcg.events.keys.fold``) is
refused, so streams stay distinct on case-insensitive file systems and no two groups print
alike (ADR 0151). The service's edge also writes every group id it is given in NFC.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from pathlib import Path

from lcg.errors import GroupNameError, StreamError
from lcg.events.keys import fold

__all__ = [
    "check_group_dir",
    "check_streams",
    "check_wal_root",
    "decode_group",
    "encode_group",
    "guard_case_collision",
    "list_groups",
    "nfc_group_ids",
]

_PLAIN = re.compile(r"[A-Za-z0-9_-]{1,200}")
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_MAX_DIR_NAME = 200


def nfc_group_ids(value: object) -> object:
    """A group id (or a list of them) as given at the edge, its strings in NFC (ADR 0151).

    ``grüppe`` typed on one machine and read from a file name on another (NFD) is one group;
    anything that is not a string is returned as it is, for the parameter checks to judge.
    """
    if isinstance(value, str):
        return value if value.isascii() else unicodedata.normalize("NFC", value)
    if isinstance(value, list):
        return [nfc_group_ids(v) if isinstance(v, str) else v for v in value]
    return value


def encode_group(group_id: str) -> str:
    """The directory name of ``group_id``; raises ``GroupNameError`` if it cannot have one."""
    if not group_id:
        raise GroupNameError("group_id must be a non-empty string")
    if _PLAIN.fullmatch(group_id):
        return group_id
    parts: list[str] = []
    for byte in group_id.encode("utf-8"):
        parts.append(chr(byte) if byte in _SAFE else f"%{byte:02X}")
    name = "".join(parts)
    if len(name) > _MAX_DIR_NAME:
        raise GroupNameError(
            f"group_id {group_id!r} encodes to {len(name)} characters; the limit is {_MAX_DIR_NAME}"
        )
    return name


def decode_group(dir_name: str) -> str | None:
    """The group id a directory name stands for, or ``None`` if it names no group."""
    if not dir_name or dir_name.startswith("."):
        return None
    if "%" not in dir_name:
        return dir_name if _PLAIN.fullmatch(dir_name) else None
    out = bytearray()
    i = 0
    while i < len(dir_name):
        ch = dir_name[i]
        if ch == "%":
            hexpart = dir_name[i + 1 : i + 3]
            if len(hexpart) != 2 or not all(c in "0123456789ABCDEF" for c in hexpart):
                return None
            out.append(int(hexpart, 16))
            i += 3
        else:
            out.extend(ch.encode("utf-8"))
            i += 1
    try:
        group_id = out.decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        return group_id if encode_group(group_id) == dir_name else None
    except GroupNameError:
        return None


def list_groups(wal_root: Path) -> list[str]:
    """Every group with a stream directory under ``wal_root``, sorted by directory name."""
    if not wal_root.is_dir():
        return []
    groups: list[str] = []
    for entry in sorted(os.listdir(wal_root)):
        if not (wal_root / entry).is_dir():
            continue
        group_id = decode_group(entry)
        if group_id is not None:
            groups.append(group_id)
    return groups


def guard_case_collision(wal_root: Path, dir_name: str) -> None:
    """Refuse to create ``dir_name`` when a sibling differs from it only by ASCII case, or
    names a group whose id differs from this one's only by case or normalisation."""
    if not wal_root.is_dir() or (wal_root / dir_name).exists():
        return
    folded = dir_name.lower()
    group_id = decode_group(dir_name)
    key = None if group_id is None else fold(group_id)
    for entry in sorted(os.listdir(wal_root)):
        if entry == dir_name:
            continue
        if entry.lower() == folded:
            raise GroupNameError(
                f"stream directory {dir_name!r} would collide with existing {entry!r} "
                "(names may differ only by case on some file systems); use a distinct group_id"
            )
        other = decode_group(entry) if key is not None else None
        if other is not None and fold(other) == key:
            raise GroupNameError(
                f"group_id {group_id!r} would collide with existing group {other!r} (stream "
                f"{entry!r}): the two differ only by case or Unicode normalisation (NFC/NFD) "
                f"and would print alike; use {other!r} exactly, or a distinct group_id"
            )


def check_wal_root(wal_root: Path) -> None:
    """Refuse a stream root another local user could write into or owns (``StreamError``).

    Whoever can write the root can plant or swap a group's stream (the model itself); a root
    that is missing is fine (lcg creates it ``0700``). Checked on the directory the path
    leads to, so a root reached through a symlink is judged by its target.
    """
    try:
        st = os.stat(wal_root)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        raise StreamError(f"stream root {wal_root} is not a directory")
    if st.st_uid != os.geteuid():
        raise StreamError(
            f"stream root {wal_root} is owned by uid {st.st_uid}, not by this user "
            f"(uid {os.geteuid()}): another user controls the streams; run lcg as its owner, "
            "or copy the streams into a directory you own"
        )
    if st.st_mode & stat.S_IWOTH:
        raise StreamError(
            f"stream root {wal_root} is writable by every user (mode "
            f"{stat.S_IMODE(st.st_mode):04o}); make it private: chmod 700 {wal_root}"
        )


def check_group_dir(group_dir: Path) -> None:
    """Refuse a group stream directory that is a symlink (``StreamError``); checked by ``lstat``.

    A symlinked group would send its appends (and its marks) wherever the link points.
    """
    try:
        mode = os.lstat(group_dir).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise StreamError(
            f"stream directory {group_dir} is a symlink (to {os.readlink(group_dir)}); lcg "
            "writes only real directories: replace the link with the directory it points to "
            f"(mv the target to {group_dir}) or remove it"
        )
    if not stat.S_ISDIR(mode):
        raise StreamError(f"stream directory {group_dir} is not a directory; move it away")


def check_streams(wal_root: Path) -> None:
    """``check_wal_root`` and ``check_group_dir`` of every entry that names a group."""
    check_wal_root(wal_root)
    if not wal_root.is_dir():
        return
    for entry in sorted(os.listdir(wal_root)):
        if decode_group(entry) is not None:
            check_group_dir(wal_root / entry)
