"""A caller that syncs the same tree again (``lcg watch``'s sweeps and saves) passes a
``declared_memo``: a sync that changed no chunk and would send the same declared structure as
last time sends none (the group holds it); any chunk change sends it again. Real workspace."""

from __future__ import annotations

from pathlib import Path

from lcg.ingest.declared import DeclaredStructure, DeclareResult
from lcg.ingest.sources import DirectBackend, sync_tree
from lcg.workspace import Workspace

G = "memo"


class _Counting(DirectBackend):
    """The in-process backend, counting declare calls."""

    calls = 0

    def declare(self, group_id: str, root: str, structure: DeclaredStructure) -> DeclareResult:
        self.calls += 1
        return super().declare(group_id, root, structure)


def test_an_unchanged_tree_sends_its_structure_once(ws: Workspace, tmp_path: Path) -> None:
    tree = tmp_path / "notes"
    tree.mkdir()
    (tree / "a.md").write_text("# A\n\nsee [[B]]\n")
    (tree / "b.md").write_text("# B\n\nplain\n")
    backend = _Counting(ws)
    memo: dict[str, tuple[bytes, DeclareResult]] = {}
    first = sync_tree(backend, tree, G, declared_memo=memo, commits=None)
    assert backend.calls == 1 and first.declared is not None
    again = sync_tree(backend, tree, G, declared_memo=memo, commits=None)
    assert backend.calls == 1  # nothing changed: nothing sent
    assert again.declared is not None and again.declared.links == first.declared.links
    (tree / "b.md").write_text("# B\n\nnow links [[A]]\n")
    sync_tree(backend, tree, G, declared_memo=memo, commits=None)
    assert backend.calls == 2
    # Without a memo (lcg ingest, one run), the structure is always sent.
    sync_tree(backend, tree, G, commits=None)
    assert backend.calls == 3
