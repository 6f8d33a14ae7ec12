"""The procedural scans: a scene (modality, lesion shape, size, location, contrast), its image, the
finding -> diagnosis -> management table, the six tasks with their gold answers and gold key steps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IMAGE_SIZE = 32
MODALITIES = ("CT", "MRI", "X-ray")
SHAPES = ("round", "square", "star-shaped")
SIZES = ("small", "medium", "large")
RADII = (3, 4, 5, 6, 7, 8)                       # the fine size grade; coarse size = pairs of grades
LOCATIONS = ("upper left", "upper right", "lower left", "lower right")
FINDINGS = {("round", "small"): "cyst", ("round", "medium"): "nodule", ("round", "large"): "mass",
            ("square", "small"): "calcification", ("square", "medium"): "abscess", ("square", "large"): "hematoma",
            ("star-shaped", "small"): "fibrosis", ("star-shaped", "medium"): "infiltrate",
            ("star-shaped", "large"): "tumour"}
FINDING_VALUES = tuple(FINDINGS.values())
DIAGNOSES = ("benign", "inflammatory", "malignant")
MANAGEMENT = {"benign": "routine follow-up", "inflammatory": "antibiotic therapy", "malignant": "surgical biopsy"}
CONTRAST = {1: 1.0, 2: 0.6, 3: 0.4}              # difficulty level -> lesion contrast over the texture
SLOTS = {"modality": MODALITIES, "shape": SHAPES, "size": SIZES, "location": LOCATIONS, "finding": FINDING_VALUES,
         "diagnosis": DIAGNOSES, "management": tuple(MANAGEMENT.values())}
GRADES = tuple(f"grade {r - 2}" for r in RADII)  # fine size answers: grade 1 (radius 3) .. grade 6 (radius 8)
# task -> (its key-step slots in order, the slot or answer set of its gold answer)
TASKS = {"modality": (("modality",), MODALITIES),
         "location": (("location",), LOCATIONS),
         "finding": (("shape", "size", "finding"), FINDING_VALUES),
         "diagnosis": (("modality", "shape", "size", "finding", "diagnosis"), DIAGNOSES),
         "management": (("modality", "shape", "size", "finding", "diagnosis", "management"),
                        tuple(MANAGEMENT.values())),
         "size_grade": (("shape", "size"), GRADES)}


@dataclass(frozen=True)
class Scene:
    """One scan's truth: modality, lesion shape, radius (fine size), quadrant and difficulty level."""

    modality: str
    shape: str
    radius: int
    location: str
    level: int


def coarse_size(radius: int) -> str:
    """The verbalised size: radius 3-4 small, 5-6 medium, 7-8 large (the fine grade is lost in words)."""
    return SIZES[(radius - RADII[0]) // 2]


def diagnosis_of(finding: str, modality: str) -> str:
    """The knowledge table: diagnosis from the finding and the modality (a fixed cyclic table)."""
    return DIAGNOSES[(FINDING_VALUES.index(finding) + MODALITIES.index(modality)) % len(DIAGNOSES)]


def scene_facts(s: Scene) -> dict[str, str]:
    """Every slot's value for a scene (the rule-based reasoner's reading of the true scene)."""
    size = coarse_size(s.radius)
    finding = FINDINGS[(s.shape, size)]
    diagnosis = diagnosis_of(finding, s.modality)
    return {"modality": s.modality, "shape": s.shape, "size": size, "location": s.location, "finding": finding,
            "diagnosis": diagnosis, "management": MANAGEMENT[diagnosis]}


def gold(s: Scene, task: str) -> tuple[list[tuple[str, str]], str]:
    """(gold key steps as (slot, value) pairs, gold answer) of one task on one scene."""
    facts = scene_facts(s)
    slots, _ = TASKS[task]
    answer = f"grade {s.radius - 2}" if task == "size_grade" else facts[slots[-1]]
    return [(slot, facts[slot]) for slot in slots], answer


def sample_scene(rng: np.random.Generator) -> Scene:
    """A uniformly drawn scene."""
    return Scene(modality=str(rng.choice(MODALITIES)), shape=str(rng.choice(SHAPES)), radius=int(rng.choice(RADII)),
                 location=str(rng.choice(LOCATIONS)), level=int(rng.integers(1, 4)))


def texture(modality: str, rng: np.random.Generator, n: int = IMAGE_SIZE) -> np.ndarray:
    """The modality's background texture in [0, 1]: CT smooth blobs, MRI stripes, X-ray fine speckle."""
    yy, xx = np.mgrid[0:n, 0:n] / n
    if modality == "CT":
        base = sum(np.sin(2 * np.pi * (rng.uniform(0.5, 1.5) * xx + rng.uniform(0.5, 1.5) * yy) + rng.uniform(0, 6))
                   for _ in range(3)) / 6 + 0.5
    elif modality == "MRI":
        base = 0.5 + 0.4 * np.sin(2 * np.pi * rng.uniform(5, 7) * yy + rng.uniform(0, 6))
    else:
        base = rng.uniform(0.2, 0.8, size=(n, n))
    return np.clip(base + rng.normal(0, 0.05, size=(n, n)), 0, 1)


def lesion_mask(shape: str, radius: int, cy: float, cx: float, n: int = IMAGE_SIZE) -> np.ndarray:
    """The lesion's pixels: a disk, a square of half-side r, or a plus-shaped star of arm length r."""
    yy, xx = np.mgrid[0:n, 0:n]
    dy, dx = np.abs(yy - cy), np.abs(xx - cx)
    if shape == "round":
        return dy ** 2 + dx ** 2 <= radius ** 2
    if shape == "square":
        return (dy <= radius - 0.5) & (dx <= radius - 0.5)
    arm = max(1.0, radius / 3)
    return ((dy <= radius) & (dx <= arm)) | ((dx <= radius) & (dy <= arm))


def render(s: Scene, rng: np.random.Generator, n: int = IMAGE_SIZE) -> np.ndarray:
    """The scan: texture, plus the lesion (brighter by the level's contrast) in its quadrant, jittered."""
    q = LOCATIONS.index(s.location)
    cy = (0.25 + 0.5 * (q // 2)) * n + rng.uniform(-1.5, 1.5)
    cx = (0.25 + 0.5 * (q % 2)) * n + rng.uniform(-1.5, 1.5)
    img = 0.6 * texture(s.modality, rng, n)
    img[lesion_mask(s.shape, s.radius, cy, cx, n)] += CONTRAST[s.level]
    return np.clip(img + rng.normal(0, 0.04, size=(n, n)), 0, 1.6).astype(np.float32)
