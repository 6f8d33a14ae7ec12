"""The generator: the rule-based reasoner answers every task from the scene; the image shows the scene."""

from itertools import pairwise

import numpy as np

from stages.m3cotbench.reasoners import rule_based, shortcut, unfaithful
from stages.m3cotbench.scene import (
    IMAGE_SIZE,
    LOCATIONS,
    RADII,
    SHAPES,
    TASKS,
    Scene,
    coarse_size,
    diagnosis_of,
    gold,
    lesion_mask,
    render,
    sample_scene,
    scene_facts,
)
from stages.m3cotbench.steps_text import parse


def read_scene_from_image(img: np.ndarray) -> tuple[str, str, int]:
    """A hand-written reader for level-1 scans: threshold the lesion, take its quadrant from the centroid, and
    its shape and radius as the lesion mask (at the bounding box's centre) that overlaps it best (IoU)."""
    mask = img > 0.8
    ys, xs = np.nonzero(mask)
    h = IMAGE_SIZE / 2
    location = LOCATIONS[2 * int(ys.mean() >= h) + int(xs.mean() >= h)]
    cy, cx = (ys.min() + ys.max()) / 2, (xs.min() + xs.max()) / 2

    def iou(shape: str, r: int) -> float:
        m = lesion_mask(shape, r, cy, cx)
        return (m & mask).sum() / (m | mask).sum()

    shape, radius = max(((sh, r) for sh in SHAPES for r in RADII), key=lambda c: iou(*c))
    return location, shape, radius


def test_level_one_scans_show_their_scene_to_a_simple_reader():
    rng = np.random.default_rng(0)
    for _ in range(60):
        s = sample_scene(rng)
        s = Scene(s.modality, s.shape, s.radius, s.location, 1)
        img = render(s, rng)
        assert img.shape == (IMAGE_SIZE, IMAGE_SIZE)
        location, shape, radius = read_scene_from_image(img)
        assert (location, shape) == (s.location, s.shape)
        assert radius == s.radius
        read = Scene(s.modality, shape, radius, location, 1)
        assert all(gold(read, task) == gold(s, task) for task in TASKS)   # every task answerable from the image


def test_lesion_area_grows_with_radius_for_every_shape():
    for shape in ("round", "square", "star-shaped"):
        areas = [lesion_mask(shape, r, 16, 16).sum() for r in range(3, 9)]
        assert all(a < b for a, b in pairwise(areas))


def test_the_rule_based_reasoner_answers_every_task_from_the_scene():
    rng = np.random.default_rng(1)
    for _ in range(30):
        s = sample_scene(rng)
        for task in TASKS:
            steps, answer = gold(s, task)
            text = rule_based(s, task, rng)
            parsed_steps, parsed_answer = parse(text)
            assert parsed_answer == answer and len(parsed_steps) == len(steps)
            assert answer in TASKS[task][1]


def test_unfaithful_and_shortcut_answer_right_with_wrong_or_no_steps():
    rng = np.random.default_rng(2)
    s = Scene("CT", "round", 3, "upper left", 2)
    steps, answer = gold(s, "diagnosis")
    wrong = parse(unfaithful(s, "diagnosis", rng))
    assert wrong[1] == answer and len(wrong[0]) == len(steps)
    assert "round" not in wrong[0][1]
    assert parse(shortcut(s, "diagnosis", rng)) == ([], answer)


def test_knowledge_table_by_hand():
    s = Scene("MRI", "square", 8, "lower right", 3)
    facts = scene_facts(s)
    assert coarse_size(8) == "large" and coarse_size(3) == "small" and coarse_size(5) == "medium"
    assert facts["finding"] == "hematoma"
    assert facts["diagnosis"] == diagnosis_of("hematoma", "MRI") == "benign"   # (5 + 1) % 3 = 0
    assert gold(s, "size_grade") == ([("shape", "square"), ("size", "large")], "grade 6")
    assert gold(s, "management")[1] == "routine follow-up"
