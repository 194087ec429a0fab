"""The package's public surface: ``lcg.events.__all__``."""

from __future__ import annotations

import lcg.events
from lcg.events import model


def test_every_exported_name_exists_once() -> None:
    assert len(set(lcg.events.__all__)) == len(lcg.events.__all__)
    for name in lcg.events.__all__:
        assert hasattr(lcg.events, name), name


def test_the_whole_catalogue_is_exported() -> None:
    missing = set(model.__all__) - set(lcg.events.__all__) - {"EventBase"}
    assert not missing
