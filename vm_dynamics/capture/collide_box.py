"""Contact manifolds of a chaser box against a target box or cylinder (docs/capture.md).

Each function returns ``(deepest, points)``: ``points`` the penetrating contact points of the
pair as ``(δ, n, p)`` tuples — penetration δ > 0 (m), unit normal ``n`` (inertial, out of the
target towards the chaser) and the point ``p`` midway between the two surfaces — and
``deepest`` the one ``(δ, n, p)`` with the largest δ, also while apart (δ ≤ 0: then an estimate
of the gap and its direction, used for the approach rate at a contact's onset).  Every point is
a pair of surface points ``x_C`` (chaser) and ``x_T = x_C + δ n`` (target) with
``p = ½(x_C + x_T)``, so the penetration rate is ``δ̇ = −n·v_rel(p)`` as for a sphere.

**Box–box** (the separating-axis test with face clipping, as in ODE's ``dBoxBox`` and MuJoCo's
box–box): of the 15 axes (3 face normals of each box, 9 edge–edge cross products) the one of
least overlap gives ``n``.  A face axis makes that face the *reference* face and the face of the
other box most opposed to it the *incident* face; the incident face (4 corners) is clipped to the
reference face's side planes (Sutherland–Hodgman) and every clipped point below the reference
plane is a contact point with its own depth along ``n`` (up to 8 points: the corners of the
overlap polygon).  An edge axis gives one point: the closest points of the two supporting edges,
depth along their common normal.

**Box–cylinder** (per feature, the exact signed distances of :mod:`.shapes`):

* (V) every box corner inside the cylinder: ``δ = −φ_cyl(v)``, ``n = ∇φ_cyl(v)``;
* (S) every box edge crossing the curved side: its point nearest the axis (interior to the
  edge, nearer the side than the caps), ``δ = R − ρ``, ``n`` radial;
* (ER) every box edge crossing a rim circle: the common normal of the edge and the circle, when
  each point is inside the other body and ``n`` is in both normal cones;
* (R) each rim circle inside the box: for each box axis ``m``, the two points of the circle
  where ``m·x`` is stationary (the deepest and the shallowest point towards that face pair);
  kept when inside the box with that axis as its nearest face:
  ``δ = −φ_box(w)``, ``n = −∇φ_box(w)``.

All depths of (V), (S), (ER), (R) and of corner points of the clipping are functions of the
configuration whose rate is ``−n·v_rel`` (material points, or stationary points of the depth
along a curve), so the elastic force derives from ``U = Σ k δᵢⁿ⁺¹/(n + 1)``; the limits (clip
points, switches of the separating axis or of a feature) are in docs/capture.md.
"""
from __future__ import annotations

import math

import numpy as np

from .shapes import Box, Cylinder

__all__ = ["box_box_manifold", "box_cylinder_manifold", "box_corners", "BOX_EDGES"]

_SIGNS = np.array([[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0)
                   for sz in (-1.0, 1.0)])
#: The 12 edges of a box as pairs of indices into :func:`box_corners` (corners differing in
#: one sign).
BOX_EDGES = tuple((i, j) for i in range(8) for j in range(i + 1, 8)
                  if int(np.sum(_SIGNS[i] != _SIGNS[j])) == 1)
_PARALLEL = 1e-6        # |e_A × e_B| below this: the edge axis is skipped (parallel edges)


def box_corners(box: Box, g: np.ndarray) -> np.ndarray:
    """The 8 corners (8×3, inertial) of ``box`` at the pose ``g``."""
    return g[:3, 3] + (_SIGNS * box.half) @ g[:3, :3].T


# ---------------------------------------------------------------------------- box-box
def _clip(poly: list, axis: np.ndarray, c: float, h: float) -> list:
    """Sutherland–Hodgman: the part of the polygon ``poly`` with ``|axis·x − c| ≤ h``."""
    for sgn in (1.0, -1.0):
        out = []
        n = len(poly)
        for i in range(n):
            a, b = poly[i], poly[(i + 1) % n]
            da = h - sgn * (axis @ a - c)
            db = h - sgn * (axis @ b - c)
            if da >= 0.0:
                out.append(a)
            if (da >= 0.0) != (db >= 0.0):
                out.append(a + (da / (da - db)) * (b - a))
        poly = out
        if not poly:
            break
    return poly


