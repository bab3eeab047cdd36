"""Hybrid dynamics from Python: some joints kinematically driven, the vehicle and the others
free (:mod:`.kernels.hybrid`, Featherstone 2008 §9.2), and the velocity jump of the driven
joints at constant configuration.

Same conventions as :func:`vm_dynamics.dynamics.fast.forward_dynamics`; ``driven`` is a
boolean mask over the model's joints (:func:`driven_mask` makes one from names or indices).
Models with mimic joints are not supported (their driven set would have to follow the
coupling).
"""
from __future__ import annotations

import numpy as np

from ...core.validation import MAX_COORDINATE, MAX_MAGNITUDE, as_pose, as_vector

__all__ = ["driven_mask", "frame_arrays", "hybrid_dynamics", "driven_impulse"]

_STATUS = {1: "the vehicle pose is not a rigid transform",
           2: "the result is not finite (NaN/Inf)",
           3: "singular articulated inertia"}


def driven_mask(model, joints) -> np.ndarray:
    """Boolean mask (n) of the joints ``joints`` (joint names of ``model`` or indices in its
    coordinates); ``ValueError`` naming an unknown, out-of-range or repeated entry."""
    names = list(model.joint_names)
    mask = np.zeros(model.n, dtype=np.bool_)
    for j in joints:
        if isinstance(j, str):
            if j not in names:
                raise ValueError(f"driven_joints: unknown joint {j!r}; joints are "
                                 f"{', '.join(names)}")
            i = names.index(j)
        elif isinstance(j, (int, np.integer)) and not isinstance(j, bool):
            i = int(j)
            if not 0 <= i < model.n:
                raise ValueError(f"driven_joints: index {i} out of range 0..{model.n - 1}")
        else:
            raise ValueError(f"driven_joints: expected joint names or indices, got {j!r}")
        if mask[i]:
            raise ValueError(f"driven_joints: joint {names[i]!r} given twice")
        mask[i] = True
    return mask


def _kernels():
    """The hybrid kernels: compiled with numba, else the same functions as plain Python."""
    from .kernels import hybrid
    return hybrid


def frame_arrays(fm, frame_wrenches):
    """``(bodies (m,), wrenches (m, 6))`` of ``{frame: [f; n]}`` on the bodies of the
    :class:`~.model.FastModel` ``fm``, mapped by ``Ad(ḡ_frame)⁻ᵀ`` (as its forward dynamics)."""
    if not frame_wrenches:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 6))
    if not isinstance(frame_wrenches, dict):
        raise ValueError("frame_wrenches: expected a dict {frame name: 6-vector wrench}")
    bodies, ws = [], []
    for name, w in frame_wrenches.items():
        if name not in fm.frames:
            raise ValueError(f"frame_wrenches: unknown frame {name!r}; frames are "
                             f"{', '.join(fm.frames)}")
        body, T = fm.frames[name]
        bodies.append(body)
        ws.append(T @ as_vector(w, 6, f"frame_wrenches[{name!r}]", limit=MAX_MAGNITUDE))
    return np.array(bodies, dtype=np.int64), np.ascontiguousarray(np.stack(ws))


def _constants(model):
    from .functions import fast_model
    fm = fast_model(model)
    if fm.coupled:
        raise ValueError(f"hybrid dynamics: model {model.name!r} has mimic joints (not "
                         "supported)")
    return fm


def _mask(driven, n):
    d = np.asarray(driven)
    if d.shape != (n,) or d.dtype != np.bool_:
        raise ValueError(f"driven: expected a boolean mask of {n} joints, got "
                         f"{d.dtype} array of shape {d.shape}")
    return np.ascontiguousarray(d)


def hybrid_dynamics(model, g, V, q, qd, tau, qdd, driven, base_wrench=None,
                    frame_wrenches=None):
    """``(V̇, q̈, τ)``: the vehicle's acceleration, every joint's acceleration (``qdd[j]`` at
    the driven joints) and every joint's effort (the effort realising ``qdd[j]`` at the driven
    joints, ``tau[j]`` at the free ones), with ``base_wrench`` (b, vehicle frame) and
    ``frame_wrenches`` as in forward dynamics and gravity.  Entries of ``tau`` at driven joints
    and of ``qdd`` at free joints are not read (they must still be finite)."""
    fm = _constants(model)
    n, b = fm.n, fm.b
    g = as_pose(g, "g")
    V = as_vector(V, b, "V", limit=MAX_MAGNITUDE)
    q = as_vector(q, n, "q", limit=MAX_COORDINATE)
    qd, tau, qdd = (as_vector(x, n, nm, limit=MAX_MAGNITUDE)
                    for x, nm in ((qd, "qd"), (tau, "tau"), (qdd, "qdd")))
    bw = np.zeros(b) if base_wrench is None else \
        as_vector(base_wrench, b, "base_wrench", limit=MAX_MAGNITUDE)
    fb, fw = frame_arrays(fm, frame_wrenches)
    out, eff = np.empty(b + n), np.empty(n)
    st = _kernels().hybrid_dynamics(fm.kernel_constants, g, V, q, qd, tau, qdd,
                                      _mask(driven, n), bw, fb, fw, out, eff)
    if st:
        raise ValueError("hybrid_dynamics: " + _STATUS.get(int(st), f"status {st}"))
    return out[:b], out[b:], eff


def driven_impulse(model, q, dqd, driven):
    """``(ΔV, Δq̇)``: the jumps of the vehicle twist and of every joint velocity (``dqd[j]`` at
    the driven joints) when the driven joints' velocities jump by ``dqd`` at the configuration
    ``q`` with no impulse on the vehicle or the free joints (the total momentum is unchanged).
    Entries of ``dqd`` at free joints are not read."""
    fm = _constants(model)
    n, b = fm.n, fm.b
    q = as_vector(q, n, "q", limit=MAX_COORDINATE)
    dqd = as_vector(dqd, n, "dqd", limit=MAX_MAGNITUDE)
    out, eff = np.empty(b + n), np.empty(n)
    st = _kernels().driven_impulse(fm.kernel_constants, q, dqd, _mask(driven, n), out, eff)
    if st:
        raise ValueError("driven_impulse: " + _STATUS.get(int(st), f"status {st}"))
    return out[:b], out[b:]
