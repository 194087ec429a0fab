"""The declared-structure corpus: a seeded product backlog whose graph its files declare.

``generate_declared(seed)`` draws, from ``random.Random(seed)``, a small product: three
epics, five features and twelve stories with ``id`` and ``parent:`` (two stories straight
under an epic, two that ``supersedes:`` an earlier one), six notes citing each other and the
stories by ``[[wiki link]]``, by Markdown link and by id in prose, ``tags:`` and inline
``#tags``, and a small Python package whose modules import each other (and the standard
library). Decoys ride along: links and an id inside a fenced code block, a ``#tag`` in inline
code, an id no file declares (the phantom) and a link to a file the tree does not hold. One
story is withdrawn in a later commit.

The gold (``DeclaredGold``) is built from the generator's own records before any text is
written, never read back from the files. Paths are slugs of titles, so no path spells an id
and none is a substring of another. The same seed gives the same bytes.
"""

from __future__ import annotations

import hashlib
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Literal

import msgspec

__all__ = [
    "DECLARED_GENERATOR_VERSION",
    "DeclaredCorpus",
    "DeclaredFile",
    "DeclaredGold",
    "GoldCommit",
    "GoldEdge",
    "GoldWindow",
    "generate_declared",
]

#: Bumped whenever the output changes for an unchanged seed.
DECLARED_GENERATOR_VERSION: Final = 1

#: The relation kinds the gold holds: the declared edge vocabulary, and ``MENTIONS`` (a
#: file's chunk naming another document's id, or a commit touching a file).
GoldRelation = Literal["LINKS_TO", "PART_OF", "SUPERSEDES", "TAGGED", "IMPORTS", "MENTIONS"]
FileKind = Literal["epic", "feature", "story", "note", "code"]

_EPICS: Final = (
    "Dock reservations",
    "Member accounts",
    "Harbour operations",
    "Visitor experience",
    "Billing and invoicing",
)
_FEATURES: Final = (
    "Slip availability calendar",
    "Card payments",
    "Crew profiles",
    "Fuel dock queue",
    "Arrival checklist",
    "Winter storage",
    "Waitlist offers",
)
_STORIES: Final = (
    "Show free slips by length",
    "Hold a slip for ten minutes",
    "Pay a deposit by card",
    "Refund a cancelled stay",
    "Add a crew member",
    "Export the crew list",
    "Join the fuel queue",
    "Notify when the pump is free",
    "Tick off the arrival checklist",
    "Upload the insurance papers",
    "Book winter storage",
    "Offer a slip from the waitlist",
    "Decline a waitlist offer",
    "Split a bill between owners",
    "Email the monthly invoice",
    "Flag an overstaying boat",
)
_NOTES: Final = (
    "Tide window constraints",
    "Pricing by boat length",
    "Harbourmaster interview",
    "Payment provider comparison",
    "Accessibility review",
    "Season opening retro",
    "Night arrivals policy",
    "Data retention rules",
)
_ALIASES: Final = ("the tide memo", "the pricing memo", "the interview", "the comparison")
_TAGS: Final = ("booking", "payments", "crew", "fuel", "safety", "storage", "billing", "ops")
_ROLES: Final = ("skipper", "harbourmaster", "dock hand", "boat owner", "visitor")
_REASONS: Final = (
    "the evening tide leaves no time to queue at the office",
    "owners asked for it at the season opening",
    "the office phone is busy every Saturday",
    "it keeps the dock clear for arriving boats",
    "the insurer wants a written record",
)
_PACKAGE: Final = "harbour"
_CODE: Final = {
    "models": '"""Boats, slips and stays."""\n\nfrom dataclasses import dataclass\n\n\n'
    '@dataclass\nclass Slip:\n    """A berth at the dock."""\n\n    length_m: float\n',
    "pricing": '"""What a stay costs."""\n\nimport math\n\nfrom .models import Slip\n\n\n'
    'def nightly(slip: Slip) -> int:\n    """The nightly rate, by length."""\n'
    "    return math.ceil(slip.length_m * 3)\n",
    "booking": '"""Holding and paying for a slip."""\n\nfrom harbour import pricing\n\n'
    "from .models import Slip\n\n\ndef quote(slip: Slip, nights: int) -> int:\n"
    '    """The price of a stay."""\n    return pricing.nightly(slip) * nights\n',
    "api": '"""The web entry points."""\n\nimport json\n\nimport harbour.booking\n\n\n'
    'def handle(body: str) -> str:\n    """Answer a quote request."""\n'
    "    ask = json.loads(body)\n"
    "    return json.dumps(harbour.booking.quote(ask['slip'], ask['nights']))\n",
}
#: (importer, imported) among the modules of ``_CODE``; ``math``, ``json`` and
#: ``dataclasses`` are the standard library and resolve to nothing.
_IMPORTS: Final = (
    ("pricing", "models"),
    ("booking", "pricing"),
    ("booking", "models"),
    ("api", "booking"),
)
#: The tag written only inside inline code (a decoy: never a tag).
DECOY_TAG: Final = "#draft"


