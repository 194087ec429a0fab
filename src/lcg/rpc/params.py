"""Parameter parsing shared by the method handlers, with the reference's rules and messages.

The four ``group_id`` parsers of the reference (§2.1) are kept:

* ``group_id`` – one group; default ``liminis`` (``""`` also → default where the method says);
* ``required_group_id`` – one non-empty group, else an error;
* ``read_group_ids`` – omitted/null → all groups (``None``); ``[]`` → nothing for
  *preserve-empty* reads, all groups for *collapse* reads; a bare string → one group;
  non-string elements dropped;
* ``required_group_ids`` – a non-empty list of non-empty strings, de-duplicated in order.
"""

from __future__ import annotations

from typing import Any

from lcg.errors import InvalidParamsError
from lcg.events.layout import DEFAULT_GROUP

__all__ = [
    "bool_param",
    "group_id",
    "int_param",
    "read_group_ids",
    "required_group_id",
    "required_group_ids",
    "str_param",
    "uuid_list",
]


def group_id(params: dict[str, Any], *, empty_is_default: bool = True) -> str:
    """A single write group: ``group_id`` or the default group."""
    value = params.get("group_id")
    if value is None or (value == "" and empty_is_default):
        return DEFAULT_GROUP
    if not isinstance(value, str) or not value:
        raise InvalidParamsError("group_id must be a non-empty string")
    return value


def required_group_id(params: dict[str, Any]) -> str:
    """A single group that must be given."""
    value = params.get("group_id")
    if not isinstance(value, str) or not value:
        raise InvalidParamsError("group_id is required and must be a non-empty string")
    return value


def read_group_ids(params: dict[str, Any], *, preserve_empty: bool) -> list[str] | None:
    """The groups a read spans (``None`` = every group)."""
    value = params.get("group_ids")
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        return None
    groups = [g for g in value if isinstance(g, str)]
    if not groups:
        return [] if preserve_empty else None
    return groups


def required_group_ids(params: dict[str, Any]) -> list[str]:
    """A non-empty list of non-empty group ids, de-duplicated, order kept."""
    value = params.get("group_ids")
    if not isinstance(value, list) or not value or not all(isinstance(g, str) and g for g in value):
        raise InvalidParamsError(
            "group_ids is required and must be a non-empty array of non-empty strings"
        )
    return list(dict.fromkeys(value))


def str_param(params: dict[str, Any], name: str, default: str = "") -> str:
    """A string parameter (absent/null → ``default``; other types refused)."""
    value = params.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise InvalidParamsError(f"{name} must be a string")
    return value


def int_param(
    params: dict[str, Any],
    name: str,
    default: int,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    clamp: bool = False,
    positive_message: str | None = None,
) -> int:
    """An integer parameter; booleans are refused; range clamped or enforced."""
    value = params.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InvalidParamsError(f"{name} must be an integer")
    if positive_message is not None and value <= 0:
        raise InvalidParamsError(positive_message)
    if clamp:
        if minimum is not None:
            value = max(minimum, value)
        if maximum is not None:
            value = min(maximum, value)
        return value
    if minimum is not None and value < minimum:
        raise InvalidParamsError(f"{name} must be >= {minimum}")
    if maximum is not None and value > maximum:
        raise InvalidParamsError(f"{name} must be <= {maximum}")
    return value


def bool_param(params: dict[str, Any], name: str, default: bool = False) -> bool:
    """A boolean parameter (absent/null → ``default``)."""
    value = params.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidParamsError(f"{name} must be a boolean")
    return value


def uuid_list(params: dict[str, Any], name: str) -> list[str]:
    """A list of strings (non-strings dropped; absent → ``[]``)."""
    value = params.get(name)
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, str)]
