"""What the service's reads answer about a declared corpus (``Observed``), asked over RPC.

Every figure comes from a socket method a client calls (``MethodCaller``, as ``lcg eval
check``), never from the workspace's files: the graph through ``knowledge_get_nodes_by_group``
and ``knowledge_get_edges_by_group``, every ``MENTIONS`` through the episodes
``knowledge_list_entities`` names for each entity, the children of a parent through
``knowledge_get_entity_neighbors``, current truth through ``knowledge_find_entities`` (the
old document's ``superseded_by``, its successor served before it) and
``knowledge_find_relationships`` (the ``SUPERSEDES`` fact served first for it), each file's
``knowledge_get_entities_by_source``, and each window through ``knowledge_search_passages``
bounded by ``valid_after``/``valid_before``.
"""

from __future__ import annotations

from typing import Any, Final

from lcg.eval.check import MethodCaller
from lcg.eval.declared_corpus import DeclaredGold, GoldEdge
from lcg.eval.declared_score import CurrentAnswer, Observed, ObservedDocument, WindowAnswer
from lcg.eval.report import EvalRefusedError
from lcg.events import attributes_of as _attrs

__all__ = ["COMMITS_SOURCE", "observe"]

#: Where a tree's commits are served, inside its label (``lcg.ingest``'s commit source).
COMMITS_SOURCE: Final = ".git/commits"
_MANY: Final = 100_000
#: A window question: words every commit's text holds (its ``Commit:`` and ``Files:`` lines).
_WINDOW_QUERY: Final = "what changed: commit files"