class DeclaredFile(msgspec.Struct, frozen=True, kw_only=True):
    """One file of the corpus, as written."""

    path: str
    kind: FileKind
    title: str
    doc_id: str | None = None
    text: str


class GoldEdge(msgspec.Struct, frozen=True, kw_only=True, order=True):
    """An edge the files declare: ``source`` and ``target`` are tree-relative paths (a tag's
    name ``#topic`` for ``TAGGED``; ``commit:<n>`` for the n-th commit's ``MENTIONS``)."""

    relation: GoldRelation
    source: str
    target: str


class GoldCommit(msgspec.Struct, frozen=True, kw_only=True):
    """One dated commit of the scratch repository: the files it writes or removes."""

    date: str
    message: str
    files: list[str]
    removes: bool = False


class GoldWindow(msgspec.Struct, frozen=True, kw_only=True):
    """A "what changed between these times" question: the commits in it (by index)."""

    start: str
    end: str
    commits: list[int]


class DeclaredGold(msgspec.Struct, frozen=True, kw_only=True):
    """What the files declare, from the generator's records."""

    #: Every declared edge of the full tree (before the withdrawal), commits' MENTIONS too.
    edges: list[GoldEdge]
    #: Parent path → its children's paths (``PART_OF``), before the withdrawal.
    children: dict[str, list[str]]
    #: (successor path, superseded path).
    supersessions: list[tuple[str, str]]
    #: Declared ids by path.
    ids: dict[str, str]
    titles: dict[str, str]
    #: The id no file declares, written in prose.
    phantom_id: str
    #: The path a link names that the tree does not hold.
    missing_target: str
    #: Edges the decoys would make if code were read as prose: none may exist.
    decoys: list[GoldEdge]
    decoy_tag: str
    #: The story withdrawn by the last commit.
    withdrawn: str
    commits: list[GoldCommit]
    windows: list[GoldWindow]

    def paths(self, *, withdrawn: bool) -> list[str]:
        """The tree's paths: before the withdrawal, or after it."""
        return sorted(p for p in self.titles if not (withdrawn and p == self.withdrawn))

    def edges_at(self, *, withdrawn: bool) -> list[GoldEdge]:
        """The declared edges of the tree before the withdrawal, or after it (an edge from or
        to the withdrawn file goes; a commit's MENTIONS of it goes; the withdrawal commit's
        own MENTIONS are of nothing)."""
        if not withdrawn:
            return list(self.edges)
        return [e for e in self.edges if self.withdrawn not in (e.source, e.target)]

    def changed_in(self, window: GoldWindow, *, withdrawn: bool) -> tuple[list[int], list[str]]:
        """A window's answer before or after the withdrawal: the commits made by then, and
        the files they touched that the tree holds then."""
        commits = [i for i in window.commits if withdrawn or not self.commits[i].removes]
        held = set(self.paths(withdrawn=withdrawn))
        files = {f for i in commits for f in self.commits[i].files if f in held}
        return commits, sorted(files)

    def children_at(self, *, withdrawn: bool) -> dict[str, list[str]]:
        """Parent path → children, before or after the withdrawal."""
        return {
            parent: [c for c in kids if not (withdrawn and c == self.withdrawn)]
            for parent, kids in self.children.items()
        }


class DeclaredCorpus(msgspec.Struct, frozen=True, kw_only=True):
    """A seeded corpus: its files, in commit order, and its gold."""

    seed: int
    version: int
    files: list[DeclaredFile]
    gold: DeclaredGold

    @property
    def digest(self) -> str:
        """SHA-256 of the canonical gold and file bytes: names this corpus in a report."""
        raw = msgspec.json.encode([self.version, self.gold, self.files], order="deterministic")
        return hashlib.sha256(raw).hexdigest()

    def write(self, root: Path, *, only: list[str] | None = None) -> None:
        """Write the files (or those named in ``only``) under ``root``, creating folders."""
        for f in self.files:
            if only is not None and f.path not in only:
                continue
            target = root / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.text.encode("utf-8"))


def _slug(title: str) -> str:
    return "-".join(w.lower() for w in title.replace("'", "").split())


