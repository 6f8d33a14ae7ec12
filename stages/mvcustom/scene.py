"""A numpy ray caster of simple textured 3D objects (boxes, spheres) on a ground plane, with exact depth.

World frame: y is up, the ground is the plane y = 0 (a two-tone checkerboard). A camera orbits the
point ``TARGET`` at a fixed radius; its pose is (azimuth, elevation) in degrees. Depth is the
z-depth along the camera's optical axis (what a pinhole projection divides by); the sky has depth
``SKY_DEPTH``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TARGET = np.array([0.0, 0.35, 0.0])
UP = np.array([0.0, 1.0, 0.0])
LIGHT = np.array([0.4, 0.8, 0.45]) / np.linalg.norm([0.4, 0.8, 0.45])
SKY = np.array([0.55, 0.7, 0.9])
SKY_DEPTH = 20.0
CHECKER = (np.array([0.45, 0.45, 0.42]), np.array([0.7, 0.7, 0.66]))
CELL = 0.5  # checkerboard cell size (world units)
EPS = 1e-6


@dataclass(frozen=True)
class Camera:
    """A pinhole camera on the orbit: azimuth and elevation in degrees, orbit radius, focal length in pixels."""

    azimuth: float
    elevation: float
    radius: float
    focal: float
    size: int

    def frame(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(centre, right, up, forward) of the camera in world coordinates (orthonormal, right-handed image)."""
        az, el = np.deg2rad(self.azimuth), np.deg2rad(self.elevation)
        centre = TARGET + self.radius * np.array([np.cos(el) * np.sin(az), np.sin(el), np.cos(el) * np.cos(az)])
        forward = (TARGET - centre) / np.linalg.norm(TARGET - centre)
        right = np.cross(forward, UP)
        right /= np.linalg.norm(right)
        up = np.cross(right, forward)
        return centre, right, up, forward


@dataclass(frozen=True)
class Box:
    """An axis-aligned box resting on the ground; one colour per face (-x, +x, -y, +y, -z, +z)."""

    lo: np.ndarray
    hi: np.ndarray
    face_colours: np.ndarray


@dataclass(frozen=True)
class Sphere:
    """A sphere; two colours split by the plane x = centre_x (so its appearance depends on the view)."""

    centre: np.ndarray
    radius: float
    colours: np.ndarray


@dataclass
class Scene:
    """Objects on the checkered ground plane."""

    boxes: list[Box] = field(default_factory=list)
    spheres: list[Sphere] = field(default_factory=list)


def pixel_rays(cam: Camera) -> tuple[np.ndarray, np.ndarray]:
    """(origins, unit directions) of the rays through the centres of the size x size pixels, row-major."""
    centre, right, up, forward = cam.frame()
    s = cam.size
    j, i = np.meshgrid(np.arange(s) + 0.5 - s / 2, np.arange(s) + 0.5 - s / 2)
    d = forward[None] + (j.reshape(-1, 1) * right[None] - i.reshape(-1, 1) * up[None]) / cam.focal
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return np.broadcast_to(centre, d.shape), d


def intersect_plane(o: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Ray parameter t of the hit with the ground y = 0 (inf where the ray goes up or starts below)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = -o[:, 1] / d[:, 1]
    return np.where((d[:, 1] < -EPS) & (t > EPS), t, np.inf)


def intersect_sphere(o: np.ndarray, d: np.ndarray, sphere: Sphere) -> np.ndarray:
    """Ray parameter of the nearest front hit with a sphere, |o + t d - c| = r (inf where missed)."""
    oc = o - sphere.centre
    b = np.einsum("ij,ij->i", d, oc)
    disc = b * b - (np.einsum("ij,ij->i", oc, oc) - sphere.radius ** 2)
    t = -b - np.sqrt(np.maximum(disc, 0.0))
    return np.where((disc > 0) & (t > EPS), t, np.inf)


def intersect_box(o: np.ndarray, d: np.ndarray, box: Box) -> tuple[np.ndarray, np.ndarray]:
    """(t of the entry hit, face index 0..5) with an axis-aligned box by the slab method (inf where missed)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / np.where(np.abs(d) < EPS, EPS, d)
    t1, t2 = (box.lo - o) * inv, (box.hi - o) * inv
    near, far = np.minimum(t1, t2), np.maximum(t1, t2)
    t_in, t_out = near.max(1), far.min(1)
    axis = near.argmax(1)
    side = (d[np.arange(len(d)), axis] < 0).astype(int)  # entering through the + face when moving in -axis
    hit = (t_out >= np.maximum(t_in, EPS)) & (t_in > EPS)
    return np.where(hit, t_in, np.inf), 2 * axis + side


def shade(colour: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """Lambertian shading with an ambient term: colour x (0.45 + 0.55 max(0, n . l))."""
    return colour * (0.45 + 0.55 * np.clip(normal @ LIGHT, 0.0, None))[:, None]


def render(scene: Scene, cam: Camera) -> tuple[np.ndarray, np.ndarray]:
    """(image (3, s, s) in [0, 1], z-depth (s, s)) of a scene seen by a camera: the nearest hit per ray."""
    o, d = pixel_rays(cam)
    best = intersect_plane(o, d)
    p = o + np.where(np.isfinite(best), best, 0.0)[:, None] * d
    checker = (np.floor(p[:, 0] / CELL) + np.floor(p[:, 2] / CELL)).astype(int) % 2
    colour = np.where(checker[:, None] == 0, CHECKER[0], CHECKER[1]) * (0.45 + 0.55 * LIGHT[1])
    colour = np.where(np.isfinite(best)[:, None], colour, SKY)
    normals = np.eye(3)[[0, 0, 1, 1, 2, 2]] * np.array([-1, 1, -1, 1, -1, 1])[:, None]
    for box in scene.boxes:
        t, face = intersect_box(o, d, box)
        closer = t < best
        best = np.where(closer, t, best)
        colour = np.where(closer[:, None], shade(box.face_colours[face], normals[face]), colour)
    for sph in scene.spheres:
        t = intersect_sphere(o, d, sph)
        closer = t < best
        q = o + np.where(np.isfinite(t), t, 0.0)[:, None] * d
        normal = (q - sph.centre) / sph.radius
        base = np.where((q[:, 0] >= sph.centre[0])[:, None], sph.colours[0], sph.colours[1])
        best = np.where(closer, t, best)
        colour = np.where(closer[:, None], shade(base, normal), colour)
    _, _, _, forward = cam.frame()
    depth = np.where(np.isfinite(best), best * (d @ forward), SKY_DEPTH)
    s = cam.size
    return colour.T.reshape(3, s, s).clip(0, 1), depth.reshape(s, s)


def random_scene(gen: np.random.Generator, max_objects: int) -> Scene:
    """1..max_objects boxes and spheres resting on the ground near the origin, colours uniform in [0.1, 0.95]."""
    scene = Scene()
    for _ in range(int(gen.integers(1, max_objects + 1))):
        x, z = gen.uniform(-0.7, 0.7, size=2)
        if gen.random() < 0.5:
            half = gen.uniform(0.15, 0.4, size=3)
            half[1] = gen.uniform(0.15, 0.5)
            lo, hi = np.array([x - half[0], 0.0, z - half[2]]), np.array([x + half[0], 2 * half[1], z + half[2]])
            scene.boxes.append(Box(lo, hi, gen.uniform(0.1, 0.95, size=(6, 3))))
        else:
            r = gen.uniform(0.2, 0.45)
            scene.spheres.append(Sphere(np.array([x, r, z]), r, gen.uniform(0.1, 0.95, size=(2, 3))))
    return scene
