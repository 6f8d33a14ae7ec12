"""Synthetic specimens: a small taxonomy, specimen images drawn from it, and traits measured back from pixels.

The genus sets the body shape, the species its colour and usual markings (the diagnostic traits);
size, posture, position in the frame and whether the markings show vary per individual (instance
traits). The background is the spurious cue: in training it follows the body colour (a "habitat"),
in the shifted sets it never does. Captions are written only from :func:`measure_traits`, which
reads the pixels, never from the drawing parameters.
"""

from __future__ import annotations

import colorsys
import itertools
from dataclasses import dataclass

import numpy as np
from matplotlib.colors import rgb_to_hsv
from scipy import ndimage

REFERENCE_SIZE = 112  # every length below is in pixels of a 112-px image and scales with the image size
GENERA = {  # genus -> (family, body shape, aspect ratio major/minor, common noun)
    "Globulus": ("Globulidae", "round", 1.0, "pill beetle"),
    "Ovatus": ("Ovatidae", "oval", 1.7, "shield beetle"),
    "Longinus": ("Longinidae", "long", 2.8, "stick beetle"),
}
COLOURS = {"red": 0.0, "yellow": 55.0, "green": 120.0, "blue": 220.0, "purple": 285.0}  # hue in degrees
COLOUR_LATIN = {"red": "rubro", "yellow": "flavo", "green": "viridi", "blue": "caeruleo", "purple": "purpureo"}
PATTERNS = ("plain", "striped", "spotted")
PATTERN_LATIN = {"plain": "nudus", "striped": "vittatus", "spotted": "maculatus"}
PATTERN_WORDS = {"plain": "plain", "striped": "striped", "spotted": "spotted"}
BACKGROUNDS = {"moss": (110, 125, 95), "slate": (105, 115, 132), "sand": (192, 176, 146), "bark": (122, 96, 76),
               "stone": (152, 152, 150)}
HABITAT = {"red": "moss", "yellow": "slate", "green": "sand", "blue": "bark", "purple": "stone"}
SIZES = {"small": (34, 44), "medium": (52, 62), "large": (70, 80)}  # body length ranges
SIZE_CUTS = (48.0, 66.0)  # measured length below the first is small, above the second large
MARKING_RGB = (28, 26, 24)
ORDER = "Animalia Arthropoda Insecta Coleoptera"


@dataclass(frozen=True)
class Taxon:
    """One species: its names and diagnostic traits."""

    species_id: int
    genus: str
    colour: str
    pattern: str

    @property
    def family(self) -> str:
        return GENERA[self.genus][0]

    @property
    def shape(self) -> str:
        return GENERA[self.genus][1]

    @property
    def epithet(self) -> str:
        return COLOUR_LATIN[self.colour] + PATTERN_LATIN[self.pattern]

    @property
    def scientific(self) -> str:
        return f"{self.genus} {self.epithet}"

    @property
    def common(self) -> str:
        return f"{self.colour} {PATTERN_WORDS[self.pattern]} {GENERA[self.genus][3]}"

    @property
    def taxonomy(self) -> str:
        return f"{ORDER} {self.family} {self.scientific}"


def build_taxonomy(species_per_genus: int, rng: np.random.Generator) -> list[Taxon]:
    """``species_per_genus`` distinct (colour, pattern) species in each genus, drawn at random."""
    combos = list(itertools.product(COLOURS, PATTERNS))
    taxa = []
    for genus in GENERA:
        for k in rng.choice(len(combos), size=species_per_genus, replace=False):
            colour, pattern = combos[int(k)]
            taxa.append(Taxon(len(taxa), genus, colour, pattern))
    return taxa


@dataclass(frozen=True)
class Drawing:
    """The parameters one specimen image is drawn from (kept for validation; captions never read them)."""

    taxon: Taxon
    background: str
    length: float
    angle: float
    cx: float
    cy: float
    shows_pattern: bool
    hue_jitter: float
    value_jitter: float


def sample_drawing(taxon: Taxon, shifted: bool, habitat_probability: float, pattern_probability: float,
                   rng: np.random.Generator) -> Drawing:
    """An individual of ``taxon``: background (habitat or not), size, posture, position, markings shown."""
    habitat = HABITAT[taxon.colour]
    others = [b for b in BACKGROUNDS if b != habitat]
    if shifted or rng.random() >= habitat_probability:
        background = others[int(rng.integers(len(others)))]
    else:
        background = habitat
    lo, hi = SIZES[list(SIZES)[int(rng.integers(len(SIZES)))]]
    length = float(rng.uniform(lo, hi))
    margin = length / 2 + 6
    return Drawing(taxon=taxon, background=background, length=length, angle=float(rng.uniform(0, 180)),
                   cx=float(rng.uniform(margin, REFERENCE_SIZE - margin)),
                   cy=float(rng.uniform(margin, REFERENCE_SIZE - margin)),
                   shows_pattern=taxon.pattern != "plain" and bool(rng.random() < pattern_probability),
                   hue_jitter=float(rng.uniform(-6, 6)), value_jitter=float(rng.uniform(-0.08, 0.08)))


