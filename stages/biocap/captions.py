"""Text for the specimens: taxonomic names (four text types), a per-taxon "wiki" entry, and captions.

Captions are written from a trait record through format examples (the paper's taxon-tailored
format examples, here fixed templates). The faithful caption's traits are those measured on the
image; the hallucinated caption's are the taxon's wiki traits with invented instance traits; the
shuffled caption's are another image's. No caption names the background.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from stages.biocap.specimens import SIZES, Taxon

TEXT_TYPES = ("scientific", "common", "taxonomy", "mixed")  # the label text types mixed per batch (BioCLIP)
MARKINGS = {"plain": "no markings", "striped": "dark stripes across the back", "spotted": "dark round spots"}
POSTURES = {"horizontal": "lying level", "vertical": "standing upright", "diagonal": "tilted at an angle",
            None: "curled into a ball"}
TRAIT_KEYS = ("shape", "colour", "pattern", "size", "posture", "position")
TRAIN_FORMATS = (
    "A {size} {colour} beetle with a {shape} body and {markings}, {posture}, on the {position} of the photo.",
    "Specimen photograph: {shape}, {colour} body showing {markings}; a {size} individual {posture} "
    "toward the {position}.",
    "This {size} insect has a {colour} {shape} shell with {markings}. It is {posture} near the {position} side.",
)
HELDOUT_FORMAT = ("Field record, {position} of frame: {size}-sized {colour} beetle, {shape} outline, "
                  "markings: {markings}; posture: {posture}.")


def taxon_text(taxon: Taxon, kind: str) -> str:
    """One of the four label text types of a taxon (scientific, common, taxonomic string, or both)."""
    if kind == "scientific":
        return taxon.scientific
    if kind == "common":
        return taxon.common
    if kind == "taxonomy":
        return taxon.taxonomy
    if kind == "mixed":
        return f"a photo of {taxon.taxonomy}, the {taxon.common}"
    raise ValueError(f"unknown text type {kind!r}; expected one of {TEXT_TYPES}")


def wiki_entry(taxon: Taxon) -> str:
    """The taxon's "Wikipedia" description of its visual traits (the source of hallucinated captions)."""
    usual = "no markings" if taxon.pattern == "plain" else f"usually {MARKINGS[taxon.pattern]}"
    return (f"The {taxon.common} ({taxon.scientific}) is a beetle of the family {taxon.family}. "
            f"Adults have a {taxon.shape} {taxon.colour} body with {usual}; individuals vary in size.")


def wiki_traits(taxon: Taxon) -> dict[str, str]:
    """The diagnostic traits a wiki entry states: shape, colour, usual markings."""
    return {"shape": taxon.shape, "colour": taxon.colour, "pattern": taxon.pattern}


def write_caption(traits: Mapping[str, str | None], template: str) -> str:
    """A caption that states exactly the traits of ``traits`` through one format example."""
    missing = set(TRAIT_KEYS) - set(traits)
    if missing:
        raise KeyError(f"caption traits missing {sorted(missing)}")
    posture = traits["posture"] if isinstance(traits["posture"], str) else None  # a round body has none
    return template.format(size=traits["size"], colour=traits["colour"], shape=traits["shape"],
                           markings=MARKINGS[str(traits["pattern"])], posture=POSTURES[posture],
                           position=traits["position"])


def hallucinated_traits(taxon: Taxon, rng: np.random.Generator) -> dict[str, str | None]:
    """The taxon's wiki traits with instance traits made up (not read from the image)."""
    posture = None if taxon.shape == "round" else str(rng.choice(["horizontal", "vertical", "diagonal"]))
    return {**wiki_traits(taxon), "size": str(rng.choice(list(SIZES))), "posture": posture,
            "position": str(rng.choice(["left", "centre", "right"]))}


def shuffled_traits(measured: list[dict[str, str | None]], rng: np.random.Generator) -> list[dict[str, str | None]]:
    """Each trait taken from another image: every trait column permuted independently across images.

    Posture is drawn with the shape (a round body has none), so the two move together.
    """
    n = len(measured)
    out = [dict(m) for m in measured]
    for keys in (("shape", "posture"), ("colour",), ("pattern",), ("size",), ("position",)):
        perm = rng.permutation(n)
        for i, j in enumerate(perm):
            for k in keys:
                out[i][k] = measured[int(j)][k]
    return out