def _face_points(ref_R, ref_half, ref_c, k, m, inc_R, inc_half, inc_c):
    """Clip the incident box's face most opposed to ``m`` (the outward normal of the reference
    box's face ``k``) to that face; ``[(depth below the face, point on the incident face)]``."""
    d = inc_R.T @ m                          # m in the incident box's axes
    j = int(np.argmax(np.abs(d)))
    s = -1.0 if d[j] > 0 else 1.0             # the incident face's outward normal opposes m
    j1, j2 = (j + 1) % 3, (j + 2) % 3
    fc = inc_c + s * inc_half[j] * inc_R[:, j]
    u, w = inc_half[j1] * inc_R[:, j1], inc_half[j2] * inc_R[:, j2]
    poly = [fc + u + w, fc - u + w, fc - u - w, fc + u - w]
    for a in ((k + 1) % 3, (k + 2) % 3):
        ax = ref_R[:, a]
        poly = _clip(poly, ax, float(ax @ ref_c), float(ref_half[a]))
    top = float(m @ ref_c) + float(ref_half[k])
    return [(top - float(m @ x), x) for x in poly]


def _edge_point(RA, hA, cA, i, RB, hB, cB, j, n):
    """Closest points of A's edge along axis i deepest towards B (direction −n) and B's edge
    along axis j deepest towards A (direction n); ``(depth, x_A, x_B)``."""
    pa, pb = cA.copy(), cB.copy()
    for k in range(3):
        if k != i:
            pa -= np.copysign(hA[k], RA[:, k] @ n) * RA[:, k]
        if k != j:
            pb += np.copysign(hB[k], RB[:, k] @ n) * RB[:, k]
    da, db = RA[:, i], RB[:, j]
    r = pa - pb
    b = float(da @ db)
    den = 1.0 - b * b
    s = (b * float(db @ r) - float(da @ r)) / den
    t = (float(db @ r) - b * float(da @ r)) / den
    s = min(max(s, -hA[i]), hA[i])
    t = min(max(t, -hB[j]), hB[j])
    xa, xb = pa + s * da, pb + t * db
    return float((xb - xa) @ n), xa, xb


def box_box_manifold(A: Box, gA: np.ndarray, B: Box, gB: np.ndarray):
    """The manifold of the chaser box ``A`` at ``gA`` against the target box ``B`` at ``gB``
    (module docstring): ``(deepest, points)``."""
    RA, RB = gA[:3, :3], gB[:3, :3]
    cA, cB = gA[:3, 3], gB[:3, 3]
    hA, hB = A.half, B.half
    t = cA - cB
    C = RA.T @ RB                            # C[i, j] = a_i · b_j
    absC = np.abs(C)
    best = None                              # (overlap, kind, i, j, n)
    for i in range(3):                       # faces of A
        L = RA[:, i]
        ov = hA[i] + hB @ absC[i] - abs(t @ L)
        if best is None or ov < best[0]:
            best = (ov, "A", i, -1, L)
    for j in range(3):                       # faces of B
        L = RB[:, j]
        ov = hA @ absC[:, j] + hB[j] - abs(t @ L)
        if ov < best[0]:
            best = (ov, "B", -1, j, L)
    face_ov = best[0]
    for i in range(3):                       # edge × edge
        for j in range(3):
            L = np.cross(RA[:, i], RB[:, j])
            ln = math.sqrt(L @ L)
            if ln < _PARALLEL:
                continue
            L = L / ln
            ov = (hA @ np.abs(RA.T @ L)) + (hB @ np.abs(RB.T @ L)) - abs(t @ L)
            if ov < best[0] and ov < face_ov * (1.0 - 1e-9) - 1e-15:
                best = (ov, "E", i, j, L)
    ov, kind, i, j, L = best
    n = L if t @ L >= 0.0 else -L            # from B towards A
    pts = []
    if kind == "B":                          # B's face is the reference, A's the incident
        for d, x in _face_points(RB, hB, cB, j, n, RA, hA, cA):
            pts.append((d, n, x + 0.5 * d * n))
    elif kind == "A":                        # A's face (outward −n) is the reference
        for d, x in _face_points(RA, hA, cA, i, -n, RB, hB, cB):
            pts.append((d, n, x - 0.5 * d * n))
    else:
        d, xa, xb = _edge_point(RA, hA, cA, i, RB, hB, cB, j, n)
        pts.append((d, n, 0.5 * (xa + xb)))
    if pts:
        deepest = max(pts, key=lambda q: q[0])
    else:
        deepest = (ov, n, 0.5 * (cA + cB))
    if ov <= 0.0:
        return (min(ov, deepest[0]), n, deepest[2]), []
    return deepest, [q for q in pts if q[0] > 0.0]


