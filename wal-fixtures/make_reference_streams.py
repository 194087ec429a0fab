"""Write streams in the reference's format: ``python wal-fixtures/make_reference_streams.py``.

We hold none of the reference's own stream files, so these are written from its documented
templates (lcg-api §5.2 ingest and single-statement writes, §5.5 the five-key line, §5.6 the
dump's ``MERGE`` form, §10 the older families): one directory per line family under
``reference/``, each a reference layout (a workspace's ``.lcg/wal/``, a multi-group WAL root
``wal/<group>/``, or a flat pre-multi-group ``wal/*.jsonl``) and ``expected.json``: the
entities, edges and episodes an import must produce per group, and the lines it must report
as not mapped (by reason). The expected state is tracked here, beside each line written, from
the template's documented meaning; it does not come from replaying the lines. Output is
byte-for-byte reproducible; a test regenerates it and compares with the committed files.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "reference"

# ---- the reference's templates (lcg-api §5.2) --------------------------------------------

E_CREATE = (
    "CREATE (:Entity {uuid: $uuid, name: $name, group_id: $group_id, labels: $labels, "
    "created_at: $created_at, name_embedding: $name_embedding, summary: $summary, "
    "attributes: $attributes})"
)
E_SUMMARY = "MATCH (e:Entity {uuid: $uuid}) SET e.summary = $summary"
RN_CREATE = (
    "CREATE (:RelatesToNode_ {uuid: $uuid, name: $name, group_id: $group_id, "
    "created_at: $created_at, fact: $fact, fact_embedding: $fact_embedding, "
    "valid_at: $valid_at, invalid_at: $invalid_at, attributes: $attributes, "
    "relation_type: $relation_type})"
)
DIRECT = (
    "MATCH (src:Entity {uuid: $src}), (dst:Entity {uuid: $dst}) CREATE (src)-[:RELATES_TO "
    "{uuid: $uuid, name: $name, group_id: $group_id, fact: $fact, valid_at: $valid_at, "
    "invalid_at: $invalid_at, attributes: $attributes}]->(dst)"
)
HOPS = (
    "MATCH (src:Entity {uuid: $src}), (rn:RelatesToNode_ {uuid: $rn}), (dst:Entity "
    "{uuid: $dst}) CREATE (src)-[:RELATES_TO]->(rn), (rn)-[:RELATES_TO]->(dst)"
)
EP_CREATE = (
    "CREATE (:Episodic {uuid: $uuid, name: $name, group_id: $group_id, created_at: "
    "$created_at, source: $source, source_description: $source_description, content: "
    "$content, content_embedding: $content_embedding, valid_at: $valid_at, entity_edges: "
    "$entity_edges})"
)
MENTION = (
    "MATCH (ep:Episodic {uuid: $ep}), (en:Entity {uuid: $en}) "
    "CREATE (ep)-[:MENTIONS {group_id: $group_id}]->(en)"
)
SET_LABELS = "MATCH (e:Entity {uuid: $uuid}) SET e.labels = $labels"
SET_E_ATTRS = "MATCH (e:Entity {uuid: $uuid}) SET e.attributes = $attributes"
SET_RN_ATTRS = "MATCH (rn:RelatesToNode_ {uuid: $uuid}) SET rn.attributes = $attributes"
SET_INVALID = "MATCH (rn:RelatesToNode_ {uuid: $uuid}) SET rn.invalid_at = $invalid_at"
SET_RT = "MATCH (n:RelatesToNode_ {uuid: $uuid}) SET n.relation_type = $rt"
SET_CREATED = "MATCH (e:Entity {uuid: $uuid}) SET e.created_at = timestamp($new_created_at)"
EP_DELETE = "MATCH (ep:Episodic {uuid: $uuid}) DETACH DELETE ep"

VEC = [0.25, -0.5, 0.125]


def _rfc(text: str) -> str:
    """A reference time as lcg records it (``…T…​.ffffffZ``): tests compare with this."""
    from datetime import UTC, datetime

    value = datetime.fromisoformat(text.replace(" ", "T").replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Stream:
    """One reference group stream being written, and the state its lines lead to."""

    def __init__(self, group_id: str, db: str = "") -> None:
        self.group_id = group_id
        self.db = db
        self.files: list[tuple[str, list[str]]] = []
        self.seq = 0
        self.entities: dict[str, dict[str, Any]] = {}
        self.edges: dict[str, dict[str, Any]] = {}
        self.episodes: dict[str, dict[str, Any]] = {}
        self.unmapped: dict[str, int] = {}

    def file(self, name: str) -> None:
        """Start a new segment file named ``name`` (the reference's names ignore seq order)."""
        self.files.append((name, []))

    def raw(self, text: str) -> None:
        """Append a line as it is (a damaged one); it takes no seq."""
        self.files[-1][1].append(text)

    def line(self, cypher: str, params: dict[str, Any]) -> None:
        """Append one five-key line (lcg-api §5.5: seq, ts, db, cypher, params)."""
        ts = f"2024-05-01T12:{self.seq // 60:02d}:{self.seq % 60:02d}.000000+00:00"
        record = {"seq": self.seq, "ts": ts, "db": self.db, "cypher": cypher, "params": params}
        self.files[-1][1].append(json.dumps(record, separators=(",", ":"), ensure_ascii=False))
        self.seq += 1

    # -- native ingest (§5.2) and the state it leaves --------------------------------------

    def entity(self, uuid: str, name: str, created: str, summary: str = "",
               labels: list[str] | None = None, attributes: str = "{}") -> None:
        labels = labels or ["Entity"]
        self.line(E_CREATE, {
            "uuid": uuid, "name": name, "group_id": self.group_id, "labels": labels,
            "created_at": created, "name_embedding": VEC, "summary": summary,
            "attributes": attributes,
        })
        self.entities[uuid] = {
            "uuid": uuid, "name": name, "labels": labels, "summary": summary,
            "attributes": attributes, "created_at": _rfc(created),
        }

    def edge(self, uuid: str, src: str, dst: str, fact: str, created: str, *,
             relation_type: str = "", valid: str | None = None, invalid: str | None = None,
             attributes: str = "{}") -> None:
        name = f"{self.entities[src]['name']} \u2192 {self.entities[dst]['name']}"
        valid = valid or created
        common = {"uuid": uuid, "name": name, "group_id": self.group_id, "fact": fact,
                  "valid_at": valid, "invalid_at": invalid, "attributes": attributes}
        self.line(RN_CREATE, {**common, "created_at": created, "fact_embedding": VEC,
                              "relation_type": relation_type})
        self.line(DIRECT, {**common, "src": src, "dst": dst})
        self.line(HOPS, {"src": src, "rn": uuid, "dst": dst})
        self.edges[uuid] = {
            "uuid": uuid, "name": name, "source_uuid": src, "target_uuid": dst, "fact": fact,
            "relation_type": relation_type or None, "valid_at": _rfc(valid),
            "invalid_at": _rfc(invalid) if invalid else None, "expired_at": None,
            "episodes": [], "attributes": attributes, "created_at": _rfc(created),
        }

    def episode(self, uuid: str, name: str, content: str, when: str, mentions: list[str],
                source: str = "text", description: str = "") -> None:
        self.line(EP_CREATE, {
            "uuid": uuid, "name": name, "group_id": self.group_id, "created_at": when,
            "source": source, "source_description": description, "content": content,
            "content_embedding": VEC, "valid_at": when, "entity_edges": mentions,
        })
        for en in mentions:
            self.line(MENTION, {"ep": uuid, "en": en, "group_id": self.group_id})
        self.episodes[uuid] = {
            "uuid": uuid, "name": name, "source": source, "source_description": description,
            "content": content, "created_at": _rfc(when), "valid_at": _rfc(when),
            "mentions": sorted(mentions),
        }

    def expected(self) -> dict[str, Any]:
        """The group's state after import, rows sorted by uuid."""
        return {
            "entities": [self.entities[k] for k in sorted(self.entities)],
            "edges": [self.edges[k] for k in sorted(self.edges)],
            "episodes": [self.episodes[k] for k in sorted(self.episodes)],
        }


def _write(root: Path, layout: str, streams: list[Stream]) -> None:
    """Write ``streams`` into ``root`` in ``layout``: ``workspace`` (``.lcg/wal/<g>/``),
    ``multi`` (``wal/<g>/``) or ``flat`` (one group, ``wal/*.jsonl``, no generation file)."""
    from urllib.parse import quote

    for n, stream in enumerate(streams):
        if layout == "flat":
            gdir = root / "wal"
        else:
            base = root / (".lcg/wal" if layout == "workspace" else "wal")
            plain = all(c.isalnum() or c in "-_" for c in stream.group_id)
            gdir = base / (stream.group_id if plain else quote(stream.group_id, safe=""))
        gdir.mkdir(parents=True, exist_ok=True)
        if layout != "flat":
            gen = {"generation": f"{n + 1:032x}"}
            (gdir / ".wal-generation.json").write_text(json.dumps(gen))
        for name, lines in stream.files:
            (gdir / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    expected = {
        "layout": layout,
        "groups": {s.group_id: s.expected() for s in streams},
        "unmapped": {s.group_id: s.unmapped for s in streams if s.unmapped},
    }
    text = json.dumps(expected, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    (root / "expected.json").write_text(text, encoding="utf-8")


T0, T1, T2 = "2024-05-01T09:00:00.000000+00:00", "2024-05-02T09:00:00.000000+00:00", \
    "2024-05-03T09:00:00.000000+00:00"


def native_multi_group(root: Path) -> None:
    """§5.2 ingest chunks and single-statement writes, two groups, a workspace layout; the
    second file's name sorts before the first (files are ordered by first seq)."""
    s = Stream("liminis")
    s.file("20240501_090000_bbbbbb_0000.jsonl")
    s.entity("e-ada", "Ada Lovelace", T0, "A mathematician.")
    s.entity("e-bab", "Charles Babbage", T0, "An inventor.")
    s.entity("e-eng", "Analytical Engine", T0, "A machine.")
    s.edge("r-ada-eng", "e-ada", "e-eng", "Ada wrote programs for the Engine.", T0,
           relation_type="PROGRAMMED")
    s.edge("r-bab-eng", "e-bab", "e-eng", "Babbage designed the Engine.", T0,
           relation_type="DESIGNED")
    s.episode("ep-1", "chunk-1", "Ada programmed Babbage's Analytical Engine.", T0,
              ["e-ada", "e-bab", "e-eng"], description="notes/engine.md")
    s.file("20240430_080000_aaaaaa_0000.jsonl")  # an older-looking name, later seqs
    s.line(E_SUMMARY, {"uuid": "e-ada", "summary": "A mathematician. She wrote notes."})
    s.entities["e-ada"]["summary"] = "A mathematician. She wrote notes."
    s.entity("e-men", "Luigi Menabrea", T1, "An engineer.")
    s.edge("r-men-ada", "e-men", "e-ada", "Menabrea's paper was translated by Ada.", T1)
    s.episode("ep-2", "chunk-2", "Ada translated Menabrea's paper.", T1, ["e-ada", "e-men"],
              source="message")
    s.line(SET_LABELS, {"uuid": "e-eng", "labels": ["Entity", "Machine"]})
    s.entities["e-eng"]["labels"] = ["Entity", "Machine"]
    s.line(SET_E_ATTRS, {"uuid": "e-eng", "attributes": '{"built":false}'})
    s.entities["e-eng"]["attributes"] = '{"built":false}'
    s.line(SET_RN_ATTRS, {"uuid": "r-bab-eng", "attributes": '{"source":"letters"}'})
    s.edges["r-bab-eng"]["attributes"] = '{"source":"letters"}'
    s.line(SET_INVALID, {"uuid": "r-bab-eng", "invalid_at": T2})
    s.edges["r-bab-eng"]["invalid_at"] = _rfc(T2)
    s.line(SET_RT, {"uuid": "r-men-ada", "rt": "TRANSLATED_BY"})
    s.edges["r-men-ada"]["relation_type"] = "TRANSLATED_BY"
    s.line(SET_CREATED, {"uuid": "e-men", "new_created_at": T0})
    s.entities["e-men"]["created_at"] = _rfc(T0)
    s.episode("ep-3", "chunk-3", "A chunk later deleted.", T2, ["e-ada"])
    s.line(EP_DELETE, {"uuid": "ep-3"})
    del s.episodes["ep-3"]

    t = Stream("team b")
    t.file("20240502_100000_cccccc_0000.jsonl")
    t.entity("t-kay", "Alan Kay", T1, "Smalltalk's designer.")
    t.entity("t-st", "Smalltalk", T1, "A language.", labels=["Entity", "Language"])
    t.edge("t-r1", "t-kay", "t-st", "Alan Kay designed Smalltalk.", T1, relation_type="DESIGNED")
    t.episode("t-ep", "chunk", "Alan Kay designed Smalltalk.", T1, ["t-kay", "t-st"])
    _write(root, "workspace", [s, t])


def dump_format(root: Path) -> None:
    """§5.6: a dump's ``MERGE … SET`` nodes with ``timestamp($x)`` and the optional ``CASE``
    form, then the two-hop ``MERGE`` and ``MENTIONS`` with a uuid; RFC 3339 µs ``Z`` times."""
    s = Stream("liminis")
    s.file("20240601_000000_dddddd_0000.jsonl")
    z0, z1 = "2024-04-01T08:30:00.250000Z", "2024-04-02T08:30:00.000000Z"
    node = ("MERGE (n:Entity {uuid: $uuid}) SET n.name = $name, n.group_id = $group_id, "
            "n.labels = $labels, n.created_at = timestamp($created_at), "
            "n.name_embedding = $name_embedding, n.summary = $summary, "
            "n.attributes = $attributes")
    for uuid, name in (("d-a", "Grace Hopper"), ("d-b", "COBOL")):
        s.line(node, {"uuid": uuid, "name": name, "group_id": "liminis", "labels": ["Entity"],
                      "created_at": z0, "name_embedding": VEC, "summary": f"{name}.",
                      "attributes": "{}"})
        s.entities[uuid] = {"uuid": uuid, "name": name, "labels": ["Entity"],
                            "summary": f"{name}.", "attributes": "{}", "created_at": _rfc(z0)}
    opt = "CASE WHEN ${0} IS NULL THEN NULL ELSE timestamp(${0}) END"
    s.line("MERGE (n:Episodic {uuid: $uuid}) SET n.name = $name, n.group_id = $group_id, "
           "n.created_at = timestamp($created_at), n.source = $source, "
           "n.source_description = $source_description, n.content = $content, "
           "n.content_embedding = $content_embedding, n.valid_at = " + opt.format("valid_at")
           + ", n.entity_edges = $entity_edges",
           {"uuid": "d-ep", "name": "chunk", "group_id": "liminis", "created_at": z0,
            "source": "json", "source_description": "d.json", "content": '{"who":"Grace"}',
            "content_embedding": VEC, "valid_at": None, "entity_edges": ["d-a", "d-b"]})
    s.episodes["d-ep"] = {"uuid": "d-ep", "name": "chunk", "source": "json",
                          "source_description": "d.json", "content": '{"who":"Grace"}',
                          "created_at": _rfc(z0), "valid_at": None, "mentions": ["d-a", "d-b"]}
    s.line("MERGE (n:RelatesToNode_ {uuid: $uuid}) SET n.name = $name, n.group_id = $group_id, "
           "n.created_at = timestamp($created_at), n.fact = $fact, n.fact_embedding = "
           "$fact_embedding, n.episodes = $episodes, n.expired_at = " + opt.format("expired_at")
           + ", n.valid_at = " + opt.format("valid_at") + ", n.invalid_at = "
           + opt.format("invalid_at") + ", n.attributes = $attributes, n.relation_type = "
           "$relation_type",
           {"uuid": "d-r", "name": "CREATED", "group_id": "liminis", "created_at": z0,
            "fact": "Grace Hopper created COBOL.", "fact_embedding": VEC, "episodes": ["d-ep"],
            "expired_at": None, "valid_at": z0, "invalid_at": z1, "attributes": "{}",
            "relation_type": "CREATED"})
    s.edges["d-r"] = {"uuid": "d-r", "name": "CREATED", "source_uuid": "d-a",
                      "target_uuid": "d-b", "fact": "Grace Hopper created COBOL.",
                      "relation_type": "CREATED", "valid_at": _rfc(z0), "invalid_at": _rfc(z1),
                      "expired_at": None, "episodes": ["d-ep"], "attributes": "{}",
                      "created_at": _rfc(z0)}
    s.line("MATCH (src:Entity {uuid: $src_uuid}), (rn:RelatesToNode_ {uuid: $rn_uuid}), "
           "(dst:Entity {uuid: $dst_uuid}) MERGE (src)-[:RELATES_TO]->(rn) "
           "MERGE (rn)-[:RELATES_TO]->(dst)",
           {"src_uuid": "d-a", "rn_uuid": "d-r", "dst_uuid": "d-b"})
    for n, en in enumerate(("d-a", "d-b")):
        s.line("MATCH (ep:Episodic {uuid: $ep_uuid}), (en:Entity {uuid: $en_uuid}) "
               "MERGE (ep)-[r:MENTIONS]->(en) SET r.uuid = $uuid, r.group_id = $group_id, "
               "r.created_at = timestamp($created_at)",
               {"ep_uuid": "d-ep", "en_uuid": en, "uuid": f"d-m{n}", "group_id": "liminis",
                "created_at": z0})
    _write(root, "multi", [s])


def graphiti_flat(root: Path) -> None:
    """§10 ``python_produced``: graphiti's ``MERGE … ON CREATE SET`` with ``timestamp(...)``
    and space-format times, a literal-valued ``CREATE (:RelatesToNode_ {…})``, a vector-only
    ``MATCH … SET``, ``SET n.attributes = $attrs`` (an object) and ``SET n = $props``; the flat
    pre-multi-group layout (loose files under ``wal/``, the ``liminis`` group, no generation)."""
    s = Stream("liminis", db="graphiti")
    s.file("20231101_101010_eeeeee_0000.jsonl")
    sp0, sp1 = "2023-11-01 10:00:00", "2023-11-02 11:30:00"
    merge = ("MERGE (n:Entity {uuid: $uuid}) ON CREATE SET n.name = $name, "
             "n.group_id = $group_id, n.labels = $labels, n.created_at = timestamp($created_at), "
             "n.summary = $summary, n.name_embedding = $name_embedding "
             "ON MATCH SET n.summary = $summary")
    for uuid, name in (("g-grace", "Grace Hopper"), ("g-navy", "US Navy")):
        s.line(merge, {"uuid": uuid, "name": name, "group_id": "liminis", "labels": ["Entity"],
                       "created_at": sp0, "summary": f"About {name}.", "name_embedding": VEC})
        s.entities[uuid] = {"uuid": uuid, "name": name, "labels": ["Entity"],
                            "summary": f"About {name}.", "attributes": "{}",
                            "created_at": _rfc(sp0)}
    s.line("CREATE (:RelatesToNode_ {uuid: 'g-r1', name: 'SERVED_IN', group_id: 'liminis', "
           "created_at: '2023-11-01 10:00:00', fact: 'Grace Hopper served in the US Navy.', "
           "valid_at: '2023-11-01 10:00:00', attributes: '{}'})", {})
    s.edges["g-r1"] = {"uuid": "g-r1", "name": "SERVED_IN", "source_uuid": "g-grace",
                       "target_uuid": "g-navy", "fact": "Grace Hopper served in the US Navy.",
                       "relation_type": None, "valid_at": _rfc(sp0), "invalid_at": None,
                       "expired_at": None, "episodes": [], "attributes": "{}",
                       "created_at": _rfc(sp0)}
    s.line("MATCH (a:Entity {uuid: $source_uuid}), (e:RelatesToNode_ {uuid: $edge_uuid}), "
           "(b:Entity {uuid: $target_uuid}) MERGE (a)-[:RELATES_TO]->(e) "
           "MERGE (e)-[:RELATES_TO]->(b)",
           {"source_uuid": "g-grace", "edge_uuid": "g-r1", "target_uuid": "g-navy"})
    s.file("20231102_113000_ffffff_0000.jsonl")
    s.line("MATCH (n:Entity {uuid: $uuid}) SET n.name_embedding = $name_embedding",
           {"uuid": "g-navy", "name_embedding": VEC})
    s.line("MATCH (n:Entity {uuid: $uuid}) SET n.attributes = $attrs",
           {"uuid": "g-grace", "attrs": {"rank": "rear admiral"}})
    s.entities["g-grace"]["attributes"] = '{"rank":"rear admiral"}'
    s.line("MATCH (n:Entity {uuid: $uuid}) SET n = $props",
           {"uuid": "g-navy", "props": {"summary": "A navy.", "labels": ["Entity", "Org"]}})
    s.entities["g-navy"].update(summary="A navy.", labels=["Entity", "Org"])
    s.line("MERGE (n:Episodic {uuid: $uuid}) ON CREATE SET n.name = $name, "
           "n.group_id = $group_id, n.created_at = timestamp($created_at), n.source = $source, "
           "n.source_description = $source_description, n.content = $content, "
           "n.valid_at = timestamp($valid_at), n.entity_edges = $entity_edges",
           {"uuid": "g-ep", "name": "bio", "group_id": "liminis", "created_at": sp1,
            "source": "text", "source_description": "bio.txt",
            "content": "Grace Hopper served in the US Navy.", "valid_at": sp1,
            "entity_edges": ["g-grace", "g-navy"]})
    s.episodes["g-ep"] = {"uuid": "g-ep", "name": "bio", "source": "text",
                          "source_description": "bio.txt",
                          "content": "Grace Hopper served in the US Navy.",
                          "created_at": _rfc(sp1), "valid_at": _rfc(sp1),
                          "mentions": ["g-grace", "g-navy"]}
    for n, en in enumerate(("g-grace", "g-navy")):
        s.line("MATCH (episode:Episodic {uuid: $episode_uuid}) MATCH (node:Entity {uuid: "
               "$entity_uuid}) MERGE (episode)-[r:MENTIONS {uuid: $uuid}]->(node) ON CREATE SET "
               "r.group_id = $group_id, r.created_at = timestamp($created_at)",
               {"episode_uuid": "g-ep", "entity_uuid": en, "uuid": f"g-m{n}",
                "group_id": "liminis", "created_at": sp1})
    _write(root, "flat", [s])


def falkordb_era_episodes(root: Path) -> None:
    """§10 ``falkordb_era_episodes``: ``vecf32(...)``/``VECF32(...)`` around vectors (a
    parameter and a literal), and an edge's ``episodes`` list."""
    s = Stream("liminis")
    s.file("20230801_000000_abcdef_0000.jsonl")
    for uuid, name in (("f-a", "Alan Turing"), ("f-b", "Bletchley Park")):
        s.line("CREATE (:Entity {uuid: $uuid, name: $name, group_id: $group_id, labels: $labels, "
               "created_at: $created_at, name_embedding: vecf32($name_embedding), summary: "
               "$summary, attributes: $attributes})",
               {"uuid": uuid, "name": name, "group_id": "liminis", "labels": ["Entity"],
                "created_at": T0, "name_embedding": VEC, "summary": "", "attributes": "{}"})
        s.entities[uuid] = {"uuid": uuid, "name": name, "labels": ["Entity"], "summary": "",
                            "attributes": "{}", "created_at": _rfc(T0)}
    s.line("CREATE (:RelatesToNode_ {uuid: $uuid, name: $name, group_id: $group_id, created_at: "
           "$created_at, fact: $fact, fact_embedding: VECF32($fact_embedding), episodes: "
           "$episodes, valid_at: $valid_at, invalid_at: $invalid_at, attributes: $attributes})",
           {"uuid": "f-r", "name": "WORKED_AT", "group_id": "liminis", "created_at": T0,
            "fact": "Turing worked at Bletchley Park.", "fact_embedding": VEC,
            "episodes": ["f-ep"], "valid_at": T0, "invalid_at": None, "attributes": "{}"})
    s.edges["f-r"] = {"uuid": "f-r", "name": "WORKED_AT", "source_uuid": "f-a",
                      "target_uuid": "f-b", "fact": "Turing worked at Bletchley Park.",
                      "relation_type": None, "valid_at": _rfc(T0), "invalid_at": None,
                      "expired_at": None, "episodes": ["f-ep"], "attributes": "{}",
                      "created_at": _rfc(T0)}
    s.line(HOPS, {"src": "f-a", "rn": "f-r", "dst": "f-b"})
    s.line("MATCH (n:Entity {uuid: $uuid}) SET n.name_embedding = vecf32([0.5, 0.25, 0.0])",
           {"uuid": "f-a"})
    s.episode("f-ep", "war", "Turing worked at Bletchley Park.", T0, ["f-a", "f-b"])
    _write(root, "multi", [s])


def falkordb_era_expired_at(root: Path) -> None:
    """§10 ``falkordb_era_expired_at``: an edge created with ``expired_at``, another expired
    by a later ``SET``."""
    s = Stream("liminis")
    s.file("20230802_000000_abcdef_0000.jsonl")
    s.entity("x-a", "Pluto", T0, "A dwarf planet.")
    s.entity("x-b", "Planets", T0, "The planets.")
    s.line("CREATE (:RelatesToNode_ {uuid: $uuid, name: $name, group_id: $group_id, created_at: "
           "$created_at, fact: $fact, fact_embedding: vecf32($fact_embedding), expired_at: "
           "$expired_at, valid_at: $valid_at, invalid_at: $invalid_at, attributes: $attributes})",
           {"uuid": "x-r1", "name": "MEMBER_OF", "group_id": "liminis", "created_at": T0,
            "fact": "Pluto is a planet.", "fact_embedding": VEC, "expired_at": T1,
            "valid_at": T0, "invalid_at": T1, "attributes": "{}"})
    s.line(HOPS, {"src": "x-a", "rn": "x-r1", "dst": "x-b"})
    s.edges["x-r1"] = {"uuid": "x-r1", "name": "MEMBER_OF", "source_uuid": "x-a",
                       "target_uuid": "x-b", "fact": "Pluto is a planet.",
                       "relation_type": None, "valid_at": _rfc(T0), "invalid_at": _rfc(T1),
                       "expired_at": _rfc(T1), "episodes": [], "attributes": "{}",
                       "created_at": _rfc(T0)}
    s.edge("x-r2", "x-a", "x-b", "Pluto orbits beyond the planets.", T0)
    s.line("MATCH (e:RelatesToNode_ {uuid: $uuid}) SET e.expired_at = $expired_at",
           {"uuid": "x-r2", "expired_at": T2})
    s.edges["x-r2"]["expired_at"] = _rfc(T2)
    _write(root, "multi", [s])


def timestamps_in_params(root: Path) -> None:
    """§10 ``timestamps_in_params``: RFC 3339 times with microseconds and an offset in the
    params, a non-null ``invalid_at``."""
    s = Stream("liminis")
    s.file("20240501_000000_aaaaaa_0000.jsonl")
    t0, t1 = "2024-05-01T12:00:00.123456Z", "2024-05-01T14:30:00.654321+02:00"
    s.entity("p-a", "Kepler", t0, "An astronomer.")
    s.entity("p-b", "Mars", t0, "A planet.")
    s.edge("p-r", "p-a", "p-b", "Kepler studied the orbit of Mars.", t0, valid=t0, invalid=t1,
           relation_type="STUDIED")
    s.episode("p-ep", "orbits", "Kepler studied the orbit of Mars.", t1, ["p-a", "p-b"])
    _write(root, "multi", [s])


def unmappable(root: Path) -> None:
    """Lines an import cannot map, each of a different reason, among lines it can."""
    s = Stream("liminis")
    s.file("20240501_000000_999999_0000.jsonl")
    s.entity("u-a", "Kept", T0, "An entity that imports.")
    s.raw("this is not JSON")
    s.unmapped["unparseable"] = 1
    s.raw('{"seq":99,"ts":"2024-05-01T12:00:00.000000+00:00","db":"","cypher":"CREATE (:Entity '
          '{uuid: \'u-x\'})"}')  # no params: not a five-key line
    s.unmapped["unparseable"] += 1
    s.line("MATCH (n:Entity) RETURN n.name", {})
    s.unmapped["unrecognised"] = 1
    s.line("CREATE (:Widget {uuid: $uuid})", {"uuid": "w-1"})
    s.unmapped["failed"] = 1
    s.line(HOPS, {"src": "u-a", "rn": "u-missing", "dst": "u-a"})
    s.unmapped["no_effect"] = 1
    s.line("CREATE (:Community {uuid: $uuid, name: $name, group_id: $group_id, created_at: "
           "$created_at, summary: $summary})",
           {"uuid": "c-1", "name": "cluster", "group_id": "liminis", "created_at": T0,
            "summary": "A community."})
    s.unmapped["community_row"] = 1
    _write(root, "multi", [s])


FAMILIES: list[Callable[[Path], None]] = [
    native_multi_group,
    dump_format,
    graphiti_flat,
    falkordb_era_episodes,
    falkordb_era_expired_at,
    timestamps_in_params,
    unmappable,
]


def family_names() -> list[str]:
    """The fixture directory names, one per line family."""
    return [f.__name__.replace("_", "-") for f in FAMILIES]


def generate(out: Path = OUT) -> None:
    """Write every family into ``out`` (replacing what was there)."""
    for make, name in zip(FAMILIES, family_names(), strict=True):
        target = out / name
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        make(target)


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
