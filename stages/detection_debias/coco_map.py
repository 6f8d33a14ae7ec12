"""COCO-style mAP (AP averaged over IoU 0.50:0.95, 101-point recall) with pycocotools' COCOeval, overall by
class and per object group.

Per-group AP relabels every box with its group: a ground-truth box by its (class, size bin, position bin); a
detection by the group of the same-class ground-truth box it overlaps most at IoU >= 0.5 (so a detection of an
object counts for that object's group even when its predicted size or centre falls across a bin edge), else by
its own box's bins. COCO's per-category AP of the relabelled boxes is then the group's AP.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence

import numpy as np

from stages.detection_debias.scenes import Bins


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise IoU of xyxy boxes (n, 4) x (m, 4)."""
    a, b = np.asarray(a, float).reshape(-1, 4), np.asarray(b, float).reshape(-1, 4)
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=2)
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])  # noqa: E731
    return inter / np.maximum(area(a)[:, None] + area(b)[None, :] - inter, 1e-12)


def coco_ap(gt_boxes: Sequence[np.ndarray], gt_labels: Sequence[np.ndarray], det_boxes: Sequence[np.ndarray],
            det_scores: Sequence[np.ndarray], det_labels: Sequence[np.ndarray], n_labels: int,
            max_dets: int = 100) -> dict[int, float]:
    """COCO AP@[.5:.95] per label (labels with no ground truth are absent), all areas, up to ``max_dets`` per image."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    images, anns, dets = [], [], []
    for i, (gb, gl, db, ds, dl) in enumerate(zip(gt_boxes, gt_labels, det_boxes, det_scores, det_labels,
                                                 strict=True)):
        images.append({"id": i})
        for box, label in zip(np.asarray(gb, float).reshape(-1, 4), gl, strict=True):
            w, h = box[2] - box[0], box[3] - box[1]
            anns.append({"id": len(anns) + 1, "image_id": i, "category_id": int(label), "iscrowd": 0,
                         "bbox": [box[0], box[1], w, h], "area": w * h})
        for box, score, label in zip(np.asarray(db, float).reshape(-1, 4), ds, dl, strict=True):
            dets.append({"image_id": i, "category_id": int(label), "score": float(score),
                         "bbox": [box[0], box[1], box[2] - box[0], box[3] - box[1]]})
    if not anns:
        return {}
    gt = COCO()
    gt.dataset = {"images": images, "annotations": anns, "categories": [{"id": k} for k in range(n_labels)]}
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        dt = gt.loadRes(dets) if dets else COCO()
        ev = COCOeval(gt, dt, "bbox")
        ev.params.maxDets = [1, 10, max_dets]
        ev.evaluate()
        ev.accumulate()
    precision = ev.eval["precision"][:, :, :, 0, -1]  # (iou, recall, category), all areas, max_dets
    present = {int(a["category_id"]) for a in anns}
    out = {}
    for k, cat in enumerate(ev.params.catIds):
        if cat in present:
            p = precision[:, :, k]
            out[int(cat)] = float(p[p > -1].mean()) if (p > -1).any() else 0.0
    return out


def group_labels_of_detections(bins: Bins, gt_boxes: np.ndarray, gt_classes: np.ndarray, det_boxes: np.ndarray,
                               det_classes: np.ndarray) -> np.ndarray:
    """Each detection's group: that of the same-class ground truth it overlaps most at IoU >= 0.5, else its own."""
    out = np.array([bins.group_of_box(int(c), tuple(b)) for b, c in zip(det_boxes, det_classes, strict=True)],
                   dtype=np.int64)
    if len(gt_boxes) and len(det_boxes):
        iou = box_iou(det_boxes, gt_boxes) * (det_classes[:, None] == gt_classes[None, :])
        best = iou.argmax(1)
        hit = iou[np.arange(len(det_boxes)), best] >= 0.5
        gt_groups = np.array([bins.group_of_box(int(c), tuple(b)) for b, c in zip(gt_boxes, gt_classes, strict=True)])
        out[hit] = gt_groups[best[hit]]
    return out


def evaluate_detections(bins: Bins, n_classes: int, gt: Sequence[tuple[np.ndarray, np.ndarray]],
                        dets: Sequence[dict[str, np.ndarray]]) -> tuple[float, dict[int, float]]:
    """(overall mAP: the mean of per-class AP, per-group AP) of detections against ground truth (boxes, classes)."""
    gb = [np.asarray(b, float).reshape(-1, 4) for b, _ in gt]
    gc = [np.asarray(c, np.int64) for _, c in gt]
    per_class = coco_ap(gb, gc, [d["boxes"] for d in dets], [d["scores"] for d in dets],
                        [d["classes"] for d in dets], n_classes)
    gg = [np.array([bins.group_of_box(int(c), tuple(b)) for b, c in zip(boxes, cls, strict=True)], dtype=np.int64)
          for boxes, cls in zip(gb, gc, strict=True)]
    dg = [group_labels_of_detections(bins, boxes, cls, d["boxes"], d["classes"])
          for boxes, cls, d in zip(gb, gc, dets, strict=True)]
    per_group = coco_ap(gb, gg, [d["boxes"] for d in dets], [d["scores"] for d in dets], dg, bins.n_groups)
    return float(np.mean(list(per_class.values()))) if per_class else 0.0, per_group
