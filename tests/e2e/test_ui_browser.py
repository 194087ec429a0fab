"""``lcg ui`` in a real browser (issue 32, ADR 0225): the system Chromium driven by Playwright
against a real ``lcg ui`` in front of a real ``lcg serve`` holding a hand-written vault that
``lcg ingest`` synced (hash embedder, no LLM: the graph is what the files declare).

Each view renders what the workspace holds (names, file paths, counts); a search hit leads to
an entity, a node of its graph to a neighbour, and a mention to the source file; the token is
required (no cookie, a wrong token, a rebound host name: 403); every request of every view stays
on the page's origin; no view logs a console error.
"""

from __future__ import annotations

import http.client
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest

import _service_fixtures as sf
import _ui_fixtures as uf

#: A second folder in a second group: one document with more tags than the graph view shows.
HUB_TAGS = 250
HUB = {
    "Hub.md": "---\ntags: ["
    + ", ".join(f"item-{i:03d}" for i in range(HUB_TAGS))
    + "]\n---\n# Hub\n\nEverything in stock.\n"
}
#: The graph view's cap (the page's contract).
GRAPH_CAP = 200
VALIDITY = {"current", "ended", "superseded"}
NAV = ["Home", "Search", "Sources", "Health", "Quality"]

# A real lcg serve, lcg ui and Chromium for the module: about a minute on 2 cores, so the file
# starts first in a parallel run (ADR 0187).
pytestmark = pytest.mark.long


@pytest.fixture(scope="module")
def run() -> Iterator[uf.UiRun]:
    with uf.ui_run(more={"catalogue": ("stores", HUB)}) as r:
        yield r


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with uf.browser() as b:
        yield b


@pytest.fixture
def tab(run: uf.UiRun, browser: Any) -> Iterator[uf.Tab]:
    """A tab logged in through the printed URL; clean (no console error, no foreign request)
    checked after the test."""
    t = uf.open_tab(browser)
    try:
        answer = t.page.goto(run.url)
        assert answer is not None and answer.ok, answer and answer.status
        yield t
        t.assert_clean(run.origin)
    finally:
        uf.close_tab(t)


def _query(href: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(href).query).items()}


def _hrefs(tab: uf.Tab, selector: str) -> list[str]:
    got = tab.page.eval_on_selector_all(selector, "els => els.map(e => e.href)")
    assert isinstance(got, list)
    return [str(h) for h in got]


def _texts(tab: uf.Tab, selector: str) -> list[str]:
    return [t.strip() for t in tab.page.locator(selector).all_inner_texts()]


def _source_url(group: str, file: str) -> str:
    return f"/source?group={quote(group)}&file={quote(file)}"


def _lcg_search(run: uf.UiRun, query: str, *flags: str) -> list[dict[str, Any]]:
    done = sf.run_lcg(run.workspace, "search", query, "--group", uf.GROUP, "--json", *flags)
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert isinstance(hits, list)
    return hits


# ---- the token and the host -----------------------------------------------------------------


def test_the_printed_url_sets_an_httponly_cookie_and_drops_the_token(
    run: uf.UiRun, tab: uf.Tab
) -> None:
    assert tab.page.url == run.origin + "/"
    cookies = {c["name"]: c for c in tab.page.context.cookies()}
    assert cookies["lcg_ui"]["value"] == run.token
    assert cookies["lcg_ui"]["httpOnly"] is True
    assert cookies["lcg_ui"]["sameSite"] == "Strict"
    assert tab.page.evaluate("document.cookie") == ""


def test_a_page_without_the_token_is_forbidden(run: uf.UiRun, browser: Any) -> None:
    t = uf.open_tab(browser)
    try:
        for path in ("/", "/search?q=oxygen", "/sources", "/health", "/health.json"):
            answer = t.page.goto(run.at(path))
            assert answer is not None and answer.status == 403, (path, answer and answer.status)
        wrong = run.token[:-1] + ("A" if run.token[-1] != "A" else "B")
        answer = t.page.goto(run.at(f"/?token={wrong}"))
        assert answer is not None and answer.status == 403
        assert t.page.context.cookies() == []
    finally:
        uf.close_tab(t)


