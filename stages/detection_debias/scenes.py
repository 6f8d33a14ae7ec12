"""Procedural detection scenes: object groups (class x size bin x position bin), the planted biases of the
training set, the balanced test distribution, the procedural renderer and the colour-coded blueprint.

A layout is a list of objects (class, box); the renderer turns a layout plus an appearance (object colour and
fill, background texture) into an image. Boxes are integer pixel boxes ``(x0, y0, x1, y1)``, x1/y1 exclusive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CLASSES = ("circle", "square", "triangle", "cross")
BACKGROUNDS = ("flat", "noise", "stripes", "checker")
FILLS = ("solid", "striped")
# hue of each palette colour (HSV); saturation and value are jittered per object
PALETTE_HUES = (0.0, 0.08, 0.16, 0.33, 0.5, 0.6, 0.75, 0.9)
# the blueprint's colour of each class (the generator's input: a colour-coded box per object)
BLUEPRINT_COLOURS = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]], dtype=np.float32)
LOW_DIVERSITY_COLOUR = (0.85, 0.12, 0.12)   # the one look of the frequent-but-low-diversity group in training
LOW_DIVERSITY_BACKGROUND = (0.5, 0.5, 0.5)


@dataclass(frozen=True)
class Bins:
    """The group bins: size bins as [min, max] box sides in pixels, and equal-width position columns."""

    image_size: int
    size_ranges: tuple[tuple[int, int], ...]
    n_position_bins: int
    position_margin: int

    @property
    def n_groups(self) -> int:
        """Classes x size bins x position bins."""
        return len(CLASSES) * len(self.size_ranges) * self.n_position_bins

    def group(self, cls: int, size_bin: int, pos_bin: int) -> int:
        """The group id of (class, size bin, position bin)."""
        return (cls * len(self.size_ranges) + size_bin) * self.n_position_bins + pos_bin

    def parts(self, group: int) -> tuple[int, int, int]:
        """(class, size bin, position bin) of a group id."""
        cls_size, pos = divmod(group, self.n_position_bins)
        cls, size = divmod(cls_size, len(self.size_ranges))
        return cls, size, pos

    def size_bin_of(self, side: float) -> int:
        """The size bin of a box side: the nearest range (edges halfway between ranges)."""
        edges = [(hi + lo) / 2 for (_, hi), (lo, _) in zip(self.size_ranges[:-1], self.size_ranges[1:], strict=True)]
        return int(np.searchsorted(edges, side))

    def pos_bin_of(self, cx: float) -> int:
        """The position bin of a box centre's x (equal-width columns)."""
        return int(min(self.n_position_bins - 1, max(0, cx * self.n_position_bins // self.image_size)))

    def group_of_box(self, cls: int, box: tuple[float, float, float, float]) -> int:
        """The group of a (possibly predicted) box: its class, its larger side's bin, its centre's column."""
        x0, y0, x1, y1 = box
        return self.group(cls, self.size_bin_of(max(x1 - x0, y1 - y0)), self.pos_bin_of((x0 + x1) / 2))

    def name(self, group: int) -> str:
        """'circle/small/p0'."""
        cls, size, pos = self.parts(group)
        return f"{CLASSES[cls]}/{SIZE_NAMES[size] if size < len(SIZE_NAMES) else size}/p{pos}"


SIZE_NAMES = ("small", "medium", "large")


@dataclass(frozen=True)
class Obj:
    """One object of a scene: class, box, colour (RGB in [0, 1]) and fill."""

    cls: int
    box: tuple[int, int, int, int]
    colour: tuple[float, float, float]
    fill: str


@dataclass(frozen=True)
class Scene:
    """A layout with its appearance: the objects, the background kind and its two colours, the render seed."""

    objects: tuple[Obj, ...]
    background: str
    bg_colours: tuple[tuple[float, float, float], tuple[float, float, float]]
    render_seed: int


def hsv_to_rgb(h: float, s: float, v: float) -> tuple[float, float, float]:
    """HSV in [0, 1] to RGB in [0, 1]."""
    i = int(h * 6) % 6
    f = h * 6 - int(h * 6)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    return [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)][i]


def random_colour(gen: np.random.Generator) -> tuple[float, float, float]:
    """A palette hue with jittered saturation and value (the full appearance distribution)."""
    h = (PALETTE_HUES[gen.integers(len(PALETTE_HUES))] + gen.normal(0, 0.02)) % 1.0
    return tuple(float(c) for c in hsv_to_rgb(h, gen.uniform(0.55, 1.0), gen.uniform(0.55, 1.0)))


def random_background(gen: np.random.Generator) -> tuple[str, tuple]:
    """A background kind and two dim colours."""
    kind = BACKGROUNDS[gen.integers(len(BACKGROUNDS))]
    c1 = tuple(float(c) for c in gen.uniform(0.05, 0.45, 3))
    c2 = tuple(float(c) for c in gen.uniform(0.05, 0.45, 3))
    return kind, (c1, c2)


def place_box(bins: Bins, size_bin: int, pos_bin: int, gen: np.random.Generator) -> tuple[int, int, int, int]:
    """A box of the size bin whose centre lies in the position column (kept ``position_margin`` px inside it)."""
    lo, hi = bins.size_ranges[size_bin]
    w, h = int(gen.integers(lo, hi + 1)), int(gen.integers(lo, hi + 1))
    n, col = bins.image_size, bins.image_size / bins.n_position_bins
    cx_lo = max(w / 2, pos_bin * col + bins.position_margin)
    cx_hi = min(n - w / 2, (pos_bin + 1) * col - bins.position_margin)
    cx = gen.uniform(cx_lo, max(cx_lo, cx_hi))
    x0 = int(np.clip(round(cx - w / 2), 0, n - w))
    y0 = int(gen.integers(0, n - h + 1))
    return x0, y0, x0 + w, y0 + h


def overlaps(a: tuple[int, ...], b: tuple[int, ...], gap: int = 1) -> bool:
    """Whether two boxes overlap or lie within ``gap`` pixels of each other."""
    return not (a[2] + gap <= b[0] or b[2] + gap <= a[0] or a[3] + gap <= b[1] or b[3] + gap <= a[1])


def layout_from_groups(bins: Bins, groups: list[int], gen: np.random.Generator,
                       tries: int = 50) -> list[tuple[int, tuple[int, int, int, int]]]:
    """A non-overlapping layout holding one object per group (an object that finds no room is dropped)."""
    placed: list[tuple[int, tuple[int, int, int, int]]] = []
    for g in groups:
        cls, size, pos = bins.parts(g)
        for _ in range(tries):
            box = place_box(bins, size, pos, gen)
            if not any(overlaps(box, b) for _, b in placed):
                placed.append((cls, box))
                break
    return placed


def dress(bins: Bins, layout: list[tuple[int, tuple[int, int, int, int]]], gen: np.random.Generator) -> Scene:
    """A layout with an appearance drawn from the full (test) appearance distribution."""
    kind, colours = random_background(gen)
    objs = tuple(Obj(cls, box, random_colour(gen), FILLS[gen.integers(len(FILLS))]) for cls, box in layout)
    return Scene(objs, kind, colours, int(gen.integers(2**31)))


def shape_mask(cls: int, box: tuple[int, int, int, int], n: int) -> np.ndarray:
    """The class's pixels inside its box: a disk, a square, an upward triangle or a plus-shaped cross."""
    x0, y0, x1, y1 = box
    yy, xx = np.mgrid[0:n, 0:n] + 0.5
    u = (xx - x0) / (x1 - x0)  # 0..1 across the box
    v = (yy - y0) / (y1 - y0)
    inside = (u >= 0) & (u <= 1) & (v >= 0) & (v <= 1)
    name = CLASSES[cls]
    if name == "circle":
        return inside & ((u - 0.5) ** 2 + (v - 0.5) ** 2 <= 0.25)
    if name == "square":
        return inside
    if name == "triangle":
        return inside & (np.abs(u - 0.5) <= v / 2)
    return inside & ((np.abs(u - 0.5) <= 1 / 6) | (np.abs(v - 0.5) <= 1 / 6))


def render(scene: Scene, n: int) -> np.ndarray:
    """The procedural renderer: the image (3, n, n) uint8 of a scene, exactly where its layout says."""
    gen = np.random.default_rng(scene.render_seed)
    c1, c2 = np.array(scene.bg_colours[0]), np.array(scene.bg_colours[1])
    yy, xx = np.mgrid[0:n, 0:n]
    if scene.background == "flat":
        img = np.broadcast_to(c1[:, None, None], (3, n, n)).copy()
    elif scene.background == "noise":
        img = c1[:, None, None] + gen.normal(0, 0.08, (1, n, n))
    elif scene.background == "stripes":
        period = int(gen.integers(4, 9))
        mask = ((xx + yy if gen.random() < 0.5 else xx) // (period // 2)) % 2 == 0
        img = np.where(mask[None], c1[:, None, None], c2[:, None, None])
    else:
        cell = int(gen.integers(3, 7))
        img = np.where(((xx // cell + yy // cell) % 2 == 0)[None], c1[:, None, None], c2[:, None, None])
    for o in scene.objects:
        m = shape_mask(o.cls, o.box, n)
        colour = np.array(o.colour)[:, None, None]
        if o.fill == "striped":
            shade = np.where((yy // 2) % 2 == 0, 1.0, 0.55)[None]
            img = np.where(m[None], colour * shade, img)
        else:
            img = np.where(m[None], colour, img)
    return (np.clip(img, 0, 1) * 255).round().astype(np.uint8)


def blueprint(layout: list[tuple[int, tuple[int, int, int, int]]], n: int) -> np.ndarray:
    """The visual blueprint (Sec. 3.2): each box filled with its class's colour, (3, n, n) float32, later on top."""
    img = np.zeros((3, n, n), dtype=np.float32)
    for cls, (x0, y0, x1, y1) in layout:
        img[:, y0:y1, x0:x1] = BLUEPRINT_COLOURS[cls][:, None, None]
    return img


@dataclass(frozen=True)
class Plants:
    """The biases planted in the training set."""

    class_probs: tuple[float, ...]       # per class, in regular images
    size_probs: tuple[float, ...]        # per size bin, in regular images
    rare_position_class: int             # this class sits in the last position column with prob rare_position_prob
    rare_position_prob: float
    low_diversity_class: int             # (class, size bin) of the frequent-but-low-diversity plant
    low_diversity_size: int
    low_diversity_image_prob: float      # share of training images that hold one low-diversity object only
    max_objects: int


def training_scene(bins: Bins, plants: Plants, gen: np.random.Generator) -> Scene:
    """One biased training scene: either a low-diversity image (one object of the plant, one colour, a flat grey
    background) or a regular image whose objects follow the planted class, size and position frequencies."""
    n_pos = bins.n_position_bins
    if gen.random() < plants.low_diversity_image_prob:
        box = place_box(bins, plants.low_diversity_size, int(gen.integers(n_pos)), gen)
        obj = Obj(plants.low_diversity_class, box, LOW_DIVERSITY_COLOUR, "solid")
        return Scene((obj,), "flat", (LOW_DIVERSITY_BACKGROUND, LOW_DIVERSITY_BACKGROUND), int(gen.integers(2**31)))
    groups = []
    for _ in range(int(gen.integers(1, plants.max_objects + 1))):
        cls = int(gen.choice(len(CLASSES), p=plants.class_probs))
        size_p = np.array(plants.size_probs, dtype=float)
        if cls == plants.low_diversity_class:  # the plant's (class, size) appears only in low-diversity images
            size_p[plants.low_diversity_size] = 0.0
        size = int(gen.choice(len(size_p), p=size_p / size_p.sum()))
        if cls == plants.rare_position_class:
            last = gen.random() < plants.rare_position_prob
            pos = n_pos - 1 if last else int(gen.integers(max(1, n_pos - 1)))
        else:
            pos = int(gen.integers(n_pos))
        groups.append(bins.group(cls, size, pos))
    return dress(bins, layout_from_groups(bins, groups, gen), gen)


def balanced_scene(bins: Bins, max_objects: int, gen: np.random.Generator) -> Scene:
    """One test / validation scene: every object's group uniform over all groups, full appearance diversity."""
    groups = [int(gen.integers(bins.n_groups)) for _ in range(int(gen.integers(1, max_objects + 1)))]
    return dress(bins, layout_from_groups(bins, groups, gen), gen)
