"""The ontology: the entity and relation types a workspace (or one group) declares.

Where the files live and which one a group uses is ``lcg.workspace.ontology_files``
(``OntologyLoader``). A file that is empty, declares no types, or fails to parse stands for
"no ontology" (a parse error is logged; a broken group file falls back to the workspace one).

YAML shape::

    mode: open | strict                      # default open
    entity_types:   [{name, description?, parent?}]
    relation_types: [{name, description?, source_type?, target_type?, aliases?, keywords?}]

Entity names are PascalCase, relation names and aliases SCREAMING_SNAKE, keywords lowercase.
See docs/adr/0031-ontology.md for the hash and the normalisation rules.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Literal

import msgspec
import yaml

__all__ = [
    "NO_ONTOLOGY_HASH",
    "UNCLASSIFIED_ENTITY",
    "UNCLASSIFIED_RELATION",
    "EntityType",
    "Ontology",
    "OntologyHashFile",
    "OntologyMode",
    "RelationType",
    "build_ontology",
    "drift_summary",
    "hash_record",
    "load_ontology_file",
    "parse_ontology",
    "pascal_case",
    "screaming_snake",
]

_log = logging.getLogger(__name__)

OntologyMode = Literal["open", "strict"]

#: The hash reported when no ontology applies.
NO_ONTOLOGY_HASH: Final = "none"
#: The entity type given, in strict mode, to an entity whose type is not declared.
UNCLASSIFIED_ENTITY: Final = "Unclassified"
#: The relation type given, in strict mode, to an edge whose type is not declared.
UNCLASSIFIED_RELATION: Final = "UNCLASSIFIED"
#: The implicit root type; declaring it is ignored.
ROOT_TYPE: Final = "Entity"

# A word is a run of letters/digits; camel boundaries split "fooBar" and "HTTPServer".
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z0-9]+|[^\W_]+")
_SEP: Final = "\0\0"
_SEPARATORS = re.compile(r"[^0-9A-Za-z\u00C0-\uFFFF]+")


def _words(text: str) -> list[str]:
    words: list[str] = []
    for piece in _SEPARATORS.split(text):
        if piece:
            words.extend(_WORD.findall(piece))
    return words


def screaming_snake(text: str) -> str:
    """SCREAMING_SNAKE: ``"worked for"``, ``"workedFor"``, ``"worked-for"`` → ``"WORKED_FOR"``."""
    return "_".join(w.upper() for w in _words(text))


def pascal_case(text: str) -> str:
    """PascalCase: ``"software project"`` → ``"SoftwareProject"``, ``"PERSON"`` → ``"Person"``."""
    out: list[str] = []
    for word in _words(text):
        # An all-caps word (an LLM shouting "PERSON") is a word, not an acronym to keep.
        if word.isupper() and len(word) > 1:
            word = word.lower()
        out.append(word[:1].upper() + word[1:])
    return "".join(out)


class EntityType(msgspec.Struct, frozen=True, kw_only=True):
    """A declared entity type; ``parent`` is ``None`` when undeclared, cyclic or absent."""

    name: str
    description: str | None = None
    parent: str | None = None


class RelationType(msgspec.Struct, frozen=True, kw_only=True):
    """A declared relation type with its aliases (SCREAMING_SNAKE) and keywords (lowercase)."""

    name: str
    description: str | None = None
    source_type: str | None = None
    target_type: str | None = None
    aliases: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()


class Ontology(msgspec.Struct, frozen=True, kw_only=True):
    """A normalised ontology with its lookup tables; build it with ``build_ontology``."""

    mode: OntologyMode
    entity_types: tuple[EntityType, ...]
    relation_types: tuple[RelationType, ...]
    hash: str
    source: str = ""
    #: entity type → its ancestors, root first, excluding ``Entity`` and the type itself.
    ancestors: dict[str, tuple[str, ...]] = {}
    #: canonical name or alias (SCREAMING_SNAKE) → canonical relation name.
    alias_map: dict[str, str] = {}

    @property
    def strict(self) -> bool:
        """Whether undeclared types become ``Unclassified``/``UNCLASSIFIED``."""
        return self.mode == "strict"

    @property
    def entity_type_names(self) -> list[str]:
        """The declared entity type names, in declaration order."""
        return [t.name for t in self.entity_types]

    @property
    def relation_type_names(self) -> list[str]:
        """The declared relation type names, in declaration order."""
        return [t.name for t in self.relation_types]

    @property
    def has_parents(self) -> bool:
        """Whether any entity type has a (kept) parent."""
        return any(t.parent for t in self.entity_types)

    def entity_type(self, name: str) -> EntityType | None:
        """The declared entity type called ``name`` (PascalCase-normalised), or ``None``."""
        key = pascal_case(name)
        for t in self.entity_types:
            if t.name == key:
                return t
        return None

    def relation_type(self, name: str) -> RelationType | None:
        """The declared relation type called ``name`` (canonical only), or ``None``."""
        key = screaming_snake(name)
        for t in self.relation_types:
            if t.name == key:
                return t
        return None

    def labels_for(self, entity_type: str) -> list[str]:
        """Graph labels of an entity of ``entity_type``: ``["Entity", ancestors..., type]``."""
        if not entity_type or entity_type == ROOT_TYPE:
            return [ROOT_TYPE]
        return [ROOT_TYPE, *self.ancestors.get(entity_type, ()), entity_type]

    def normalize_entity_type(self, raw: str | None) -> tuple[str, str | None]:
        """``(type, original)``: PascalCase; ``""`` = untyped; strict + undeclared → Unclassified.

        ``original`` is the LLM's raw type when it was replaced, else ``None``.
        """
        value = pascal_case(raw or "")
        if not value or value == ROOT_TYPE:
            return "", None
        if self.strict and self.entity_types and value not in self.ancestors:
            return UNCLASSIFIED_ENTITY, raw
        return value, None

    def normalize_relation_type(self, raw: str | None) -> tuple[str, str | None]:
        """``(type, original)``: SCREAMING_SNAKE; strict maps aliases, else → UNCLASSIFIED.

        ``original`` is the raw type when it was replaced by ``UNCLASSIFIED``, else ``None``.
        """
        value = screaming_snake(raw or "")
        if not self.strict or not self.relation_types:
            return value, None
        canonical = self.alias_map.get(value)
        if canonical is not None:
            return canonical, None
        return UNCLASSIFIED_RELATION, raw

    def lookup_alias(self, name: str) -> str | None:
        """The canonical relation type for a canonical name or alias, else ``None``."""
        return self.alias_map.get(screaming_snake(name))

    def match_keyword(self, name: str) -> str | None:
        """The first declared relation type with a keyword inside the lowercased normalised name."""
        haystack = screaming_snake(name).lower()
        if not haystack:
            return None
        for t in self.relation_types:
            for kw in t.keywords:
                if kw and kw in haystack:
                    return t.name
        return None


def _text(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _str_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable):
        return [str(v) for v in value if v is not None]
    return [str(value)]


def _ontology_hash(
    mode: str, entities: tuple[EntityType, ...], relations: tuple[RelationType, ...]
) -> str:
    # §5.11: sorted entries joined by "\0\0"; list fields inside an entry are sorted and
    # comma-joined; parent edges are appended only when some exist.
    ent = sorted(f"{t.name}\0{t.description or ''}" for t in entities)
    rel = sorted(
        "\0".join(
            (
                t.name,
                t.source_type or "",
                t.target_type or "",
                t.description or "",
                ",".join(sorted(t.aliases)),
                ",".join(sorted(t.keywords)),
            )
        )
        for t in relations
    )
    text = f"mode:{mode}\nentity_types:{_SEP.join(ent)}\nrelation_types:{_SEP.join(rel)}"
    parents = sorted(f"{t.name}\0{t.parent}" for t in entities if t.parent)
    if parents:
        text += f"\nparent_edges:{_SEP.join(parents)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _break_parents(types: list[EntityType], source: str) -> list[EntityType]:
    """Clear undeclared and self parents, then break cycles in declaration order.

    Each cleared parent is logged as a warning (the reference's "an undeclared parent is
    cleared with a warning"; cycles "are detected and broken"), naming the type and the file.
    """
    declared = {t.name for t in types}
    where = source or "ontology"
    parent: dict[str, str | None] = {}
    for t in types:
        p = t.parent
        # ``parent: Entity`` names the implicit root: nothing is lost, so nothing is said.
        kept = p if p and p in declared and p != t.name and p != ROOT_TYPE else None
        if p and p != ROOT_TYPE and kept is None:
            why = "is the type itself" if p == t.name else "is not a declared entity type"
            _log.warning("%s: entity type %s: parent %s %s; parent cleared", where, t.name, p, why)
        parent[t.name] = kept
    for t in types:
        # Walk up from this type's parent; meeting the type again closes a cycle, which is
        # broken at the type met first in declaration order (this one).
        seen = {t.name}
        node = parent[t.name]
        while node is not None:
            if node in seen:
                _log.warning(
                    "%s: entity type %s: parent %s closes a cycle; parent cleared",
                    where,
                    t.name,
                    parent[t.name],
                )
                parent[t.name] = None
                break
            seen.add(node)
            node = parent[node]
    return [msgspec.structs.replace(t, parent=parent[t.name]) for t in types]


def build_ontology(
    mode: OntologyMode,
    entity_types: Iterable[EntityType],
    relation_types: Iterable[RelationType],
    *,
    source: str = "",
) -> Ontology | None:
    """Normalise types and build the lookup tables; ``None`` if no types are declared."""
    ents: list[EntityType] = []
    seen_e: set[str] = set()
    for t in entity_types:
        name = pascal_case(t.name)
        if not name or name == ROOT_TYPE or name in seen_e:
            continue
        seen_e.add(name)
        parent = pascal_case(t.parent) if t.parent else None
        ents.append(EntityType(name=name, description=_text(t.description), parent=parent or None))
    ents = _break_parents(ents, source)
    rels: list[RelationType] = []
    seen_r: set[str] = set()
    for r in relation_types:
        name = screaming_snake(r.name)
        if not name or name in seen_r:
            continue
        seen_r.add(name)
        aliases = tuple(
            dict.fromkeys(a for a in map(screaming_snake, r.aliases) if a and a != name)
        )
        keywords = tuple(dict.fromkeys(k for k in (k.strip().lower() for k in r.keywords) if k))
        rels.append(
            RelationType(
                name=name,
                description=_text(r.description),
                source_type=pascal_case(r.source_type) or None if r.source_type else None,
                target_type=pascal_case(r.target_type) or None if r.target_type else None,
                aliases=aliases,
                keywords=keywords,
            )
        )
    if not ents and not rels:
        return None
    by_name = {t.name: t for t in ents}
    ancestors: dict[str, tuple[str, ...]] = {}
    for t in ents:
        chain: list[str] = []
        node = t.parent
        while node is not None:
            chain.append(node)
            node = by_name[node].parent
        ancestors[t.name] = tuple(reversed(chain))
    alias_map: dict[str, str] = {r.name: r.name for r in rels}
    for r in rels:
        for a in r.aliases:
            # A canonical name is never shadowed by another type's alias; the first alias wins.
            alias_map.setdefault(a, r.name)
    frozen_e, frozen_r = tuple(ents), tuple(rels)
    return Ontology(
        mode=mode,
        entity_types=frozen_e,
        relation_types=frozen_r,
        hash=_ontology_hash(mode, frozen_e, frozen_r),
        source=source,
        ancestors=ancestors,
        alias_map=alias_map,
    )


def parse_ontology(text: str, *, source: str = "") -> Ontology | None:
    """Parse ontology YAML; ``None`` for an empty document or one without types.

    Raises ``ValueError`` (with ``yaml.YAMLError`` as cause where it is one) on bad input.
    """
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{source or 'ontology'}: invalid YAML: {exc}") from exc
    if doc is None:
        return None
    if not isinstance(doc, Mapping):
        raise ValueError(f"{source or 'ontology'}: the top level must be a mapping")
    mode_raw = str(doc.get("mode") or "open").strip().lower()
    if mode_raw not in ("open", "strict"):
        raise ValueError(f"{source or 'ontology'}: mode must be open or strict, not {mode_raw!r}")
    mode: OntologyMode = "strict" if mode_raw == "strict" else "open"
    ents: list[EntityType] = []
    for item in doc.get("entity_types") or []:
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, Mapping) or not _text(item.get("name")):
            raise ValueError(f"{source or 'ontology'}: an entity type needs a name: {item!r}")
        ents.append(
            EntityType(
                name=str(item["name"]),
                description=_text(item.get("description")),
                parent=_text(item.get("parent")),
            )
        )
    rels: list[RelationType] = []
    for item in doc.get("relation_types") or []:
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, Mapping) or not _text(item.get("name")):
            raise ValueError(f"{source or 'ontology'}: a relation type needs a name: {item!r}")
        rels.append(
            RelationType(
                name=str(item["name"]),
                description=_text(item.get("description")),
                source_type=_text(item.get("source_type")),
                target_type=_text(item.get("target_type")),
                aliases=tuple(_str_list(item.get("aliases"))),
                keywords=tuple(_str_list(item.get("keywords"))),
            )
        )
    return build_ontology(mode, ents, rels, source=source)


def load_ontology_file(path: Path) -> Ontology | None:
    """Load one ontology file; missing, empty or unparseable (logged) → ``None``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        _log.warning("ontology %s unreadable, ignored: %s", path, exc)
        return None
    try:
        return parse_ontology(text, source=str(path))
    except ValueError as exc:
        _log.warning("ontology ignored: %s", exc)
        return None


# --- the hash record (stored by workspace.ontology_files) and drift ------------------------


class OntologyHashFile(msgspec.Struct, kw_only=True):
    """``.lcg/ontology-hash.json``: the ontology of the last successful ingest or rebuild."""

    hash: str
    mode: str | None = None
    entity_types: list[str] = []
    relation_types: list[str] = []


def hash_record(onto: Ontology | None) -> OntologyHashFile:
    """What the hash file records for ``onto`` (``hash "none"`` without an ontology)."""
    if onto is None:
        return OntologyHashFile(hash=NO_ONTOLOGY_HASH)
    return OntologyHashFile(
        hash=onto.hash,
        mode=onto.mode,
        entity_types=onto.entity_type_names,
        relation_types=onto.relation_type_names,
    )


def _describe(onto: Ontology) -> str:
    return (
        f"{onto.mode}, {len(onto.entity_types)} entity types, "
        f"{len(onto.relation_types)} relation types"
    )


def _diff(label: str, old: list[str], new: list[str]) -> str | None:
    added = [n for n in new if n not in old]
    removed = [n for n in old if n not in new]
    if not added and not removed:
        return None
    return f"{label} " + " ".join([*(f"+{n}" for n in added), *(f"-{n}" for n in removed)])


def drift_summary(
    recorded: OntologyHashFile | None, current: Ontology | None, *, has_episodes: bool
) -> str | None:
    """Why the graph is out of date with the ontology, or ``None`` if it is not.

    Drift is a hash that differs from the recorded one; with no record, only a loaded
    ontology over a graph that already holds episodes is drift.
    """
    current_hash = current.hash if current is not None else NO_ONTOLOGY_HASH
    if recorded is None:
        if current is None or not has_episodes:
            return None
        return f"ontology added: {_describe(current)}"
    if recorded.hash == current_hash:
        return None
    if current is None:
        return (
            f"ontology removed (was {recorded.mode or 'open'}, {len(recorded.entity_types)} "
            f"entity types, {len(recorded.relation_types)} relation types)"
        )
    if recorded.hash == NO_ONTOLOGY_HASH:
        return f"ontology added: {_describe(current)}"
    parts: list[str] = []
    if (recorded.mode or "open") != current.mode:
        parts.append(f"mode {recorded.mode or 'open'} → {current.mode}")
    for part in (
        _diff("entity types", recorded.entity_types, current.entity_type_names),
        _diff("relation types", recorded.relation_types, current.relation_type_names),
    ):
        if part:
            parts.append(part)
    if not parts:
        parts.append("descriptions, parents, aliases or keywords changed")
    return "ontology changed: " + "; ".join(parts)
