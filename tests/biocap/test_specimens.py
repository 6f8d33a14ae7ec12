"""Trait measurement on hand-made images, and the caption writer states only measured traits."""

from __future__ import annotations

import numpy as np
import pytest

from stages.biocap.captions import (
    HELDOUT_FORMAT,
    TRAIN_FORMATS,
    hallucinated_traits,
    shuffled_traits,
    taxon_text,
    write_caption,
)
from stages.biocap.specimens import (
    BACKGROUNDS,
    COLOURS,
    HABITAT,
    Drawing,
    Taxon,
    build_taxonomy,
    hue_name,
    measure_traits,
    render,
    sample_drawing,
)


def hand_made(body: str, pattern: str, size: int = 112) -> np.ndarray:
    """A grey image with a pure red axis-aligned rectangle or disc drawn by hand, optional black bars/dots."""
    img = np.full((size, size, 3), 150, dtype=np.uint8)
    if body == "long_horizontal":  # 60 x 20 box, centroid at x = 34: long, horizontal, left third
        img[50:70, 4:64] = (220, 20, 20)
        if pattern == "striped":
            for x in (18, 32, 46):
                img[50:70, x:x + 4] = 0
    elif body == "disc_right":  # disc of radius 12 centred at x = 90: round, small, right
        yy, xx = np.mgrid[0:size, 0:size]
        img[(yy - 56) ** 2 + (xx - 90) ** 2 <= 144] = (30, 60, 230)
        if pattern == "spotted":
            for cy, cx in ((50, 85), (50, 95), (56, 90), (62, 85), (62, 95)):
                img[cy - 1:cy + 2, cx - 1:cx + 2] = 0
    return img


def test_measures_a_hand_drawn_striped_long_red_body():
    t = measure_traits(hand_made("long_horizontal", "striped"))
    assert t["shape"] == "long" and t["colour"] == "red" and t["pattern"] == "striped"
    assert t["posture"] == "horizontal" and t["position"] == "left"
    # a 60 x 20 box: variance 60²/12 along x, so the measured length is 4·sqrt(300) ≈ 69: large
    assert t["size"] == "large"


def test_measures_a_hand_drawn_spotted_small_blue_disc():
    t = measure_traits(hand_made("disc_right", "spotted"))
    assert t == {"shape": "round", "colour": "blue", "pattern": "spotted", "size": "small", "posture": None,
                 "position": "right"}
    assert measure_traits(hand_made("disc_right", "plain"))["pattern"] == "plain"


def test_an_empty_image_is_refused():
    with pytest.raises(ValueError, match="no specimen"):
        measure_traits(np.full((32, 32, 3), 100, dtype=np.uint8))


def test_hue_names_wrap_around_the_colour_circle():
    assert hue_name(355.0) == "red" and hue_name(5.0) == "red" and hue_name(215.0) == "blue"


def test_drawn_specimens_are_measured_as_drawn():
    rng = np.random.default_rng(0)
    taxa = build_taxonomy(6, rng)
    for i in range(60):
        taxon = taxa[i % len(taxa)]
        d = sample_drawing(taxon, False, 0.9, 0.85, rng)
        t = measure_traits(render(d, 112, rng))
        assert (t["shape"], t["colour"]) == (taxon.shape, taxon.colour)
        assert t["pattern"] == (taxon.pattern if d.shows_pattern else "plain")


def test_the_shifted_background_is_never_the_habitat():
    rng = np.random.default_rng(1)
    taxon = Taxon(0, "Ovatus", "red", "spotted")
    assert all(sample_drawing(taxon, True, 1.0, 0.85, rng).background != HABITAT["red"] for _ in range(50))
    assert all(sample_drawing(taxon, False, 1.0, 0.85, rng).background == HABITAT["red"] for _ in range(50))


def test_background_does_not_change_the_measured_traits():
    rng = np.random.default_rng(2)
    base = sample_drawing(Taxon(0, "Longinus", "green", "striped"), False, 1.0, 1.0, rng)
    measured = {measure_traits(render(Drawing(**{**base.__dict__, "background": b}), 112,
                                      np.random.default_rng(3))).__repr__() for b in BACKGROUNDS}
    assert len(measured) == 1


TRAITS = {"shape": "oval", "colour": "purple", "pattern": "striped", "size": "medium", "posture": "diagonal",
          "position": "centre"}


@pytest.mark.parametrize("template", [*TRAIN_FORMATS, HELDOUT_FORMAT])
def test_captions_state_every_measured_trait_and_never_the_background(template):
    text = write_caption(TRAITS, template)
    for word in ("oval", "purple", "stripes", "medium", "angle" if "posture:" not in template else "tilted", "centre"):
        assert word in text
    banned = {*BACKGROUNDS, "background", "habitat"}
    assert not any(b in text.lower() for b in banned)
    # no other colour, shape, size or position word sneaks in
    others = (set(COLOURS) - {"purple"}) | {"round", "long", "small", "large", "left", "right", "spots"}
    assert not any(f" {w}" in text for w in others)


def test_a_changed_trait_changes_the_caption():
    base = write_caption(TRAITS, TRAIN_FORMATS[0])
    for key, value in (("colour", "blue"), ("pattern", "plain"), ("size", "large"), ("position", "left")):
        assert write_caption({**TRAITS, key: value}, TRAIN_FORMATS[0]) != base


def test_a_round_body_has_no_posture_in_its_caption():
    assert "curled into a ball" in write_caption({**TRAITS, "shape": "round", "posture": None}, TRAIN_FORMATS[0])


def test_hallucinated_captions_take_the_taxon_traits_and_shuffled_ones_keep_each_column():
    rng = np.random.default_rng(0)
    taxon = Taxon(3, "Globulus", "yellow", "spotted")
    h = hallucinated_traits(taxon, rng)
    assert (h["shape"], h["colour"], h["pattern"], h["posture"]) == ("round", "yellow", "spotted", None)
    measured = [{**TRAITS, "colour": c, "size": s} for c, s in zip(COLOURS, ("small", "medium", "large", "small",
                                                                               "large"), strict=True)]
    shuffled = shuffled_traits(measured, rng)
    for key in ("colour", "size", "pattern"):
        assert sorted(m[key] for m in shuffled) == sorted(m[key] for m in measured)


def test_label_text_types():
    t = Taxon(0, "Ovatus", "red", "spotted")
    assert taxon_text(t, "scientific") == "Ovatus rubromaculatus"
    assert taxon_text(t, "common") == "red spotted shield beetle"
    assert taxon_text(t, "taxonomy").endswith("Coleoptera Ovatidae Ovatus rubromaculatus")
    assert taxon_text(t, "mixed").startswith("a photo of Animalia")
    with pytest.raises(ValueError, match="unknown text type"):
        taxon_text(t, "nickname")
