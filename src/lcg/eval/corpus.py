"""The seeded corpus: a fictional world, its documents, its ontology and its gold.

``generate(seed, size)`` draws a world (people, organisations, projects, places) and a set
of facts between them from ``random.Random(seed)``, then writes documents that state those
facts as exact sentences. The gold (``lcg.eval.gold``) is the generator's own data, built
before any prose. What every corpus holds:

* three kinds of document: notes (Markdown), messages (chat text) and JSON records;
* aliases: records write people as ``Surname, Given`` and organisations in capitals, so one
  entity is written two ways across documents;
* one supersession: a later dated document says a project's lead stepped down and names
  the successor (the earlier fact ends on that date);
* one withdrawal: a document ingested, then deleted by source before anything is read;
* decoys, about one per three facts: sentences shaped like facts that state none;
* a phantom: a person of the world whom no document names.

The same seed and size give the same bytes (``Corpus.write`` is byte-identical per seed).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Literal

import msgspec

from lcg import timestamps
from lcg.eval.corpus_names import FAMILY, GIVEN, ORG_FIRST, ORG_SECOND, PLACES, PROJECTS
from lcg.eval.gold import (
    DocKind,
    Gold,
    GoldDecoy,
    GoldDocument,
    GoldEntity,
    GoldFact,
    GoldMention,
    gold_digest,
)

__all__ = [
    "GENERATOR_VERSION",
    "Corpus",
    "CorpusDocument",
    "Size",
    "generate",
    "ontology_yaml",
]

#: Bumped whenever the generator's output changes for an unchanged seed.
GENERATOR_VERSION: Final = 1

Size = Literal["small", "full"]

_RELATIONS: Final[dict[str, tuple[str, str, str]]] = {
    # name: (source type, target type, description)
    "WORKS_FOR": ("Person", "Organization", "a person is employed by an organisation"),
    "LEADS": ("Person", "Project", "a person is the lead of a project"),
    "FUNDS": ("Organization", "Project", "an organisation pays for a project"),
    "HEADQUARTERED_IN": ("Organization", "Place", "an organisation's head office is in a place"),
    "BASED_IN": ("Project", "Place", "a project's team works from a place"),
    "MENTORS": ("Person", "Person", "one person mentors another"),
}
_ENTITY_TYPES: Final[dict[str, str]] = {
    "Person": "A named individual.",
    "Organization": "A company, trust or other body people work for.",
    "Project": "A named piece of work with a lead.",
    "Place": "A town or district.",
}
_TEMPLATES: Final[dict[str, tuple[str, ...]]] = {
    "WORKS_FOR": ("{s} works for {t}.", "{s} is employed by {t}."),
    "LEADS": ("{s} leads {t}.", "{s} is the lead on {t}."),
    "FUNDS": ("{s} funds {t}.", "{s} pays for the work on {t}."),
    "HEADQUARTERED_IN": ("{s} is headquartered in {t}.", "{s} has its head office in {t}."),
    "BASED_IN": ("{s} is run out of {t}.", "The team behind {s} is based in {t}."),
    "MENTORS": ("{s} mentors {t}.", "{s} is a mentor to {t}."),
}
_DECOY_TEMPLATES: Final[dict[str, tuple[str, ...]]] = {
    "WORKS_FOR": ("It is still open whether {s} will ever join {t}.",),
    "LEADS": ("Could {s} take on {t} next year? Nobody has decided.",),
    "FUNDS": ("We weighed the idea of {s} paying for {t}, but nothing was agreed.",),
    "HEADQUARTERED_IN": ("One option on the table is for {s} to open an office in {t}.",),
    "BASED_IN": ("Someone asked whether {s} might move to {t}; no answer yet.",),
}
_FILLER: Final = (
    "The minutes were circulated afterwards.",
    "Action items from last time were reviewed.",
    "The room booking ran over by ten minutes.",
    "Slides are in the shared folder.",
    "The next check-in is in two weeks.",
    "Coffee was, as ever, a topic of debate.",
    "Attendance was good despite the weather.",
    "A few questions were parked for later.",
)
_TITLES: Final = (
    "Weekly sync",
    "Planning notes",
    "Field visit",
    "Steering group",
    "Hallway notes",
    "Quarterly review",
    "Retrospective",
    "Budget round",
)
_BASE_DATE: Final = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class CorpusDocument(msgspec.Struct, frozen=True, kw_only=True):
    """One generated document: where it is written and its exact text."""

    doc_id: str
    path: str
    kind: DocKind
    date: str
    text: str


class Corpus(msgspec.Struct, frozen=True, kw_only=True):
    """A generated corpus: its documents, its ontology and its gold."""

    seed: int
    size: Size
    documents: list[CorpusDocument]
    ontology: str
    gold: Gold

    @property
    def digest(self) -> str:
        """The gold digest (``gold_digest(self.gold)``)."""
        return gold_digest(self.gold)

    def document(self, doc_id: str) -> CorpusDocument:
        """The document called ``doc_id``."""
        for d in self.documents:
            if d.doc_id == doc_id:
                return d
        raise KeyError(doc_id)

    def write(self, root: Path) -> list[Path]:
        """Write the documents, ``ontology.yaml`` and ``gold.json`` under ``root``."""
        written: list[Path] = []
        for doc in self.documents:
            path = root / doc.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(doc.text.encode("utf-8"))
            written.append(path)
        (root / "ontology.yaml").write_bytes(self.ontology.encode("utf-8"))
        gold = msgspec.json.format(msgspec.json.encode(self.gold), indent=2) + b"\n"
        (root / "gold.json").write_bytes(gold)
        written += [root / "ontology.yaml", root / "gold.json"]
        return written


def ontology_yaml() -> str:
    """The ontology the corpus declares (open mode; its four entity and six relation types)."""
    lines = ["mode: open", "entity_types:"]
    for name, desc in _ENTITY_TYPES.items():
        lines += [f"  - name: {name}", f"    description: {desc}"]
    lines.append("relation_types:")
    for name, (src, tgt, desc) in _RELATIONS.items():
        lines += [
            f"  - name: {name}",
            f"    description: {desc}",
            f"    source_type: {src}",
            f"    target_type: {tgt}",
        ]
    return "\n".join(lines) + "\n"


def _iso(when: datetime) -> str:
    return timestamps.render_seconds_z(when)


class _World:
    """The drawn world and the facts being planted (mutable while generating)."""

    def __init__(self, rng: random.Random, size: Size) -> None:
        self.rng = rng
        n_people, n_orgs, n_projects, n_places = (5, 2, 2, 2) if size == "small" else (14, 5, 6, 4)
        given = rng.sample(GIVEN, n_people + 1)
        family = rng.sample(FAMILY, n_people + 1)
        firsts = rng.sample(ORG_FIRST, n_orgs)
        self.people = [
            GoldEntity(
                key=f"person:{i}",
                name=f"{given[i]} {family[i]}",
                entity_type="Person",
                aliases=[f"{family[i]}, {given[i]}"],
            )
            for i in range(n_people)
        ]
        # The phantom: drawn like everyone else, written into no document.
        self.phantom = f"{given[n_people]} {family[n_people]}"
        self.orgs = []
        for i in range(n_orgs):
            name = f"{firsts[i]} {rng.choice(ORG_SECOND)}"
            self.orgs.append(
                GoldEntity(
                    key=f"org:{i}", name=name, entity_type="Organization", aliases=[name.upper()]
                )
            )
        self.projects = [
            GoldEntity(key=f"project:{i}", name=f"Project {p}", entity_type="Project")
            for i, p in enumerate(rng.sample(PROJECTS, n_projects))
        ]
        self.places = [
            GoldEntity(key=f"place:{i}", name=p, entity_type="Place")
            for i, p in enumerate(rng.sample(PLACES, n_places))
        ]
        self.entities = {e.key: e for e in [*self.people, *self.orgs, *self.projects, *self.places]}
        self.pairs: list[tuple[str, str, str]] = []

    def plan_facts(self) -> list[tuple[str, str, str]]:
        """(relation, source key, target key) of every regular fact, in a seeded order."""
        rng = self.rng
        out: list[tuple[str, str, str]] = []
        for p in self.people:
            out.append(("WORKS_FOR", p.key, rng.choice(self.orgs).key))
        leads = rng.sample(self.people, len(self.projects))
        for person, proj in zip(leads, self.projects, strict=True):
            out.append(("LEADS", person.key, proj.key))
            out.append(("FUNDS", rng.choice(self.orgs).key, proj.key))
            out.append(("BASED_IN", proj.key, rng.choice(self.places).key))
        for org in self.orgs:
            out.append(("HEADQUARTERED_IN", org.key, rng.choice(self.places).key))
        mentor, mentee = rng.sample(self.people, 2)
        out.append(("MENTORS", mentor.key, mentee.key))
        rng.shuffle(out)
        return out

    def decoy_pair(self, relation: str, taken: set[tuple[str, str, str]]) -> tuple[str, str]:
        """Endpoints for a decoy of ``relation`` that no planted fact joins."""
        by_type = {
            "Person": self.people,
            "Organization": self.orgs,
            "Project": self.projects,
            "Place": self.places,
        }
        src_t, tgt_t, _ = _RELATIONS[relation]
        for _ in range(200):
            s = self.rng.choice(by_type[src_t]).key
            t = self.rng.choice(by_type[tgt_t]).key
            if s != t and (relation, s, t) not in taken:
                return s, t
        raise RuntimeError("no free decoy pair")  # pragma: no cover - the pools are large


def _surface(world: _World, key: str, kind: DocKind) -> str:
    """How a document of ``kind`` writes entity ``key`` (records use the alias form)."""
    ent = world.entities[key]
    if kind == "record" and ent.aliases:
        return ent.aliases[0]
    return ent.name


def _render(
    kind: DocKind,
    doc_id: str,
    date: str,
    title: str,
    statements: list[tuple[str, str, str, str]],
    filler: list[str],
) -> str:
    """The text of one document; ``statements`` are (kind, sentence, source, target)."""
    sentences = [s for _k, s, _a, _b in statements]
    if kind == "note":
        body = [f"# {title}", "", f"Date: {date[:10]}", ""]
        mixed = [*filler[:1], *sentences, *filler[1:]]
        body.append(" ".join(mixed))
        return "\n".join(body) + "\n"
    if kind == "message":
        lines = [f"[{date[:10]} #{title.lower().replace(' ', '-')}]"]
        lines += [f"- {s}" for s in [*sentences, *filler[:1]]]
        return "\n".join(lines) + "\n"
    entries = [
        {"subject": a, "object": b, "statement": s}
        for k, s, a, b in statements
        if k in ("fact", "ending")
    ]
    remarks = [s for k, s, _a, _b in statements if k == "decoy"]
    record = {"record": doc_id, "date": date[:10], "register": title, "entries": entries}
    if remarks:
        record["remarks"] = remarks
    return msgspec.json.format(msgspec.json.encode(record), indent=2).decode() + "\n"


def generate(seed: int, size: Size = "full") -> Corpus:
    """The corpus of ``seed`` at ``size`` (``small`` ≈ 12 documents, ``full`` ≈ 50)."""
    rng = random.Random(f"lcg-eval:{seed}:{size}")
    world = _World(rng, size)
    writer = _Writer(rng, world, _plan(rng, world, size))
    for i in range(writer.plan.n_docs):
        writer.document(i)
    gold = Gold(
        seed=seed,
        size=size,
        generator_version=GENERATOR_VERSION,
        entities=list(world.entities.values()),
        facts=writer.gold_facts,
        decoys=writer.gold_decoys,
        documents=writer.gold_docs,
        phantom=world.phantom,
    )
    return Corpus(
        seed=seed, size=size, documents=writer.documents, ontology=ontology_yaml(), gold=gold
    )


#: A planted fact or decoy: (relation, source key, target key).
_Triple = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class _Plan:
    """Which document states what: kinds, dates, facts, decoys, the two special documents."""

    n_docs: int
    #: The withdrawn document (in the middle) and the superseding one (the last, dated after
    #: every other document).
    withdrawn_idx: int
    last_idx: int
    doc_kind: dict[int, DocKind]
    dates: dict[int, str]
    #: The superseded LEADS fact (stated before the last document) and its successor.
    superseded: _Triple
    successor: _Triple
    facts_per_doc: dict[int, list[_Triple]]
    decoys_per_doc: dict[int, list[_Triple]]


def _plan(rng: random.Random, world: _World, size: Size) -> _Plan:
    """The plan of the corpus (the seeded draws in the generator's fixed order)."""
    planned = world.plan_facts()
    n_docs = 12 if size == "small" else 50
    withdrawn_idx = n_docs // 2
    last_idx = n_docs - 1
    regular = [i for i in range(n_docs) if i not in (withdrawn_idx, last_idx)]
    kinds: list[DocKind] = ["note", "message", "record"]
    offset = rng.randrange(3)
    doc_kind: dict[int, DocKind] = {i: kinds[(i + offset) % 3] for i in range(n_docs)}
    doc_kind[withdrawn_idx] = "note"
    doc_kind[last_idx] = "note"
    # The superseded fact is a LEADS fact; it must be stated before the last document.
    superseded = next(f for f in planned if f[0] == "LEADS")
    facts_per_doc: dict[int, list[_Triple]] = {i: [] for i in range(n_docs)}
    for n, f in enumerate(planned):
        facts_per_doc[regular[n % len(regular)]].append(f)
    taken = set(planned)
    # The withdrawn document's own fact: a second mentee of the planted mentor, stated nowhere
    # else (the live mentoring fact stays as the answer beside it).
    mentor_fact = next(f for f in planned if f[0] == "MENTORS")
    others = [p.key for p in world.people if p.key not in (mentor_fact[1], mentor_fact[2])]
    withdrawn_fact = ("MENTORS", mentor_fact[1], rng.choice(others))
    taken.add(withdrawn_fact)
    facts_per_doc[withdrawn_idx].append(withdrawn_fact)
    # The successor: another person takes over the superseded project.
    successor_person = rng.choice([p.key for p in world.people if p.key != superseded[1]])
    successor = ("LEADS", successor_person, superseded[2])
    taken.add(successor)
    # Decoys: one per three planted facts, spread over the regular documents.
    n_decoys = max(1, round((len(planned) + 2) / 3))
    decoy_rel = list(_DECOY_TEMPLATES)
    decoys_per_doc: dict[int, list[_Triple]] = {i: [] for i in range(n_docs)}
    for n in range(n_decoys):
        rel = decoy_rel[rng.randrange(len(decoy_rel))]
        s, t = world.decoy_pair(rel, taken)
        taken.add((rel, s, t))
        decoys_per_doc[regular[(n * 7 + 3) % len(regular)]].append((rel, s, t))
    return _Plan(
        n_docs=n_docs,
        withdrawn_idx=withdrawn_idx,
        last_idx=last_idx,
        doc_kind=doc_kind,
        dates={i: _iso(_BASE_DATE + timedelta(days=3 * i, hours=i % 5)) for i in range(n_docs)},
        superseded=superseded,
        successor=successor,
        facts_per_doc=facts_per_doc,
        decoys_per_doc=decoys_per_doc,
    )


@dataclass
class _Page:
    """What one document states, as it is written: statements and the gold keys they carry."""

    kind: DocKind
    doc_id: str
    #: (kind, sentence, source surface, target surface) of each statement.
    statements: list[tuple[str, str, str, str]] = field(default_factory=list)
    fact_keys: list[str] = field(default_factory=list)
    decoy_keys: list[str] = field(default_factory=list)
    ending_keys: list[str] = field(default_factory=list)
    mention_keys: list[str] = field(default_factory=list)


class _Writer:
    """Writes the planned documents in order, and the gold of each as it goes."""

    def __init__(self, rng: random.Random, world: _World, plan: _Plan) -> None:
        self.rng, self.world, self.plan = rng, world, plan
        self.gold_facts: list[GoldFact] = []
        self.gold_decoys: list[GoldDecoy] = []
        self.gold_docs: list[GoldDocument] = []
        self.documents: list[CorpusDocument] = []
        self.superseded_key = ""

    def document(self, i: int) -> None:
        """Write document ``i``: its facts, the supersession (last), its decoys, its text."""
        plan, rng = self.plan, self.rng
        kind = plan.doc_kind[i]
        page = _Page(kind=kind, doc_id=f"d{i:02d}")
        title = rng.choice(_TITLES)
        ext = {"note": "md", "message": "txt", "record": "json"}[kind]
        folder = {"note": "notes", "message": "messages", "record": "records"}[kind]
        path = f"{folder}/{page.doc_id}-{title.lower().replace(' ', '-')}.{ext}"
        if i == plan.last_idx:
            self._supersession(page, plan.dates[i])
        else:
            self._facts(page, plan.facts_per_doc[i])
        self._decoys(page, plan.decoys_per_doc[i])
        # Statements and decoys interleave in a seeded order so no layout is fixed.
        order = list(range(len(page.statements)))
        rng.shuffle(order)
        statements = [page.statements[k] for k in order]
        filler = rng.sample(_FILLER, 2)
        text = _render(kind, page.doc_id, plan.dates[i], title, statements, filler)
        mentions = [
            GoldMention(entity=k, surface=_surface(self.world, k, kind))
            for k in dict.fromkeys(page.mention_keys)
        ]
        self.gold_docs.append(
            GoldDocument(
                doc_id=page.doc_id,
                path=path,
                kind=kind,
                date=plan.dates[i],
                mentions=mentions,
                facts=page.fact_keys,
                decoys=page.decoy_keys,
                endings=page.ending_keys,
                withdrawn=i == plan.withdrawn_idx,
            )
        )
        self.documents.append(
            CorpusDocument(doc_id=page.doc_id, path=path, kind=kind, date=plan.dates[i], text=text)
        )

    def _facts(self, page: _Page, facts: list[_Triple]) -> None:
        world, kind = self.world, page.kind
        for rel, s, t in facts:
            key = f"f{len(self.gold_facts):03d}"
            template = self.rng.choice(_TEMPLATES[rel])
            sentence = template.format(s=_surface(world, s, kind), t=_surface(world, t, kind))
            self.gold_facts.append(
                GoldFact(
                    key=key, source=s, target=t, relation=rel, sentence=sentence, doc=page.doc_id
                )
            )
            if (rel, s, t) == self.plan.superseded:
                self.superseded_key = key
            page.statements.append(
                ("fact", sentence, _surface(world, s, kind), _surface(world, t, kind))
            )
            page.fact_keys.append(key)
            page.mention_keys += [s, t]

    def _supersession(self, page: _Page, when: str) -> None:
        """The last document: the superseded lead steps down, the successor takes over."""
        superseded, successor = self.plan.superseded, self.plan.successor
        old_lead = self.world.entities[superseded[1]].name
        proj = self.world.entities[superseded[2]].name
        new_lead = self.world.entities[successor[1]].name
        ending = f"{old_lead} stepped down as lead of {proj} on {when[:10]}."
        succ_sentence = f"{new_lead} took over as lead of {proj} on {when[:10]}."
        succ_key = f"f{len(self.gold_facts):03d}"
        self.gold_facts.append(
            GoldFact(
                key=succ_key,
                source=successor[1],
                target=successor[2],
                relation="LEADS",
                sentence=succ_sentence,
                doc=page.doc_id,
            )
        )
        idx = next(n for n, f in enumerate(self.gold_facts) if f.key == self.superseded_key)
        self.gold_facts[idx] = msgspec.structs.replace(
            self.gold_facts[idx],
            ended_at=when,
            superseded_by=succ_key,
            ending_doc=page.doc_id,
            ending_sentence=ending,
        )
        page.statements.append(("ending", ending, old_lead, proj))
        page.statements.append(("fact", succ_sentence, new_lead, proj))
        page.fact_keys.append(succ_key)
        page.ending_keys.append(self.superseded_key)
        page.mention_keys += [superseded[1], superseded[2], successor[1]]

    def _decoys(self, page: _Page, decoys: list[_Triple]) -> None:
        world, kind = self.world, page.kind
        for rel, s, t in decoys:
            key = f"x{len(self.gold_decoys):03d}"
            sentence = self.rng.choice(_DECOY_TEMPLATES[rel]).format(
                s=_surface(world, s, kind), t=_surface(world, t, kind)
            )
            self.gold_decoys.append(
                GoldDecoy(
                    key=key, doc=page.doc_id, sentence=sentence, source=s, target=t, relation=rel
                )
            )
            page.statements.append(("decoy", sentence, "", ""))
            page.decoy_keys.append(key)
            page.mention_keys += [s, t]
