"""The error table: complete over lcg.errors, the reference's texts, and the way back."""

from __future__ import annotations

import inspect

import pytest

from lcg import errors as E
from lcg.rpc import errors as R


def _lcg_error_classes() -> list[type[E.LcgError]]:
    return [
        obj
        for _, obj in inspect.getmembers(E, inspect.isclass)
        if issubclass(obj, E.LcgError) and obj.__module__ == E.__name__
    ]


def test_every_lcg_error_class_has_a_row() -> None:
    classes = _lcg_error_classes()
    assert len(classes) >= 19
    missing = [c.__name__ for c in classes if c not in R.ERROR_TABLE]
    assert missing == [], f"no JSON-RPC mapping for {missing}"
    assert set(R.ERROR_TABLE) == set(classes)


@pytest.mark.parametrize(
    ("exc", "code", "message"),
    [
        (
            E.MethodNotFoundError("knowledge_nope"),
            -32601,
            "IPC error: Method not found: knowledge_nope",
        ),
        (E.InvalidParamsError("chunk_id is required"), -32602, "chunk_id is required"),
        (E.ConfigError("no provider"), -32000, "configuration error: no provider"),
        (
            E.GenerationError("group liminis"),
            -32000,
            "WAL stream generation unknown: group liminis",
        ),
        (
            E.ProjectionError("Table X does not exist"),
            -32000,
            "database error: Table X does not exist",
        ),
        (
            E.NotFoundError("entity_uuid 'u' does not exist"),
            -32000,
            "IPC error: entity_uuid 'u' does not exist",
        ),
        (E.MarkError('checkpoint "x" not found'), -32000, 'checkpoint "x" not found'),
        (
            E.RebuildRefusedError("Service is busy: 1 write operation(s) in progress"),
            -32000,
            "IPC error: Service is busy: 1 write operation(s) in progress",
        ),
        (E.LcgError("plain"), -32000, "IPC error: plain"),
    ],
)
def test_messages_carry_the_reference_prefixes(exc: E.LcgError, code: int, message: str) -> None:
    wire = R.to_wire(exc)
    assert (wire.code, wire.message, wire.data) == (code, message, None)


def test_prefix_is_not_doubled() -> None:
    assert R.to_wire(E.ConfigError("configuration error: x")).message == "configuration error: x"


def test_degraded_carries_the_reason_as_data() -> None:
    wire = R.to_wire(E.DegradedError("lbug_wal_corrupt"))
    assert wire.to_dict() == {
        "code": -32001,
        "message": "DB unavailable, recovery required",
        "data": {"reason": "lbug_wal_corrupt"},
    }


def test_unexpected_exceptions_are_internal_errors() -> None:
    wire = R.to_wire(KeyError("k"))
    assert wire.code == -32603
    assert wire.message.startswith("internal error: KeyError")


def test_a_forwarded_remote_error_is_kept_as_is() -> None:
    remote = R.RemoteError(-32000, "database error: x", {"k": 1})
    assert R.to_wire(remote) == R.WireError(-32000, "database error: x", {"k": 1})


def test_parse_and_invalid_request_texts() -> None:
    assert R.parse_error("bad byte").to_dict() == {
        "code": -32700,
        "message": "Parse error: bad byte",
    }
    assert R.invalid_request("x").code == -32600


@pytest.mark.parametrize(
    ("exc", "cls"),
    [
        (E.DegradedError("r"), E.DegradedError),
        (E.MethodNotFoundError("m"), E.MethodNotFoundError),
        (E.InvalidParamsError("p"), E.InvalidParamsError),
        (E.ConfigError("c"), E.ConfigError),
        (E.ProjectionError("d"), E.ProjectionError),
        (E.GenerationError("g"), E.GenerationError),
    ],
)
def test_clients_map_codes_and_prefixes_back(exc: E.LcgError, cls: type[E.LcgError]) -> None:
    wire = R.to_wire(exc)
    back = R.from_wire(wire.code, wire.message, wire.data)
    assert isinstance(back, cls)
    assert isinstance(back, R.RemoteError)
    assert (back.code, back.message, back.data) == (wire.code, wire.message, wire.data)
    assert str(back) == wire.message


def test_unknown_codes_map_to_the_remote_base() -> None:
    back = R.from_wire(-32603, "internal error: boom")
    assert type(back) is R.RemoteError
    assert isinstance(back, E.LcgError)


@pytest.mark.parametrize(
    ("exc", "remedy"),
    [
        (PermissionError(13, "Permission denied", "/ws/.lcg/wal/g"), "chmod u+w"),
        (OSError(30, "Read-only file system", "/ws/.lcg/wal/g/x.jsonl"), "remount it"),
        (OSError(28, "No space left on device", "/ws/.lcg/db"), "free space"),
        (OSError(5, "Input/output error", "/ws/.lcg/db"), "check that path"),
    ],
)
def test_file_system_refusals_name_the_path_and_the_remedy(exc: OSError, remedy: str) -> None:
    wire = R.to_wire(exc)
    assert wire.code == R.APPLICATION_ERROR
    assert wire.message.startswith("I/O error: ")
    assert str(exc.filename) in wire.message and exc.strerror in wire.message
    assert remedy in wire.message


def test_an_os_error_without_errno_is_still_internal() -> None:
    assert R.to_wire(OSError("no errno")).code == R.INTERNAL_ERROR