class _Doc:
    """A document being drawn: its records, before text."""

    def __init__(self, kind: FileKind, path: str, title: str, doc_id: str | None) -> None:
        self.kind: FileKind = kind
        self.path = path
        self.title = title
        self.doc_id = doc_id
        self.parent: _Doc | None = None
        self.parent_form = "id"
        self.supersedes: _Doc | None = None
        self.tags: list[str] = []
        self.inline_tags: list[str] = []
        #: (target, form): form ``wiki``, ``wiki-alias``, ``wiki-heading`` or ``markdown``.
        self.links: list[tuple[_Doc, str]] = []
        self.mentions: list[_Doc] = []
        self.alias: str | None = None
        self.sentence = ""


def _rel(source: str, target: str) -> str:
    """``target`` relative to the folder of ``source`` (both tree-relative)."""
    up = source.count("/")
    return "../" * up + target


def _link_text(doc: _Doc, target: _Doc, form: str) -> str:
    if form == "markdown":
        return f"[{target.title.lower()}]({_rel(doc.path, target.path)})"
    if form == "wiki-alias":
        return f"[[{target.alias}|{target.title.lower()}]]"
    if form == "wiki-heading":
        return f"[[{target.title}#Context]]"
    return f"[[{target.title}]]"


def _parent_value(doc: _Doc) -> str:
    parent = doc.parent
    assert parent is not None
    if doc.parent_form == "wiki":
        return f'"[[{parent.title}]]"'
    if doc.parent_form == "path":
        return parent.path
    assert parent.doc_id is not None
    return parent.doc_id


def _front_matter(doc: _Doc, status: str) -> str:
    lines = ["---"]
    if doc.doc_id is not None:
        lines += [f"id: {doc.doc_id}", f"title: {doc.title}"]
    if doc.alias is not None:
        lines.append(f"aliases: [{doc.alias}]")
    if doc.parent is not None:
        lines.append(f"parent: {_parent_value(doc)}")
    if doc.supersedes is not None:
        assert doc.supersedes.doc_id is not None
        lines.append(f"supersedes: {doc.supersedes.doc_id}")
    if doc.tags:
        lines.append(f"tags: [{', '.join(doc.tags)}]")
    lines += [f"status: {status}", "---", ""]
    return "\n".join(lines)


def _body(doc: _Doc, decoy: str) -> str:
    parts = [f"# {doc.title}", "", doc.sentence]
    for target, form in doc.links:
        parts += ["", f"Background: {_link_text(doc, target, form)}."]
    for target in doc.mentions:
        assert target.doc_id is not None
        parts += ["", f"See {target.doc_id} for the scope this depends on."]
    if doc.inline_tags:
        parts += ["", "Filed under " + " ".join(f"#{t}" for t in doc.inline_tags) + "."]
    if doc.kind == "note":
        parts += ["", "## Context", "", "Written after the harbour walk-through."]
    if decoy:
        parts += ["", decoy]
    return "\n".join(parts) + "\n"


def generate_declared(seed: int) -> DeclaredCorpus:
    """The corpus of ``seed`` (same seed, same bytes)."""
    rng = random.Random(seed)
    world = _Drawn(rng)
    decoy = _Decoy(rng, world)
    files = _files(rng, world, decoy)
    all_paths = [x.path for x in files]
    assert not any(a != b and a in b for a in all_paths for b in all_paths), "a path in a path"
    edges, children = _edges(world)
    commits = _commits(rng, files, world.withdrawn, edges)
    windows = _windows(rng, commits)
    docs = world.docs
    return DeclaredCorpus(
        seed=seed,
        version=DECLARED_GENERATOR_VERSION,
        files=files,
        gold=DeclaredGold(
            edges=sorted(edges),
            children={p: sorted(c) for p, c in sorted(children.items())},
            supersessions=[(d.path, d.supersedes.path) for d in world.stories if d.supersedes],
            ids={d.path: d.doc_id for d in docs if d.doc_id is not None},
            titles={x.path: x.title for x in files},
            phantom_id=decoy.phantom,
            missing_target=decoy.missing,
            decoys=decoy.gold(),
            decoy_tag=DECOY_TAG,
            withdrawn=world.withdrawn.path,
            commits=commits,
            windows=windows,
        ),
    )


