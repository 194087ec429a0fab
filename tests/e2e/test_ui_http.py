"""``lcg ui`` over plain HTTP (issue 32, ADR 0224): a real ``lcg ui`` in front of a real
``lcg serve`` holding a vault ``lcg ingest`` synced (the browser tests' fixture), asked with
``http.client``: the guards (token → cookie, 403 without it or with a foreign Host, 405 for
any method but GET and HEAD, the security headers on every answer, no CORS), each view's
status and key items, a hostile file name and heading shown as text, and no write method
reachable from the page. Hash embedder (the test double), no LLM."""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import msgspec
import pytest

import _service_fixtures as sf
import _ui_fixtures as uf
from lcg.rpc.methods import METHODS
from lcg.ui import CSP, READS, ReadRefused, Reads

#: A folder of the vault's group whose file name and heading are markup.
HOSTILE_LABEL = "hostile"
HOSTILE_NAME = "<script>alert(1)</script>.md"
HOSTILE = {
    HOSTILE_NAME: "# <img src=x onerror=alert(2)> heading\n\n"
    "Quartz <b>bold</b> & [[Moon Base]] </script><script>alert(3)</script>\n"
}
HOSTILE_FILE = f"{HOSTILE_LABEL}/{HOSTILE_NAME}"
#: A folder where one plan supersedes another (ADR 0211).
PLANS = {
    "old-plan.md": "# Old Plan\n\nPark in the [[Dock]].\n",
    "dock.md": "# Dock\n\nA place to park.\n",
    "new-plan.md": "---\nsupersedes: old-plan\n---\n# New Plan\n\nPark outside.\n",
}


@pytest.fixture(scope="module")
def run() -> Iterator[uf.UiRun]:
    more = {HOSTILE_LABEL: (uf.GROUP, HOSTILE), "plans": (uf.GROUP, PLANS)}
    with uf.ui_run(more=more) as r:
        yield r


class Reply:
    """One HTTP answer: status, headers (lower-cased names), body text."""

    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.pairs = headers
        self.body = body
        self.text = body.decode("utf-8", errors="replace")


def ask(
    run: uf.UiRun,
    path: str,
    *,
    method: str = "GET",
    cookie: str | None = "",
    host: str | None = None,
) -> Reply:
    """``method path`` on the page; ``cookie`` ``""`` means the run's token, ``None`` none."""
    conn = http.client.HTTPConnection("127.0.0.1", run.port, timeout=120)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host or f"127.0.0.1:{run.port}")
        if cookie is not None:
            conn.putheader("Cookie", f"lcg_ui={cookie or run.token}")
        conn.endheaders()
        answer = conn.getresponse()
        return Reply(answer.status, answer.getheaders(), answer.read())
    finally:
        conn.close()


def page(run: uf.UiRun, path: str) -> Reply:
    """A page that must answer 200."""
    reply = ask(run, path)
    assert reply.status == 200, (path, reply.status, reply.text[:500])
    assert reply.headers["content-type"].startswith("text/html")
    return reply


class Found(HTMLParser):
    """The elements of a page: for each, its tag, attributes, and the text inside it."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self._open: list[tuple[str, dict[str, str], list[str]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        entry = (tag, {k: v or "" for k, v in attrs}, [])
        self.elements.append(entry)
        if tag not in ("meta", "link", "input", "br", "img"):
            self._open.append(entry)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        for _, _, texts in self._open:
            texts.append(data)

    def by_id(self, element_id: str) -> tuple[str, dict[str, str], str]:
        """The element with this id: tag, attributes, text."""
        for tag, attrs, texts in self.elements:
            if attrs.get("id") == element_id:
                return tag, attrs, "".join(texts)
        raise AssertionError(f"no element #{element_id}")

    def classed(self, cls: str) -> list[tuple[dict[str, str], str]]:
        """(attributes, text) of the elements with class ``cls``."""
        return [(a, "".join(t)) for _, a, t in self.elements if cls in a.get("class", "").split()]

    def hrefs(self) -> list[str]:
        """Every link's target."""
        return [a["href"] for tag, a, _ in self.elements if tag == "a" and "href" in a]


def source_url(group: str, file: str) -> str:
    """The page of a file, as the views link it."""
    return f"/source?group={quote(group)}&file={quote(file)}"


# ---- the guards -------------------------------------------------------------------------------