# ---------------------------------------------------------------------------- box-cylinder
def _seg_seg_distance(p0, d0, p1, d1) -> float:
    """Distance between the segments ``p0 + s d0`` and ``p1 + t d1``, ``s, t ∈ [0, 1]``."""
    r = p0 - p1
    a, e, b = d0 @ d0, d1 @ d1, d0 @ d1
    c, f = d0 @ r, d1 @ r
    den = a * e - b * b
    s = min(max((b * f - c * e) / den, 0.0), 1.0) if den > 1e-14 * a * e else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t, s = 0.0, min(max(-c / a, 0.0), 1.0)
    elif t > 1.0:
        t, s = 1.0, min(max((b - c) / a, 0.0), 1.0)
    return float(np.linalg.norm(p0 + s * d0 - p1 - t * d1))


_NRIM = 48          # samples of a rim circle bracketing the minima of its distance to a line


def _edge_side(cyl: Cylinder, cT, axis, a, b):
    """(S): the point of the edge ``a b`` nearest the cylinder's axis line (``ρ²`` is a convex
    quadratic along the edge), if it is interior to the edge, nearer the axis than both
    corners, within the side's extent and nearer the side than the caps: ``(δ, n, x)`` or None."""
    h, R = 0.5 * cyl.length, cyl.radius
    p0 = a - cT
    p0 = p0 - (p0 @ axis) * axis
    p1 = b - a
    p1 = p1 - (p1 @ axis) * axis
    den = p1 @ p1
    if den <= 1e-24 * (1.0 + p0 @ p0):
        return None                          # parallel to the axis: the corners and rims
    s = -(p0 @ p1) / den
    if not 1e-9 < s < 1.0 - 1e-9:
        return None
    u = p0 + s * p1
    r = math.sqrt(u @ u)
    x = a + s * (b - a)
    z = (x - cT) @ axis
    if r >= R or r <= 0.0 or R - r > h - abs(z):
        return None
    return R - r, u / r, x


def _edge_rim(cyl: Cylinder, c, e1, e2, zaxis, a, b, f1, f2, inside_box, inside_cyl):
    """(ER): the common normals of the edge ``a b`` (outward face normals ``f1``, ``f2``) and
    the rim circle ``c + R(cos θ e1 + sin θ e2)`` (cap normal ``zaxis``) where the two cross
    inside each other: ``[(δ, n, x_C, x_T)]``.  The squared distance of the circle's point from
    the edge's line is a trigonometric polynomial of degree 2 in θ: its minima are bracketed by
    :data:`_NRIM` samples and refined by Newton's method on its derivative."""
    R = cyl.radius
    d = b - a
    ln = math.sqrt(d @ d)
    d = d / ln

    def perp(x):
        return x - (x @ d) * d

    q0, q1, q2 = perp(c - a), R * perp(e1), R * perp(e2)
    k11, k22, k12 = q1 @ q1, q2 @ q2, q1 @ q2
    k01, k02 = q0 @ q1, q0 @ q2
    th = np.linspace(0.0, 2.0 * math.pi, _NRIM, endpoint=False)
    co, si = np.cos(th), np.sin(th)
    g = k11 * co * co + k22 * si * si + 2.0 * (k01 * co + k02 * si + k12 * si * co)
    out = []
    step = 2.0 * math.pi / _NRIM
    tol = 1e-9 * (R + ln)
    for k in np.flatnonzero((g <= np.roll(g, 1)) & (g < np.roll(g, -1))):
        t = th[k]
        for _ in range(30):
            s2, c2, s1, c1 = math.sin(2 * t), math.cos(2 * t), math.sin(t), math.cos(t)
            g1 = (k22 - k11) * s2 + 2.0 * k12 * c2 - 2.0 * k01 * s1 + 2.0 * k02 * c1
            g2 = 2.0 * (k22 - k11) * c2 - 4.0 * k12 * s2 - 2.0 * k01 * c1 - 2.0 * k02 * s1
            if g2 <= 0.0:
                break
            dt = g1 / g2
            t -= dt
            if abs(dt) <= 1e-15:
                break
        if not (g2 > 0.0 and abs(t - th[k]) <= step):
            continue
        xT = c + R * (math.cos(t) * e1 + math.sin(t) * e2)
        s = (xT - a) @ d
        if not 1e-9 * ln < s < (1.0 - 1e-9) * ln:
            continue
        xC = a + s * d
        v = xT - xC
        dist = math.sqrt(v @ v)
        if dist <= 1e-15:
            continue
        n = v / dist
        u = (xT - c) / R
        if (n @ u < -1e-9 or n @ zaxis < -1e-9 or n @ f1 > 1e-9 or n @ f2 > 1e-9
                or inside_box(xT) > tol or inside_cyl(xC) > tol):
            continue
        out.append((dist, n, xC, xT))
    return out