class _Reader:
    def __init__(self, client: MethodCaller, group: str, label: str, shas: list[str]) -> None:
        self.client = client
        self.group = group
        self.label = label
        self.commit_of = {sha[:12]: i for i, sha in enumerate(shas)}
        self.path_of: dict[str, str] = {}
        self.docs: dict[str, ObservedDocument] = {}

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result = self.client.call(method, params)
        if not isinstance(result, dict):
            raise EvalRefusedError(f"the service's {method} answered {result!r:.200}")
        return result

    def end(self, uuid: str) -> str:
        return self.path_of.get(uuid, f"?{uuid}")

    def episode_source(self, name: str, description: str) -> str | None:
        """A file path, ``commit:<n>``, or ``None`` for an episode of neither."""
        source = description[: -len(name) - 1] if description.endswith(f":{name}") else description
        prefix = f"{self.label}/"
        if not source.startswith(prefix):
            return None
        inner = source[len(prefix) :]
        if inner == COMMITS_SOURCE:
            sha = name.rsplit("#", 1)[-1].split("~", 1)[0]
            return f"commit:{self.commit_of.get(sha, f'?{sha}')}"
        return inner

    def nodes(self, seen: Observed) -> None:
        rows = self.call("knowledge_get_nodes_by_group", {"group_ids": [self.group]})["nodes"]
        for row in rows:
            attrs = _attrs(row.get("attributes"))
            name, uuid = str(row["name"]), str(row["uuid"])
            seen.node_texts.append(f"{name} {row.get('attributes') or ''}")
            labels = list(row.get("labels") or [])
            if "Document" in labels and isinstance(attrs.get("path"), str):
                doc = ObservedDocument(
                    uuid=uuid,
                    path=attrs["path"],
                    name=name,
                    doc_id=str(attrs["id"]) if attrs.get("id") is not None else None,
                    superseded_by=attrs.get("superseded_by"),
                )
                seen.documents.append(doc)
                self.docs[doc.path] = doc
                self.path_of[uuid] = doc.path
            elif "Tag" in labels:
                seen.tags.append(name)
                self.path_of[uuid] = name

    def edges(self, seen: Observed) -> None:
        rows = self.call("knowledge_get_edges_by_group", {"group_ids": [self.group]})["edges"]
        for row in rows:
            rel = str(row.get("relation_type") or row.get("name") or "")
            seen.edges.append(
                GoldEdge(
                    relation=rel,  # type: ignore[arg-type]  # an unknown one is an extra
                    source=self.end(str(row["source_node_uuid"])),
                    target=self.end(str(row["target_node_uuid"])),
                )
            )

    def mentions(self, seen: Observed) -> dict[str, list[str]]:
        """Every MENTIONS as an edge; returns commit → the documents it mentions."""
        episodes = self.call("knowledge_get_episodes", {"group_id": self.group, "last_n": _MANY})[
            "episodes"
        ]
        source_of = {
            str(e["uuid"]): self.episode_source(str(e["name"]), str(e["source_description"]))
            for e in episodes
        }
        rows = self.call(
            "knowledge_list_entities", {"group_ids": [self.group], "num_results": _MANY}
        )["nodes"]
        by_commit: dict[str, list[str]] = {}
        for row in rows:
            target = self.end(str(row["uuid"]))
            for ep in row.get("episode_uuids") or []:
                src = source_of.get(str(ep)) or f"?episode {ep}"
                seen.edges.append(GoldEdge(relation="MENTIONS", source=src, target=target))
                if src.startswith("commit:"):
                    by_commit.setdefault(src, []).append(target)
        return by_commit

    def children(self, seen: Observed, parents: list[str]) -> None:
        for parent in parents:
            doc = self.docs.get(parent)
            if doc is None:
                continue
            got = self.call(
                "knowledge_get_entity_neighbors",
                {"entity_uuid": doc.uuid, "num_results": _MANY, "group_ids": [self.group]},
            )
            seen.children[parent] = sorted(
                self.end(str(e["source_node_uuid"]))
                for e in got["edges"]
                if (e.get("relation_type") or e.get("name")) == "PART_OF"
                and e["target_node_uuid"] == doc.uuid
            )

    def current(self, seen: Observed, gold: DeclaredGold) -> None:
        for new, old in gold.supersessions:
            title = gold.titles[old]
            found = self.call(
                "knowledge_find_entities",
                {"query": title, "group_ids": [self.group], "num_results": 50},
            )["nodes"]
            row = next((r for r in found if _attrs(r.get("attributes")).get("path") == old), None)
            # Current truth serves the successor before the old document (ADR 0211).
            first = next(
                (
                    path
                    for r in found
                    if (path := _attrs(r.get("attributes")).get("path")) in (old, new)
                ),
                None,
            )
            superseded_by = _attrs(row.get("attributes")).get("superseded_by") if row else None
            facts = self.call(
                "knowledge_find_relationships",
                {
                    "query": f"{title} superseded",
                    "group_ids": [self.group],
                    "num_results": 50,
                    "current_only": True,
                },
            )["facts"]
            old_uuid = self.docs[old].uuid if old in self.docs else None
            fact = next(
                (
                    f
                    for f in facts
                    if (f.get("relation_type") or f.get("name")) == "SUPERSEDES"
                    and f["target_node_uuid"] == old_uuid
                ),
                None,
            )
            seen.current[old] = CurrentAnswer(
                superseded_by=str(superseded_by) if superseded_by is not None else None,
                successor_served=self.end(str(fact["source_node_uuid"])) if fact else None,
                first_served=str(first) if first is not None else None,
            )

    def by_source(self, seen: Observed, paths: list[str]) -> None:
        for path in paths:
            got = self.call(
                "knowledge_get_entities_by_source",
                {"source": f"{self.label}/{path}", "num_results": _MANY, "group_ids": [self.group]},
            )
            seen.by_source[path] = sorted(self.end(str(n["uuid"])) for n in got["nodes"])

    def windows(self, seen: Observed, gold: DeclaredGold, by_commit: dict[str, list[str]]) -> None:
        for window in gold.windows:
            got = self.call(
                "knowledge_search_passages",
                {
                    "query": _WINDOW_QUERY,
                    "group_ids": [self.group],
                    "num_results": 100,
                    "min_score": 0.0,
                    "valid_after": window.start,
                    "valid_before": window.end,
                },
            )["passages"]
            commits: set[int] = set()
            files: set[str] = set()
            for p in got:
                src = self.episode_source(str(p["name"]), str(p["source_description"]))
                if src is None or not src.startswith("commit:"):
                    continue
                tail = src.removeprefix("commit:")
                if tail.isdigit():
                    commits.add(int(tail))
                files.update(by_commit.get(src, []))
            seen.windows.append(WindowAnswer(commits=sorted(commits), files=sorted(files)))

    def withdrawn(self, seen: Observed, gold: DeclaredGold) -> None:
        gone, title = gold.withdrawn, gold.titles[gold.withdrawn]
        if gone in self.docs:
            seen.withdrawn_hits.append(f"knowledge_get_nodes_by_group: its Document {title!r}")
        params = {"query": title, "group_ids": [self.group], "num_results": 50}
        for row in self.call("knowledge_find_entities", params)["nodes"]:
            if _attrs(row.get("attributes")).get("path") == gone:
                seen.withdrawn_hits.append(f"knowledge_find_entities: {row['name']!r}")
        for fact in self.call("knowledge_find_relationships", params)["facts"]:
            if title in str(fact.get("fact", "")):
                seen.withdrawn_hits.append(f"knowledge_find_relationships: {fact['fact']!r}")
        passages = self.call(
            "knowledge_search_passages", {**params, "num_results": 100, "min_score": 0.0}
        )["passages"]
        for p in passages:
            if self.episode_source(str(p["name"]), str(p["source_description"])) == gone:
                seen.withdrawn_hits.append(f"knowledge_search_passages: {p['name']!r}")
        got = self.call(
            "knowledge_get_entities_by_source",
            {"source": f"{self.label}/{gone}", "num_results": _MANY, "group_ids": [self.group]},
        )
        seen.withdrawn_hits += [
            f"knowledge_get_entities_by_source: {n['name']!r}" for n in got["nodes"]
        ]


def observe(
    client: MethodCaller,
    gold: DeclaredGold,
    *,
    group: str,
    label: str,
    shas: list[str],
    withdrawn: bool,
) -> Observed:
    """Ask the service every read the scorer needs about the tree served as ``label`` in
    ``group`` (``shas``: the scratch repository's commits, oldest first)."""
    reader = _Reader(client, group, label, shas)
    seen = Observed()
    reader.nodes(seen)
    reader.edges(seen)
    by_commit = reader.mentions(seen)
    reader.children(seen, sorted(gold.children_at(withdrawn=withdrawn)))
    reader.current(seen, gold)
    reader.by_source(seen, gold.paths(withdrawn=withdrawn))
    reader.windows(seen, gold, by_commit)
    if withdrawn:
        reader.withdrawn(seen, gold)
    return seen
