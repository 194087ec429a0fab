"""The suite's two hypothesis profiles, registered by ``tests/conftest.py``.

``default`` (``make test``, CI): a few hundred examples at most per test. ``deep``
(``make test-deep``, i.e. ``pytest --hypothesis-profile=deep``, the nightly run): the full
counts, such as the 10,000 wrapped clauses of the Cypher guard test. Neither has a deadline:
a per-example time limit is a wall-clock bound, and it flakes on a loaded machine.

A test whose count differs between the two asks :func:`examples`; a test that draws at most a
few hundred examples names its count as it always did.
"""

from __future__ import annotations

from hypothesis import settings

#: The profile of ``make test``: hypothesis' own default count (100) where a test names none.
DEFAULT = "default"
#: The profile of ``make test-deep``: every test at its full count.
DEEP = "deep"
#: The most examples a test draws under :data:`DEFAULT`.
DEFAULT_CAP = 300


def register() -> None:
    """Register both profiles and load :data:`DEFAULT` (``--hypothesis-profile`` may then load
    :data:`DEEP`: hypothesis' pytest plugin does so when it configures, before collection)."""
    settings.register_profile(DEFAULT, deadline=None)
    settings.register_profile(DEEP, deadline=None)
    settings.load_profile(DEFAULT)


def examples(deep: int) -> int:
    """How many examples a test draws: ``deep`` under the deep profile, else at most
    :data:`DEFAULT_CAP`. Read when the test module is imported (at collection)."""
    if settings.get_current_profile_name() == DEEP:
        return deep
    return min(deep, DEFAULT_CAP)