def test_the_token_in_a_url_sets_the_cookie_and_redirects_without_it(run: uf.UiRun) -> None:
    reply = ask(run, f"/search?q=oxygen&token={run.token}&group=liminis", cookie=None)
    assert reply.status == 303
    assert reply.headers["location"] == "/search?q=oxygen&group=liminis"
    assert reply.headers["set-cookie"] == (f"lcg_ui={run.token}; HttpOnly; SameSite=Strict; Path=/")
    assert ask(run, f"/?token={run.token}", cookie=None).headers["location"] == "/"


def test_no_token_or_a_wrong_one_is_forbidden(run: uf.UiRun) -> None:
    wrong = run.token[:-1] + ("A" if run.token[-1] != "A" else "B")
    for path in ("/", "/search?q=oxygen", "/health.json", "/assets/app.js", "/nowhere"):
        assert ask(run, path, cookie=None).status == 403, path
        assert ask(run, path, cookie=wrong).status == 403, path
    refused = ask(run, f"/?token={wrong}", cookie=None)
    assert refused.status == 403 and "set-cookie" not in refused.headers
    # Two tokens, one of them right, are not a right one.
    assert ask(run, f"/?token={wrong}&token={run.token}", cookie=None).status == 403


def test_a_foreign_host_header_is_forbidden_even_with_the_token(run: uf.UiRun) -> None:
    for host in (
        f"{uf.REBIND_HOST}:{run.port}",
        f"127.0.0.1:{run.port + 1}",
        "127.0.0.1",
        f"127.0.0.1.nip.io:{run.port}",
    ):
        assert ask(run, "/", host=host).status == 403, host
        assert ask(run, f"/?token={run.token}", cookie=None, host=host).status == 403, host
    assert ask(run, "/", host=f"localhost:{run.port}").status == 200