class _Drawn:
    """The documents of one seed and how they point at each other (the seeded draws, in the
    generator's fixed order)."""

    def __init__(self, rng: random.Random) -> None:
        self.epics = [
            _Doc("epic", f"epics/{_slug(t)}.md", t, f"EPIC-{i + 1}")
            for i, t in enumerate(rng.sample(_EPICS, 3))
        ]
        self.features = [
            _Doc("feature", f"features/{_slug(t)}.md", t, f"FEAT-{i + 1}")
            for i, t in enumerate(rng.sample(_FEATURES, 5))
        ]
        self.stories = [
            _Doc("story", f"stories/{_slug(t)}.md", t, f"STORY-{i + 1:03d}")
            for i, t in enumerate(rng.sample(_STORIES, 12))
        ]
        self.notes = [_Doc("note", f"notes/{_slug(t)}.md", t, None) for t in rng.sample(_NOTES, 6)]
        self.code = [
            _Doc("code", f"{_PACKAGE}/{name}.py", name, None)
            for name in rng.sample(sorted(_CODE), len(_CODE))
        ]
        self.withdrawn = self.stories[8]
        self._hierarchy()
        self._texts(rng)
        self._notes(rng)
        # The withdrawn story is linked to and mentioned from elsewhere: both must go with it.
        notes, withdrawn = self.notes, self.withdrawn
        if withdrawn not in [t for n in notes for t, _ in n.links]:
            notes[1].links.append((withdrawn, "markdown"))
        if withdrawn not in [t for n in notes for t in n.mentions]:
            notes[2].mentions.append(withdrawn)

    @property
    def docs(self) -> list[_Doc]:
        """Every document but the code, in the order they are written."""
        return [*self.epics, *self.features, *self.stories, *self.notes]

    def _hierarchy(self) -> None:
        epics, features, stories = self.epics, self.features, self.stories
        # Every epic has a feature; two stories hang straight under an epic.
        for i, f in enumerate(features):
            f.parent = epics[i % 3]
            f.parent_form = ("id", "wiki", "path", "id", "id")[i]
        for i, s in enumerate(stories):
            s.parent = epics[i % 3] if i in (2, 7) else features[i % 5]
            s.parent_form = "wiki" if i == 5 else "id"
        # Two later stories supersede earlier ones (same parent: the same work, redone).
        for new, old in ((10, 3), (11, 6)):
            stories[new].supersedes = stories[old]
            stories[new].parent = stories[old].parent

    def _texts(self, rng: random.Random) -> None:
        notes = self.notes
        notes[0].alias = rng.choice(_ALIASES)
        for d in [*self.epics, *self.features, *self.stories]:
            d.tags = sorted(rng.sample(_TAGS, 1 if d.kind != "story" else 2))
        for i, s in enumerate(self.stories):
            role, reason = rng.choice(_ROLES), rng.choice(_REASONS)
            s.sentence = f"As a {role} I want to {s.title.lower()}, because {reason}."
            s.links.append((notes[i % 6], "markdown" if i % 2 else "wiki"))
        for f in self.features:
            f.sentence = f"Everything a {rng.choice(_ROLES)} needs for {f.title.lower()}."
            f.links.append((notes[rng.randrange(6)], "wiki"))
        for e in self.epics:
            e.sentence = f"The {e.title.lower()} work of this season."

    def _notes(self, rng: random.Random) -> None:
        notes, stories = self.notes, self.stories
        forms = ("wiki", "wiki-alias", "wiki-heading", "markdown", "wiki", "markdown")
        for i, n in enumerate(notes):
            n.sentence = f"What we learned about {n.title.lower()}."
            other = notes[(i + 1) % 6] if i != 5 else notes[0]
            form = forms[i]
            if form == "wiki-alias" and other.alias is None:
                other = notes[0]
            n.links.append((other, form))
            n.links.append((stories[(2 * i + 1) % 12], "markdown"))
            n.mentions = [stories[(2 * i + 4) % 12], self.features[i % 5]]
            n.inline_tags = [rng.choice(_TAGS)]


class _Decoy:
    """The decoy note's paragraph: an id no document has, a link to a missing file, a tag in
    code, and links and a mention inside a fenced block; none of them is an edge."""

    def __init__(self, rng: random.Random, world: _Drawn) -> None:
        self.phantom = f"STORY-{rng.randrange(900, 1000)}"
        note = self.note = world.notes[3]
        linked = {t.path for t, _ in note.links} | {t.path for t in note.mentions}
        self.fenced_note = next(n for n in world.notes if n is not note and n.path not in linked)
        self.fenced_story = next(
            s for s in world.stories if s.path not in linked and s is not world.withdrawn
        )
        self.missing = f"specs/{_slug(rng.choice(_STORIES))}-old.md"
        assert self.fenced_story.doc_id is not None
        self.text = "\n".join(
            [
                f"The old ticket {self.phantom} was never written up, and "
                f"[the first spec]({_rel(note.path, self.missing)}) is gone.",
                f"Drafts carry `{DECOY_TAG}` until review.",
                "",
                "```markdown",
                f"[[{self.fenced_note.title}]] and "
                f"[a story]({_rel(note.path, self.fenced_story.path)})",
                f"see {self.fenced_story.doc_id}",
                "```",
            ]
        )

    def gold(self) -> list[GoldEdge]:
        """The edges the decoy paragraph seems to state and does not."""
        note, story = self.note.path, self.fenced_story.path
        return sorted(
            [
                GoldEdge(relation="LINKS_TO", source=note, target=self.fenced_note.path),
                GoldEdge(relation="LINKS_TO", source=note, target=story),
                GoldEdge(relation="MENTIONS", source=note, target=story),
                GoldEdge(relation="TAGGED", source=note, target=DECOY_TAG),
            ]
        )