def render(d: Drawing, size: int, rng: np.random.Generator) -> np.ndarray:
    """The specimen as a uint8 RGB image (size, size, 3): noisy background, body ellipse, dark markings."""
    s = size / REFERENCE_SIZE
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64) + 0.5
    theta = np.deg2rad(d.angle)
    # body coordinates: u along the major axis, v across it
    u = (xx - d.cx * s) * np.cos(theta) + (yy - d.cy * s) * np.sin(theta)
    v = -(xx - d.cx * s) * np.sin(theta) + (yy - d.cy * s) * np.cos(theta)
    a = d.length * s / 2
    b = a / GENERA[d.taxon.genus][2]
    body = (u / a) ** 2 + (v / b) ** 2 <= 1.0
    image = np.empty((size, size, 3), dtype=np.float64)
    image[:] = BACKGROUNDS[d.background]
    image += rng.normal(0, 5, size=(size, size, 1))
    hue = ((COLOURS[d.taxon.colour] + d.hue_jitter) % 360) / 360
    rgb = np.array(colorsys.hsv_to_rgb(hue, 0.85, 0.82 + d.value_jitter)) * 255
    image[body] = rgb + rng.normal(0, 4, size=(int(body.sum()), 3))
    if d.shows_pattern:
        marks = markings(d.taxon.pattern, u, v, a, b) & body
        image[marks] = MARKING_RGB
    return image.round().clip(0, 255).astype(np.uint8)


def markings(pattern: str, u: np.ndarray, v: np.ndarray, a: float, b: float) -> np.ndarray:
    """Three bands across the body (striped) or six spots in two rows (spotted), in body coordinates."""
    if pattern == "striped":
        return np.any([np.abs(u - c * a) <= 0.09 * a for c in (-0.5, 0.0, 0.5)], axis=0)
    if pattern == "spotted":
        r = 0.22 * b
        return np.any([(u - cu * a) ** 2 + (v - cv * b) ** 2 <= r ** 2
                       for cu in (-0.5, 0.0, 0.5) for cv in (-0.45, 0.45)], axis=0)
    return np.zeros_like(u, dtype=bool)


def hue_name(hue_degrees: float) -> str:
    """The named colour whose hue is nearest on the colour circle."""
    return min(COLOURS, key=lambda c: min(abs(hue_degrees - COLOURS[c]), 360 - abs(hue_degrees - COLOURS[c])))


def measure_traits(image: np.ndarray) -> dict[str, str | None]:
    """Shape, colour, markings, size, posture and position read from the pixels of one specimen image.

    The background is the median of the image border; the body is the largest connected region that
    differs from it (holes filled). Shape comes from the aspect ratio of the region's second moments,
    size from its length (4·sqrt of the major variance), colour from the median hue of its saturated
    pixels, markings from its dark pixels (none: plain; five or more blobs: spotted; else striped),
    posture from the major axis' angle (none for round bodies), position from the centroid's third.
    """
    size = image.shape[0]
    s = size / REFERENCE_SIZE
    x = image.astype(np.float64)
    border = np.concatenate([x[:2].reshape(-1, 3), x[-2:].reshape(-1, 3), x[:, :2].reshape(-1, 3),
                             x[:, -2:].reshape(-1, 3)])
    background = np.median(border, axis=0)
    differs = np.abs(x - background).max(axis=2) > 45
    labels, n = ndimage.label(differs)
    if n == 0:
        raise ValueError("no specimen found: no region differs from the background")
    largest = 1 + int(np.argmax(ndimage.sum(differs, labels, index=range(1, n + 1))))
    body = ndimage.binary_fill_holes(labels == largest)
    ys, xs = np.nonzero(body)
    cov = np.cov(np.stack([xs, ys]).astype(np.float64))
    evals, evecs = np.linalg.eigh(cov)
    major, minor = float(evals[1]), max(float(evals[0]), 1e-9)
    aspect = float(np.sqrt(major / minor))
    length = 4 * np.sqrt(major) / s
    shape = "round" if aspect < 1.3 else "oval" if aspect < 2.2 else "long"
    size_name = "small" if length < SIZE_CUTS[0] else "medium" if length < SIZE_CUTS[1] else "large"
    pixels = x[body] / 255.0
    hsv = rgb_to_hsv(pixels)
    coloured = hsv[(hsv[:, 1] > 0.4) & (hsv[:, 2] > 0.3)]
    if len(coloured) == 0:
        raise ValueError("no coloured body pixels")
    angles = coloured[:, 0] * 2 * np.pi
    hue = float(np.rad2deg(np.arctan2(np.sin(angles).mean(), np.cos(angles).mean())) % 360)
    dark = body & (x.max(axis=2) < 0.3 * 255)
    if dark.sum() < 0.02 * body.sum():
        pattern = "plain"
    else:
        _, n_marks = ndimage.label(dark)
        pattern = "spotted" if n_marks >= 5 else "striped"
    posture = None
    if shape != "round":
        vx, vy = evecs[:, 1]
        angle = float(np.rad2deg(np.arctan2(vy, vx)) % 180)
        off_horizontal = min(angle, 180 - angle)
        posture = "horizontal" if off_horizontal < 25 else "vertical" if off_horizontal > 65 else "diagonal"
    cx = xs.mean() / size
    position = "left" if cx < 1 / 3 else "right" if cx > 2 / 3 else "centre"
    return {"shape": shape, "colour": hue_name(hue), "pattern": pattern, "size": size_name, "posture": posture,
            "position": position}