def box_cylinder_manifold(A: Box, gA: np.ndarray, cyl: Cylinder, gT: np.ndarray):
    """The manifold of the chaser box ``A`` at ``gA`` against the target cylinder ``cyl`` at
    ``gT`` (module docstring: (V), (S), (ER), (R)): ``(deepest, points)``."""
    RT, cT = gT[:3, :3], gT[:3, 3]
    RA, cA = gA[:3, :3], gA[:3, 3]
    axis = RT[:, 2]
    h, R = 0.5 * cyl.length, cyl.radius

    def sd_cyl(x):
        phi, g = cyl.signed_distance(RT.T @ (x - cT))
        return phi, RT @ g

    def sd_box(x):
        return A.signed_distance(RA.T @ (x - cA))[0]

    cands = []                                 # (δ, n, p)
    corners = box_corners(A, gA)
    for v in corners:                          # (V)
        phi, g = sd_cyl(v)
        cands.append((-phi, g, v + (-0.5 * phi) * g))
    for i, j in BOX_EDGES:
        a, b = corners[i], corners[j]
        if _seg_seg_distance(a, b - a, cT - h * axis, 2.0 * h * axis) >= R:
            continue
        side = _edge_side(cyl, cT, axis, a, b)  # (S)
        if side is not None:
            dl, n, x = side
            cands.append((dl, n, x + 0.5 * dl * n))
        k_e = int(np.flatnonzero(_SIGNS[i] != _SIGNS[j])[0])
        f1, f2 = (_SIGNS[i][k] * RA[:, k] for k in range(3) if k != k_e)
        for zs in (-1.0, 1.0):                 # (ER)
            c = cT + zs * h * axis
            for dl, n, xC, xT in _edge_rim(cyl, c, RT[:, 0], RT[:, 1], zs * axis, a, b, f1, f2,
                                           sd_box, lambda x: sd_cyl(x)[0]):
                cands.append((dl, n, 0.5 * (xC + xT)))
    for zs in (-1.0, 1.0):                     # (R)
        c = cT + zs * h * axis
        for k in range(3):
            m = RA[:, k]
            u = m - (m @ axis) * axis
            un = math.sqrt(u @ u)
            u = u / un if un > 1e-12 else RT[:, 0]
            for w in (c + R * u, c - R * u):
                phi, g = A.signed_distance(RA.T @ (w - cA))
                if phi < 0.0 and abs(g[k]) == 1.0:
                    n = -(RA @ g)
                    cands.append((-phi, n, w + (0.5 * phi) * n))
                else:
                    cands.append((min(-phi, 0.0), -(RA @ g), w))
    deepest = max(cands, key=lambda q: q[0])
    return deepest, [q for q in cands if q[0] > 0.0]