def _files(rng: random.Random, world: _Drawn, decoy: _Decoy) -> list[DeclaredFile]:
    """Every file's text: front matter and body, then the code modules."""
    statuses = ("active", "ready", "draft", "done")
    files = [
        DeclaredFile(
            path=d.path,
            kind=d.kind,
            title=d.title,
            doc_id=d.doc_id,
            text=_front_matter(d, rng.choice(statuses))
            + _body(d, decoy.text if d is decoy.note else ""),
        )
        for d in world.docs
    ]
    files += [
        DeclaredFile(path=d.path, kind="code", title=d.title, text=_CODE[d.title])
        for d in world.code
    ]
    return files


def _edges(world: _Drawn) -> tuple[set[GoldEdge], dict[str, list[str]]]:
    """Every edge the files declare, and each parent's children."""
    edges: set[GoldEdge] = set()
    children: dict[str, list[str]] = {}
    for d in world.docs:
        if d.parent is not None:
            edges.add(GoldEdge(relation="PART_OF", source=d.path, target=d.parent.path))
            children.setdefault(d.parent.path, []).append(d.path)
        if d.supersedes is not None:
            edges.add(GoldEdge(relation="SUPERSEDES", source=d.path, target=d.supersedes.path))
        for tag in [*d.tags, *d.inline_tags]:
            edges.add(GoldEdge(relation="TAGGED", source=d.path, target=f"#{tag}"))
        for target, _ in d.links:
            edges.add(GoldEdge(relation="LINKS_TO", source=d.path, target=target.path))
        for target in d.mentions:
            edges.add(GoldEdge(relation="MENTIONS", source=d.path, target=target.path))
    by_module = {d.title: d.path for d in world.code}
    for src, dst in _IMPORTS:
        edges.add(GoldEdge(relation="IMPORTS", source=by_module[src], target=by_module[dst]))
    return edges, children


def _commits(
    rng: random.Random, files: list[DeclaredFile], withdrawn: _Doc, edges: set[GoldEdge]
) -> list[GoldCommit]:
    """One dated commit per file, a day apart (each one's MENTIONS edge added to ``edges``),
    then the withdrawal."""
    start = datetime(2024, 1, 8, 9, 0, tzinfo=UTC) + timedelta(days=rng.randrange(0, 200))
    commits: list[GoldCommit] = []
    for i, written in enumerate(files):
        when = start + timedelta(days=i, minutes=rng.randrange(0, 480))
        commits.append(
            GoldCommit(date=_iso(when), message=f"Add {written.title}", files=[written.path])
        )
        edges.add(GoldEdge(relation="MENTIONS", source=f"commit:{i}", target=written.path))
    end = start + timedelta(days=len(files) + 3)
    commits.append(
        GoldCommit(
            date=_iso(end),
            message=f"Withdraw {withdrawn.title}",
            files=[withdrawn.path],
            removes=True,
        )
    )
    return commits


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _day(text: str) -> datetime:
    return datetime.strptime(text[:10], "%Y-%m-%d").replace(tzinfo=UTC)


def _windows(rng: random.Random, commits: list[GoldCommit]) -> list[GoldWindow]:
    """Three windows on whole days: an early stretch, a seeded middle one, and the last week
    (which holds the withdrawal: a commit whose file the tree no longer holds)."""
    days = [_day(c.date) for c in commits]
    mid = rng.randrange(5, len(commits) - 8)
    spans = [
        (days[0], days[3]),
        (days[mid], days[mid + rng.randrange(2, 5)]),
        (days[-1] - timedelta(days=7), days[-1] + timedelta(days=1)),
    ]
    out: list[GoldWindow] = []
    for lo, hi in spans:
        end = hi - timedelta(seconds=1)
        inside = [i for i, d in enumerate(commits) if lo <= _parse(d.date) <= end]
        out.append(GoldWindow(start=_iso(lo), end=_iso(end), commits=inside))
    return out


def _parse(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
