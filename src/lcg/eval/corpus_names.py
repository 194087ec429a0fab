"""The name pools the seeded corpus (``lcg.eval.corpus``) draws its world from.

Fictional given names, family names, organisation name parts, projects and places; changing
any of them changes every corpus (bump ``GENERATOR_VERSION``).
"""

from __future__ import annotations

from typing import Final

__all__ = ["FAMILY", "GIVEN", "ORG_FIRST", "ORG_SECOND", "PLACES", "PROJECTS"]

GIVEN: Final = (
    "Ilse",
    "Tomas",
    "Maren",
    "Osric",
    "Petra",
    "Dagny",
    "Lucan",
    "Wren",
    "Anouk",
    "Caspian",
    "Elodie",
    "Fenwick",
    "Greer",
    "Halvard",
    "Isolde",
    "Jory",
    "Kestrin",
    "Liesel",
    "Mirela",
    "Nils",
    "Orla",
    "Piet",
    "Quillon",
    "Rosalind",
    "Soren",
    "Talia",
    "Ulric",
    "Vesna",
)
FAMILY: Final = (
    "Varga",
    "Brandt",
    "Okafor",
    "Lindqvist",
    "Marchetti",
    "Oyelaran",
    "Haldane",
    "Strand",
    "Quennell",
    "Ashdown",
    "Belcourt",
    "Corvin",
    "Draycott",
    "Everleigh",
    "Falkner",
    "Gorringe",
    "Hollis",
    "Ingersoll",
    "Jessup",
    "Kavanagh",
    "Lowther",
    "Merriman",
    "Northcott",
    "Ormsby",
    "Pellow",
    "Radcliffe",
)
ORG_FIRST: Final = (
    "Harrow",
    "Quillmere",
    "Tessaly",
    "Brackwater",
    "Oakhollow",
    "Silvane",
    "Marrowgate",
    "Fernleigh",
    "Coldharbour",
    "Wintermoot",
)
ORG_SECOND: Final = ("Foundry", "Collective", "Instruments", "Trust", "Cartography", "Works")
PROJECTS: Final = (
    "Kestrel",
    "Basalt",
    "Lantern",
    "Meridian",
    "Juniper",
    "Halcyon",
    "Tidewater",
    "Cobalt",
    "Sparrowhawk",
    "Orrery",
    "Quarry",
    "Vireo",
)
PLACES: Final = (
    "Velmora",
    "Ostrend",
    "Carrow Bay",
    "Lindenfall",
    "Port Aubrey",
    "Greywick",
    "Sallowmere",
    "Thornbury Cross",
)
