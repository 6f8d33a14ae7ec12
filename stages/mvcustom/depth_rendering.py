"""Depth-aware rendering of one view to another pose: unproject with depth, project, z-buffer (paper Sec. 3.3).

The same operation serves three purposes: depth-aware feature rendering (DFR: the anchor view rendered to
each target pose for the early denoising steps), the visibility mask that consistency-aware latent
completion (LCC) re-noises outside of, and the reprojection-consistency metric between generated views.
"""

from __future__ import annotations

import numpy as np

from stages.mvcustom.scene import Camera


def unproject(depth: np.ndarray, cam: Camera, supersample: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """World points X = c + Z (f + (x r - y u) / focal) of each pixel (and sub-pixel) with z-depth Z.

    Returns (points (n, 3), source pixel index (n,)); ``supersample`` k spreads k x k points over each
    pixel at the pixel's depth, so a view seen closer from the target leaves fewer splatting holes.
    """
    centre, right, up, forward = cam.frame()
    s, k = cam.size, supersample
    offsets = (np.arange(k) + 0.5) / k - 0.5
    ii, jj = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
    oi, oj = np.meshgrid(offsets, offsets, indexing="ij")
    y = (ii[..., None, None] + 0.5 + oi - s / 2).reshape(-1)
    x = (jj[..., None, None] + 0.5 + oj - s / 2).reshape(-1)
    src = np.repeat(np.arange(s * s), k * k)
    z = depth.reshape(-1)[src]
    rays = forward[None] + (x[:, None] * right[None] - y[:, None] * up[None]) / cam.focal
    return centre[None] + z[:, None] * rays, src


def project(points: np.ndarray, cam: Camera) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, z-depth) of world points: column = focal X / Z + s/2 - 1/2, row = -focal Y / Z + s/2 - 1/2."""
    centre, right, up, forward = cam.frame()
    rel = points - centre[None]
    z = rel @ forward
    with np.errstate(divide="ignore", invalid="ignore"):
        col = cam.focal * (rel @ right) / z + cam.size / 2 - 0.5
        row = -cam.focal * (rel @ up) / z + cam.size / 2 - 0.5
    return row, col, z


def render_to_pose(image: np.ndarray, depth: np.ndarray, src: Camera, dst: Camera,
                   supersample: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Depth-aware rendering of ``image`` (c, s, s) from ``src`` to ``dst``: (rendered, visible (s, s), depth).

    Each (sub-)pixel goes to the nearest target pixel; where several land, the nearest to the camera wins
    (z-buffer). ``visible`` marks the target pixels that received a point: outside it the target sees
    what the source did not (disocclusion or out of frame); there the image is 0 and the depth inf.
    """
    s = dst.size
    points, pix = unproject(depth, src, supersample)
    row, col, z = project(points, dst)
    r, c = np.rint(row), np.rint(col)
    ok = np.isfinite(r) & np.isfinite(c) & (z > 1e-6) & (r >= 0) & (r < s) & (c >= 0) & (c < s)
    target = (r[ok] * s + c[ok]).astype(int)
    zs, pix = z[ok], pix[ok]
    order = np.lexsort((zs, target))            # by target pixel, then nearest first
    target, pix, zs = target[order], pix[order], zs[order]
    first = np.r_[True, target[1:] != target[:-1]]
    flat = image.reshape(image.shape[0], -1)
    out = np.zeros_like(flat)
    out_depth = np.full(s * s, np.inf)
    visible = np.zeros(s * s, dtype=bool)
    out[:, target[first]] = flat[:, pix[first]]
    out_depth[target[first]] = zs[first]
    visible[target[first]] = True
    return out.reshape(image.shape), visible.reshape(s, s), out_depth.reshape(s, s)


def bilinear(image: np.ndarray, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Bilinear samples (c, n) of ``image`` (c, s, s) at continuous pixel coordinates inside [0, s − 1]."""
    s = image.shape[-1]
    r0, c0 = np.clip(np.floor(row).astype(int), 0, s - 2), np.clip(np.floor(col).astype(int), 0, s - 2)
    fr, fc = row - r0, col - c0
    return (image[:, r0, c0] * (1 - fr) * (1 - fc) + image[:, r0 + 1, c0] * fr * (1 - fc)
            + image[:, r0, c0 + 1] * (1 - fr) * fc + image[:, r0 + 1, c0 + 1] * fr * fc)


def reprojection_error(image_a: np.ndarray, depth_a: np.ndarray, cam_a: Camera, image_b: np.ndarray,
                       depth_b: np.ndarray, cam_b: Camera, tolerance: float = 0.05) -> tuple[float, int]:
    """Mean absolute difference between view b and view a sampled where b's surface points project into a
    (b's depth unprojected, projected into a, a sampled bilinearly), over the points a also sees (a's depth
    there agrees with the point's within ``tolerance``, relative). Returns (error, points compared)."""
    s = cam_a.size
    points, _ = unproject(depth_b, cam_b)
    row, col, z = project(points, cam_a)
    inside = np.isfinite(row) & np.isfinite(col) & (z > 1e-6) & (row >= 0) & (row <= s - 1) & (col >= 0) \
        & (col <= s - 1)
    row, col, z = row[inside], col[inside], z[inside]
    seen = np.abs(bilinear(depth_a[None], row, col)[0] - z) <= tolerance * z
    n = int(seen.sum())
    if n == 0:
        return float("nan"), 0
    sampled = bilinear(image_a, row[seen], col[seen])
    target = image_b.reshape(image_b.shape[0], -1)[:, np.flatnonzero(inside)[seen]]
    return float(np.abs(sampled - target).mean()), n
