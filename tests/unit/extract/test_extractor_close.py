"""``Extractor.close()`` is part of the protocol (issue 13 item 7): every wrapper closes what it
wraps by calling it, with no ``getattr(x, "close")`` probing.

The innermost extractor is the scripted TEST DOUBLE, counting its closes.
"""

from __future__ import annotations

from pathlib import Path

from lcg.eval.backends import CapturingExtractor
from lcg.extract.cassette import RecordingExtractor
from lcg.extract.extractor import DelegatingExtractor, Extractor
from lcg.extract.scripted import ScriptedExtractor


class CountingDouble(ScriptedExtractor):
    """TEST DOUBLE: a scripted extractor that counts ``close`` calls."""

    def __init__(self) -> None:
        super().__init__()
        self.closes = 0

    def close(self) -> None:
        """Count the call."""
        self.closes += 1


def test_a_delegating_extractor_closes_its_inner() -> None:
    double = CountingDouble()
    wrapper: Extractor = DelegatingExtractor(double)
    wrapper.close()
    assert double.closes == 1


def test_wrappers_close_all_the_way_down(tmp_path: Path) -> None:
    double = CountingDouble()
    stack: Extractor = CapturingExtractor(RecordingExtractor(double, tmp_path / "c.jsonl"))
    stack.close()
    assert double.closes == 1