def test_every_answer_carries_the_security_headers_and_no_cors(run: uf.UiRun) -> None:
    answers = [
        ask(run, "/"),
        ask(run, "/assets/app.css"),
        ask(run, "/assets/graph.js"),
        ask(run, "/health.json"),
        ask(run, "/nowhere"),
        ask(run, "/", cookie=None),
        ask(run, "/", method="POST"),
        ask(run, f"/?token={run.token}", cookie=None),
    ]
    assert [a.status for a in answers] == [200, 200, 200, 200, 404, 403, 405, 303]
    for a in answers:
        assert a.headers["content-security-policy"] == CSP
        assert a.headers["x-content-type-options"] == "nosniff"
        assert a.headers["referrer-policy"] == "no-referrer"
        assert a.headers["cache-control"] == "no-store"
        assert not [k for k in a.headers if k.startswith("access-control-")], a.headers
    assert CSP == (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    assert answers[1].headers["content-type"].startswith("text/css")
    assert answers[2].headers["content-type"].startswith("text/javascript")


def test_a_request_the_server_cannot_read_is_refused_with_the_headers(run: uf.UiRun) -> None:
    with socket.create_connection(("127.0.0.1", run.port), timeout=120) as raw:
        # A header line longer than the stdlib reads (64 KiB): refused before any view runs.
        raw.sendall(b"GET / HTTP/1.1\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n")
        got = b""
        while chunk := raw.recv(65536):
            got += chunk
    head = got.split(b"\r\n\r\n", 1)[0].decode()
    assert head.startswith("HTTP/1.1 431"), head
    assert f"Content-Security-Policy: {CSP}" in head.splitlines()
    assert "X-Content-Type-Options: nosniff" in head.splitlines()


def test_only_get_and_head_are_answered(run: uf.UiRun) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"):
        reply = ask(run, "/search?q=oxygen", method=method)
        assert reply.status == 405, method
        assert reply.headers["allow"] == "GET, HEAD"
    head = ask(run, "/sources", method="HEAD")
    assert head.status == 200 and head.body == b""
    assert int(head.headers["content-length"]) == len(page(run, "/sources").body)


def test_the_page_reaches_only_read_methods() -> None:
    table = {d.name: d for d in METHODS}
    for name in READS:
        d = table[name]
        assert d.scope in ("read", "none") and not d.writes and not d.streaming, name
    reads = Reads(Path("/nonexistent/lcg-ui.sock"))
    for name in ("knowledge_clear_all", "knowledge_query_cypher", "knowledge_close"):
        # Refused before anything is sent: the socket does not even exist.
        with pytest.raises(ReadRefused, match=name):
            reads.call(name, {"confirm": True})


# ---- the views --------------------------------------------------------------------------------


def test_every_page_has_the_nav_bar(run: uf.UiRun) -> None:
    for path in ("/", "/search", "/sources", "/health", "/quality"):
        nav = Found(page(run, path).text).by_id("nav")
        assert nav[0] == "nav"
        links = [h for h in Found(page(run, path).text).hrefs()][:5]
        assert links == ["/", "/search", "/sources", "/health", "/quality"], path


def test_home_shows_the_workspace_its_groups_and_recent_sources(run: uf.UiRun) -> None:
    found = Found(page(run, "/").text)
    assert any(tag == "h1" and "".join(t) == str(run.workspace) for tag, _, t in found.elements)
    assert found.by_id("health")[2].strip() in ("service: healthy",)
    status = run.client.call("knowledge_status", {})["wal_groups"][uf.GROUP]
    rows = re.findall(r'<tr class="group" data-group="liminis">(.*?)</tr>', page(run, "/").text)
    assert len(rows) == 1
    numbers = [
        int(n.replace(",", "")) for n in re.findall(r'<td class="count">([\d,]+)</td>', rows[0])
    ]
    sources = run.client.call("knowledge_sources", {"group_ids": [uf.GROUP]})["sources"]
    assert numbers == [
        status["entity_count"],
        status["relationship_count"],
        status["episode_count"],
        sum(s["chunks"] for s in sources),
    ]
    links = [h for h in found.hrefs() if h.startswith("/source?")]
    for file in uf.VAULT_FILES:
        assert source_url(uf.GROUP, file) in links, file


def test_search_shows_the_hits_lcg_search_prints(run: uf.UiRun) -> None:
    found = Found(page(run, "/search?q=oxygen+electrolysis&group=liminis").text)
    assert found.by_id("search-form")[0] == "form"
    done = sf.run_lcg(run.workspace, "search", "oxygen electrolysis", "-g", uf.GROUP, "--json")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    passages = found.classed("passage")
    assert len(passages) == len(hits) > 0
    shown = [
        a["href"] for tag, a, _ in found.elements if tag == "a" and "file" in a.get("class", "")
    ]
    assert shown == [source_url(uf.GROUP, h["source_file"]) for h in hits]
    assert "<mark>oxygen</mark>" in page(run, "/search?q=oxygen+electrolysis").text.lower()
    entities = [h for h in found.hrefs() if h.startswith("/entity/")]
    plant = run.entity("Oxygen Plant")
    assert f"/entity/{plant['uuid']}?group={uf.GROUP}" in entities
    assert found.classed("fact"), "no fact listed"


def test_an_entity_shows_its_graph_facts_and_mentions(run: uf.UiRun) -> None:
    base = run.entity("Moon Base")
    text = page(run, f"/entity/{base['uuid']}?group={uf.GROUP}").text
    found = Found(text)
    assert found.by_id("entity-name")[2] == "Moon Base"
    assert "Document" in found.by_id("labels")[2]
    assert found.by_id("summary") and found.by_id("attributes")
    assert found.by_id("graph")[0] == "div"
    embedded = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', text)
    assert embedded is not None
    graph = json.loads(embedded.group(1))
    names = {n["name"] for n in graph["nodes"]}
    assert {"Moon Base", "Oxygen Plant", "Rover Bay", "First Week", "#lunar"} <= names
    assert "Regolith" in names  # two hops: Moon Base -> Oxygen Plant -> Regolith
    assert [n["uuid"] for n in graph["nodes"] if n["hop"] == 0] == [base["uuid"]]
    assert graph["capped"] is False
    again = ask(run, f"/entity/{base['uuid']}/graph.json?group={uf.GROUP}")
    assert again.status == 200 and again.headers["content-type"] == "application/json"
    assert json.loads(again.body) == graph
    states = [t.strip() for _, t in found.classed("validity")]
    assert states and set(states) <= {"current", "ended", "superseded"}
    facts = [t for _, t in found.classed("fact-text")]
    assert "Moon Base links to Oxygen Plant" in facts
    assert source_url(uf.GROUP, f"{uf.LABEL}/Moon Base.md") in found.hrefs()
    assert ask(run, "/entity/no-such-uuid").status == 404


def test_a_fact_of_a_superseded_document_says_superseded(run: uf.UiRun) -> None:
    old = run.entity("Old Plan")
    text = page(run, f"/entity/{old['uuid']}?group={uf.GROUP}").text
    facts = dict(re.findall(r'<span class="fact-text">(.*?)</span>.*?class="validity (\w+)"', text))
    assert facts.get("Old Plan links to Dock") == "superseded", facts
    assert [v for k, v in facts.items() if "New Plan" in k] == ["current"], facts


def test_the_graph_of_a_hub_is_capped_and_says_so(run: uf.UiRun) -> None:
    # A tag every document of the vault carries is no hub; the hostile chunk's links are few:
    # ask the neighbourhood's cap of an entity with more edges than the first hop asks for.
    lunar = run.entity("#lunar")
    reply = page(run, f"/entity/{lunar['uuid']}?group={uf.GROUP}")
    graph = json.loads(ask(run, f"/entity/{lunar['uuid']}/graph.json?group={uf.GROUP}").body)
    assert len(graph["nodes"]) <= 200
    assert ("graph-capped" in reply.text) == graph["capped"]


def test_sources_list_each_tree_and_its_files(run: uf.UiRun) -> None:
    found = Found(page(run, "/sources").text)
    assert found.by_id("trees")
    labels = [t for _, t in found.classed("tree-label")]
    assert f"{uf.LABEL}/" in labels and f"{HOSTILE_LABEL}/" in labels
    files = [
        a["href"] for tag, a, _ in found.elements if tag == "a" and "file" in a.get("class", "")
    ]
    for file in [*uf.VAULT_FILES, HOSTILE_FILE]:
        assert source_url(uf.GROUP, file) in files, file


def test_one_tree_has_a_page_of_its_own(run: uf.UiRun) -> None:
    found = Found(page(run, f"/sources?group={uf.GROUP}&tree={quote(uf.LABEL)}/").text)
    assert [t for _, t in found.classed("tree-label")] == [f"{uf.LABEL}/"]
    files = [
        a["href"] for tag, a, _ in found.elements if tag == "a" and "file" in a.get("class", "")
    ]
    assert files == [source_url(uf.GROUP, f) for f in uf.VAULT_FILES]


def test_a_file_shows_its_chunks_links_and_backlinks(run: uf.UiRun) -> None:
    found = Found(page(run, source_url(uf.GROUP, f"{uf.LABEL}/Moon Base.md")).text)
    assert found.by_id("file-name")[2] == f"{uf.LABEL}/Moon Base.md"
    chunks = [t for _, t in found.classed("chunk")]
    assert any("Shackleton crater" in c for c in chunks)
    assert any("Four people rotate" in c for c in chunks)
    out = {t for tag, a, t in _links_in(found, "links-out")}
    back = {t for tag, a, t in _links_in(found, "backlinks")}
    assert out == {"Oxygen Plant", "Rover Bay"}
    assert {"Oxygen Plant", "First Week"} <= back
    assert source_url(uf.GROUP, f"{uf.LABEL}/Oxygen Plant.md") in found.hrefs()
    assert ask(run, source_url(uf.GROUP, "nowhere/none.md")).status == 404


def _links_in(found: Found, list_id: str) -> list[tuple[str, dict[str, str], str]]:
    """The links inside the element ``#list_id``."""
    out = []
    inside = False
    for tag, attrs, texts in found.elements:
        if attrs.get("id") == list_id:
            inside = True
            continue
        if inside and tag in ("h2", "ol"):
            break
        if inside and tag == "a":
            out.append((tag, attrs, "".join(texts)))
    return out


def test_an_episode_shows_its_text(run: uf.UiRun) -> None:
    chunks = run.client.call(
        "knowledge_source_manifest", {"prefix": f"{uf.LABEL}/Rover Bay.md:", "group_id": uf.GROUP}
    )["chunks"]
    assert chunks
    found = Found(page(run, f"/episode/{chunks[0]['episode_uuid']}?group={uf.GROUP}").text)
    assert "pressurised garage" in found.by_id("episode-text")[2]
    assert found.by_id("episode-name") and found.by_id("episode-time")
    assert ask(run, "/episode/no-such-uuid").status == 404


def test_health_shows_the_status_and_its_json(run: uf.UiRun) -> None:
    found = Found(page(run, "/health").text)
    assert found.by_id("state")[2] == "healthy"
    status = run.client.call("knowledge_status", {})
    g = status["wal_groups"][uf.GROUP]
    cells = {a["data-cell"]: "".join(t) for tag, a, t in found.elements if "data-cell" in a}
    assert cells[f"{uf.GROUP}|max_seq"] == f"{g['max_seq']:,}"
    assert cells[f"{uf.GROUP}|hydration_status"] == g["hydration_status"]
    assert cells[f"{uf.GROUP}|damage"] == "none"
    assert status["embedding_model"] in found.by_id("embedder")[2]
    data = json.loads(ask(run, "/health.json").body)
    assert data["state"] == "healthy" and data["cells"] == cells


def test_quality_says_when_there_is_no_report_and_shows_one(run: uf.UiRun) -> None:
    reports = run.workspace / ".lcg" / "eval" / "reports"
    assert "no eval report yet" in page(run, "/quality").text
    reports.mkdir(parents=True, exist_ok=True)
    report = {
        "lcg_version": "0",
        "stamp": "20261206T080000Z",
        "backend": "scripted",
        "model": "m",
        "size": "small",
        "seeds": [1],
        "embedder": "hash",
        "structural_passed": True,
        "metrics": {"extraction.entities_f1": 0.75, "retrieval.recall_at_5": 0.5},
        "spread": {},
        "runs": [],
    }
    (reports / "20261206T080000Z-scripted-seeds-1.json").write_bytes(msgspec.json.encode(report))
    try:
        found = Found(page(run, "/quality").text)
        assert "scripted" in found.by_id("reports")[2]
        assert "0.750" in found.by_id("reports")[2]
        assert len([e for e in found.elements if e[0] == "rect"]) == 2
    finally:
        (reports / "20261206T080000Z-scripted-seeds-1.json").unlink()


def test_a_hostile_file_name_and_heading_are_shown_as_text(run: uf.UiRun) -> None:
    views = [
        page(run, "/sources").text,
        page(run, "/search?q=quartz+heading&group=liminis").text,
        page(run, source_url(uf.GROUP, HOSTILE_FILE)).text,
    ]
    for text in views:
        assert "<script>alert" not in text and "<img src=x" not in text and "<b>bold" not in text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;.md" in text
    found = Found(views[2])
    assert found.by_id("file-name")[2] == HOSTILE_FILE
    assert any("<img src=x onerror=alert(2)> heading" in t for _, t in found.classed("heading"))
    doc = run.client.call("knowledge_get_document", {"file": HOSTILE_FILE, "group_id": uf.GROUP})
    (node,) = doc["nodes"]
    assert "<" in node["name"], node["name"]  # the document is named by its markup heading
    entity_page = page(run, f"/entity/{node['uuid']}?group={uf.GROUP}").text
    assert Found(entity_page).by_id("entity-name")[2] == node["name"]
    assert "<img src=x" not in entity_page and "<script>alert" not in entity_page
    views.append(entity_page)
    # The only scripts of any page are its own files.
    for text in views:
        scripts = re.findall(r"<script\b[^>]*>", text)
        assert all('src="/assets/' in s or 'type="application/json"' in s for s in scripts)


def test_lcg_ui_stops_on_sigterm_with_status_0(run: uf.UiRun) -> None:
    proc, log = uf.spawn_ui(run.workspace)
    url, port, token = uf.read_url(proc, log)
    assert url == f"http://127.0.0.1:{port}/?token={token}" and port != run.port
    assert uf.stop_ui(proc, signal.SIGTERM) == 0
    assert "Traceback" not in log.read_text()


def test_lcg_ui_serves_the_workspace_itself_when_no_service_runs() -> None:
    with sf.temp_workspace("lcg-ui-alone-") as ws:
        vault = uf.write_vault(ws / "outside")
        done = sf.run_lcg(ws, "ingest", str(vault), "--no-commits")
        assert done.returncode == 0, done.stderr
        proc, log = uf.spawn_ui(ws)
        try:
            url, port, token = uf.read_url(proc, log)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request("GET", "/sources", headers={"Cookie": f"lcg_ui={token}"})
            answer = conn.getresponse()
            body = answer.read().decode()
            conn.close()
            assert answer.status == 200 and f"{uf.LABEL}/Moon Base.md" in body
            # It holds the workspace: another command goes through its socket meanwhile.
            status = sf.run_lcg(ws, "status")
            assert status.returncode == 0, status.stdout + status.stderr
        finally:
            code = uf.stop_ui(proc, signal.SIGINT)
        assert code == 0, log.read_text()
        assert "Traceback" not in log.read_text()
