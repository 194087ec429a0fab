"""Conformance of the ontology's start-up behaviour with the reference's "Ontology" page
(issue 30, "Smaller"; ADR 0216), through a real ``lcg serve``.

The page says: "Requires a service restart to take effect. The ontology is loaded once at
startup and held in memory"; "When no ontology is loaded, ``present`` is ``false`` and counts
are ``0``"; and, of ``parent:``, "an undeclared parent is cleared with a warning".
"""

from __future__ import annotations

from pathlib import Path

import _service_fixtures as sf

# Written by hand from the page's Format example: Rfc's parent Document is not declared.
UNDECLARED_PARENT = """\
mode: strict
entity_types:
  - name: Person
  - name: Rfc
    parent: Document
relation_types:
  - name: AUTHORED
"""


def _status_ontology(sock: Path) -> dict[str, object]:
    with sf.RawConnection(sock) as c:
        onto: dict[str, object] = c.result("knowledge_status")["ontology"]
    return onto


def test_an_ontology_added_while_serving_is_not_loaded_and_not_present() -> None:
    with sf.temp_workspace("lcg-onto-") as ws:
        proc = sf.spawn_serve(ws)
        sock = ws / ".lcg" / "service.sock"
        try:
            sf.wait_healthy(sock, proc)
            before = _status_ontology(sock)
            (ws / ".lcg" / "ontology.yaml").write_text(UNDECLARED_PARENT, encoding="utf-8")
            after = _status_ontology(sock)
        finally:
            assert sf.stop_serve(proc, sock) == 0
        for onto in (before, after):
            assert (onto["present"], onto["loaded"], onto["mode"]) == (False, False, None), onto
            assert (onto["entity_type_count"], onto["relation_type_count"]) == (0, 0), onto
        # A restart loads it.
        proc = sf.spawn_serve(ws)
        try:
            sf.wait_healthy(sock, proc)
            onto = _status_ontology(sock)
        finally:
            assert sf.stop_serve(proc, sock) == 0
        assert (onto["present"], onto["loaded"], onto["mode"]) == (True, True, "strict"), onto
        assert (onto["entity_type_count"], onto["relation_type_count"]) == (2, 1), onto


def test_an_undeclared_parent_is_cleared_with_a_warning_at_startup() -> None:
    with sf.temp_workspace("lcg-onto-") as ws:
        (ws / ".lcg").mkdir()
        (ws / ".lcg" / "ontology.yaml").write_text(UNDECLARED_PARENT, encoding="utf-8")
        proc = sf.spawn_serve(ws)
        sock = ws / ".lcg" / "service.sock"
        try:
            sf.wait_healthy(sock, proc)
            onto = _status_ontology(sock)
        finally:
            assert sf.stop_serve(proc, sock) == 0
        assert (onto["loaded"], onto["entity_type_count"]) == (True, 2), onto
        log = (ws / "serve.log").read_text(encoding="utf-8")
        warned = [line for line in log.splitlines() if "Rfc" in line and "Document" in line]
        assert warned, log
        assert "not a declared entity type" in warned[0] and "cleared" in warned[0], warned