def test_a_rebound_host_name_is_forbidden_even_with_the_token(run: uf.UiRun, browser: Any) -> None:
    # The browser resolves REBIND_HOST to 127.0.0.1, as a DNS-rebinding attacker's name would.
    t = uf.open_tab(browser)
    try:
        answer = t.page.goto(f"http://{uf.REBIND_HOST}:{run.port}/?token={run.token}")
        assert answer is not None and answer.status == 403
        assert t.page.context.cookies() == []
    finally:
        uf.close_tab(t)


def _raw_get(port: int, path: str, host: str, cookie: str | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        headers = {"Host": host} | ({"Cookie": f"lcg_ui={cookie}"} if cookie else {})
        conn.request("GET", path, headers=headers)
        return conn.getresponse().status
    finally:
        conn.close()


def test_the_host_header_must_name_the_loopback_and_the_port(run: uf.UiRun) -> None:
    port, token = run.port, run.token
    assert _raw_get(port, "/", f"127.0.0.1:{port}", token) == 200
    assert _raw_get(port, "/", f"localhost:{port}", token) == 200
    assert _raw_get(port, f"/?token={token}", f"127.0.0.1:{port}") == 303
    hosts = ("evil.example", f"evil.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}")
    for host in (*hosts, f"{uf.REBIND_HOST}:{port}", f"localhost.evil.example:{port}"):
        assert _raw_get(port, "/", host, token) == 403, host
        assert _raw_get(port, f"/?token={token}", host) == 403, host
    assert _raw_get(port, "/", f"127.0.0.1:{port}") == 403
    assert _raw_get(port, "/", f"127.0.0.1:{port}", "not-the-token") == 403


# ---- the views --------------------------------------------------------------------------------


def test_every_view_has_the_nav_bar_and_stays_on_its_origin(run: uf.UiRun, tab: uf.Tab) -> None:
    moon = run.entity("Moon Base")
    paths = [
        "/",
        "/search?q=oxygen&group=liminis",
        f"/entity/{moon['uuid']}?group=liminis",
        "/sources",
        _source_url(uf.GROUP, f"{uf.LABEL}/Moon Base.md"),
        "/health",
        "/quality",
    ]
    for path in paths:
        answer = tab.page.goto(run.at(path))
        assert answer is not None and answer.status == 200, (path, answer and answer.status)
        headers = answer.headers
        assert "default-src 'none'" in headers["content-security-policy"], path
        assert "access-control-allow-origin" not in headers, path
        tab.page.wait_for_load_state("load")
        for name in NAV:
            assert tab.page.locator("nav a", has_text=name).count() == 1, (path, name)
    # The nav bar's own links lead to the views.
    for name in NAV:
        tab.page.locator("nav a", has_text=name).click()
        tab.page.wait_for_load_state("load")
        assert tab.page.url.startswith(run.origin + "/"), (name, tab.page.url)
    assert len(tab.requests) >= len(paths) + len(NAV)
    tab.assert_clean(run.origin)


def test_home_shows_the_workspace_its_groups_and_recent_sources(run: uf.UiRun, tab: uf.Tab) -> None:
    page = tab.page
    assert str(run.workspace) in page.inner_text("h1")
    assert "healthy" in page.inner_text("#health").lower()
    status = run.client.call("knowledge_status", {})
    rows = {
        cells[0]: cells
        for cells in (
            [c.strip() for c in row.locator("td, th").all_inner_texts()]
            for row in page.locator("#groups tr.group").all()
        )
    }
    assert set(rows) == {uf.GROUP, "stores"}
    liminis = rows[uf.GROUP]
    wal = status["wal_groups"][uf.GROUP]
    # entities (5 documents, 3 tags), facts, episodes, chunks (10, each an episode)
    assert wal["entity_count"] == 8
    for count in (wal["entity_count"], wal["relationship_count"], wal["episode_count"], 10):
        assert str(count) in liminis, (count, liminis)
    # The hub and its tags (and the annex's shelf, once the health test synced it).
    stores = status["wal_groups"]["stores"]["entity_count"]
    assert stores >= 1 + HUB_TAGS and str(stores) in rows["stores"], rows["stores"]
    recent = page.locator("#recent-sources")
    assert uf.LABEL in recent.inner_text()
    files = [_query(h) for h in _hrefs(tab, "#recent-sources a[href*='/source?']")]
    assert {f["file"] for f in files if f["group"] == uf.GROUP} == set(uf.VAULT_FILES)
    page.locator("#recent-sources a", has_text="Regolith").first.click()
    page.wait_for_url("**/source?**")
    assert "Loose lunar dust" in page.inner_text("#chunks")


def test_search_shows_the_passages_entities_and_facts_lcg_search_finds(
    run: uf.UiRun, tab: uf.Tab
) -> None:
    page = tab.page
    page.goto(run.at("/"))
    page.locator("nav a", has_text="Search").click()
    page.wait_for_load_state("load")
    page.fill("#search-form input[name=q]", "electrolysis")
    page.fill("#search-form input[name=group]", uf.GROUP)
    page.locator("#search-form input[name=q]").press("Enter")
    page.wait_for_url(f"**/search?**q=electrolysis**group={uf.GROUP}**")
    passages = page.locator("#passages li.passage")
    expected = _lcg_search(run, "electrolysis")
    assert passages.count() == len(expected) >= 1
    files = [_query(h)["file"] for h in _hrefs(tab, "#passages li.passage a.file")]
    assert files == [h["source_file"] for h in expected]
    first = passages.first
    assert "Oxygen Plant" in first.locator(".heading").inner_text()
    assert [m.lower() for m in first.locator("mark").all_inner_texts()] == ["electrolysis"]

    # Entities and facts: those of `lcg search --entities` and `--facts`, in their order.
    page.goto(run.at(f"/search?q={quote('Moon Base')}&group={uf.GROUP}"))
    names = _texts(tab, "#entities li.entity a")
    assert names == [e["name"] for e in _lcg_search(run, "Moon Base", "--entities")]
    moon = run.entity("Moon Base")
    assert _hrefs(tab, "#entities li.entity a")[0] == run.at(
        f"/entity/{moon['uuid']}?group={uf.GROUP}"
    )
    facts = _texts(tab, "#facts li.fact")
    expected_facts = _lcg_search(run, "Moon Base", "--facts")
    assert len(facts) == len(expected_facts) >= 1
    for shown, fact in zip(facts, expected_facts, strict=True):
        assert fact["fact"] in shown


def test_the_group_filter_keeps_other_groups_out(run: uf.UiRun, tab: uf.Tab) -> None:
    page = tab.page
    page.goto(run.at("/search?q=stock&group=stores"))
    assert [_query(h) for h in _hrefs(tab, "#passages a.file")][0] == {
        "group": "stores",
        "file": "catalogue/Hub.md",
    }
    page.goto(run.at("/search?q=stock&group=liminis"))
    shown = [_query(h) for h in _hrefs(tab, "#passages a.file")]
    assert {s["group"] for s in shown} <= {uf.GROUP}
    assert {s["file"] for s in shown} <= set(uf.VAULT_FILES)
    assert [s["file"] for s in shown] == [h["source_file"] for h in _lcg_search(run, "stock")]


def test_an_entity_shows_its_summary_labels_attributes_graph_facts_and_mentions(
    run: uf.UiRun, tab: uf.Tab
) -> None:
    page = tab.page
    moon = run.entity("Moon Base")
    page.goto(run.at(f"/entity/{moon['uuid']}?group={uf.GROUP}"))
    assert page.inner_text("#entity-name").strip() == "Moon Base"
    assert page.locator("#summary").count() == 1
    assert "Document" in page.inner_text("#labels")
    attributes = page.inner_text("#attributes")
    assert "active" in attributes and "Moon Base.md" in attributes
    page.wait_for_selector("#graph svg g.node")
    nodes = page.eval_on_selector_all(
        "#graph svg g.node",
        """els => els.map(e => {
            const a = e.closest('a') || e.querySelector('a');
            const xlink = 'http://www.w3.org/1999/xlink';
            return {
                uuid: e.dataset.uuid,
                centre: e.classList.contains('centre'),
                href: a ? (a.getAttribute('href') ?? a.getAttributeNS(xlink, 'href')) : null,
            };
        })""",
    )
    # Every entity of the vault is within two hops of the base: itself, 4 documents, 3 tags.
    names = {run.entity(n)["uuid"] for n in ("Oxygen Plant", "Rover Bay", "Regolith", "First Week")}
    uuids = {n["uuid"] for n in nodes}
    assert len(nodes) == len(uuids) == 8, nodes
    assert names <= uuids
    assert [n["uuid"] for n in nodes if n["centre"]] == [moon["uuid"]]
    for n in nodes:
        assert n["href"] is not None and f"/entity/{n['uuid']}" in n["href"], n
    assert page.locator("#graph-capped").count() == 0
    # The JSON the page drew from is the graph.json endpoint's.
    embedded = json.loads(page.eval_on_selector("script#graph-data", "e => e.textContent"))
    fetched = page.evaluate(
        "u => fetch(u).then(r => r.json())", f"/entity/{moon['uuid']}/graph.json?group={uf.GROUP}"
    )
    assert fetched == embedded
    facts = page.locator("#facts li.fact")
    assert facts.count() >= 4  # two links out, two tags
    assert "Moon Base links to Oxygen Plant" in page.inner_text("#facts")
    for validity in _texts(tab, "#facts li.fact .validity"):
        assert validity in VALIDITY, validity
    mentions = [_query(h) for h in _hrefs(tab, "#mentions li a[href*='/source?']")]
    assert {"group": uf.GROUP, "file": f"{uf.LABEL}/Moon Base.md"} in mentions


def test_the_graph_of_a_hub_is_capped_with_a_note(run: uf.UiRun, tab: uf.Tab) -> None:
    page = tab.page
    found = run.client.call(
        "knowledge_find_entities", {"query": "Hub", "group_ids": ["stores"], "num_results": 5}
    )
    hub = next(n for n in found["nodes"] if n["name"] == "Hub")
    page.goto(run.at(f"/entity/{hub['uuid']}?group=stores"))
    page.wait_for_selector("#graph svg g.node")
    count = page.locator("#graph svg g.node").count()
    assert 1 < count <= GRAPH_CAP
    assert page.locator("#graph-capped").count() == 1
    assert page.locator("#graph svg g.node.centre").get_attribute("data-uuid") == hub["uuid"]


def test_a_search_hit_leads_to_an_entity_a_neighbour_and_its_source_file(
    run: uf.UiRun, tab: uf.Tab
) -> None:
    page = tab.page
    page.goto(run.at(f"/search?q={quote('Oxygen Plant')}&group={uf.GROUP}"))
    page.locator("#entities li.entity a", has_text="Oxygen Plant").first.click()
    page.wait_for_url("**/entity/**")
    assert page.inner_text("#entity-name").strip() == "Oxygen Plant"
    regolith = run.entity("Regolith")
    node = page.locator(f"#graph svg g.node[data-uuid='{regolith['uuid']}']")
    node.wait_for()
    node.click()
    page.wait_for_url(f"**/entity/{regolith['uuid']}**")
    assert page.inner_text("#entity-name").strip() == "Regolith"
    page.locator("#mentions li a[href*='/source?']").first.click()
    page.wait_for_url("**/source?**")
    assert f"{uf.LABEL}/Regolith.md" in page.inner_text("#file-name")
    assert "Loose lunar dust" in page.inner_text("#chunks")


def test_sources_lists_each_tree_and_its_files(run: uf.UiRun, tab: uf.Tab) -> None:
    page = tab.page
    page.goto(run.at("/sources"))
    trees = page.inner_text("#trees")
    assert uf.LABEL in trees and "catalogue" in trees
    assert str(run.vault) in trees
    files = [_query(h) for h in _hrefs(tab, "#trees a.file")]
    assert sorted(f["file"] for f in files if f["group"] == uf.GROUP) == uf.VAULT_FILES
    catalogue = [f["file"] for f in files if f["file"].startswith("catalogue/")]
    assert catalogue == ["catalogue/Hub.md"]
    page.locator("#trees a.file", has_text="Rover Bay").first.click()
    page.wait_for_url("**/source?**")
    assert "Rover Bay" in page.inner_text("#file-name")


def test_a_source_file_shows_its_chunks_links_and_backlinks(run: uf.UiRun, tab: uf.Tab) -> None:
    page = tab.page
    page.goto(run.at(_source_url(uf.GROUP, f"{uf.LABEL}/Oxygen Plant.md")))
    assert f"{uf.LABEL}/Oxygen Plant.md" in page.inner_text("#file-name")
    chunks = _texts(tab, "#chunks li.chunk")
    assert any("molten salt electrolysis" in c for c in chunks)
    assert any("Output" in c and "forty kilograms" in c for c in chunks)
    out = {_query(h)["file"] for h in _hrefs(tab, "#links-out li a")}
    assert out == {f"{uf.LABEL}/Regolith.md", f"{uf.LABEL}/Moon Base.md"}
    back = {_query(h)["file"] for h in _hrefs(tab, "#backlinks li a")}
    assert back == {f"{uf.LABEL}/Moon Base.md", f"{uf.LABEL}/logs/First Week.md"}
    page.locator("#backlinks li a", has_text="First Week").click()
    page.wait_for_url("**/source?**")
    assert "First Week" in page.inner_text("#file-name")


def test_an_episode_shows_its_name_time_and_text(run: uf.UiRun, tab: uf.Tab) -> None:
    hit = _lcg_search(run, "electrolysis")[0]
    tab.page.goto(run.at(f"/episode/{hit['episode_uuid']}?group={uf.GROUP}"))
    body = tab.page.inner_text("body")
    assert "molten salt electrolysis" in body


def test_health_shows_the_status_and_keeps_refreshing(run: uf.UiRun, tab: uf.Tab) -> None:
    page = tab.page
    page.goto(run.at("/health"))
    groups = page.inner_text("#groups")
    assert uf.GROUP in groups and "stores" in groups
    body = page.inner_text("body")
    assert "hydrated" in body and "hash-embedder-v1" in body
    episodes = page.locator("td[data-cell='stores|episode_count']")
    before = int(episodes.inner_text().replace(",", ""))
    # Work runs while the page is open: a new folder synced into the stores group. The page
    # shows its episodes without a reload (the 60 s wait is the hang signal, not a bound).
    annex = run.vault.parent / "annex"
    annex.mkdir(exist_ok=True)
    (annex / "Shelf.md").write_text("# Shelf\n\nBolts and washers.\n\n## Spares\n\nSeals.\n")
    done = sf.run_lcg(run.workspace, "ingest", str(annex), "--group", "stores", "--no-commits")
    assert done.returncode == 0, done.stderr
    after = run.client.call("knowledge_status", {})["wal_groups"]["stores"]["episode_count"]
    assert after > before
    with page.expect_request(lambda r: "/health.json" in r.url, timeout=60_000) as asked:
        pass
    answer = asked.value.response()
    assert answer is not None and answer.status == 200
    assert isinstance(answer.json(), dict)
    page.wait_for_function(
        "([sel, want]) => document.querySelector(sel).textContent.replace(/,/g, '') === want",
        arg=["td[data-cell='stores|episode_count']", str(after)],
        timeout=60_000,
    )
    assert page.url == run.at("/health")


def test_quality_says_none_yet_then_shows_the_latest_eval_report(
    run: uf.UiRun, tab: uf.Tab
) -> None:
    page = tab.page
    reports = run.workspace / ".lcg" / "eval" / "reports"
    if not (reports / "latest.json").exists():
        page.goto(run.at("/quality"))
        assert "no eval report yet" in page.inner_text("body").lower()
        done = sf.run_lcg(run.workspace, "eval", "run", "--size", "small", "--backend", "scripted")
        assert done.returncode == 0, done.stderr
    page.goto(run.at("/quality"))
    body = page.inner_text("body")
    assert "no eval report yet" not in body.lower()
    assert "scripted" in body
    assert "mrr" in body.lower()
    assert page.locator("svg").count() >= 1


# ---- the browser itself -------------------------------------------------------------------------


def test_the_browser_is_the_system_chromium(browser: Any) -> None:
    said = subprocess.run(
        [uf.chromium(), "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert browser.version in said.stdout, (browser.version, said.stdout)


def test_no_chromium_fails_naming_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AssertionError, match="apt-get install -y --no-install-recommends chromium"):
        uf.chromium()
