"""Run k's plant: the nominal scenario with run k's dispersed values applied.

:func:`check_targets` checks a :class:`~.dispersions.Dispersions` against a loaded scenario
once (link names, controller gains, what the vehicle group allows), :func:`disperse` draws
run k's values from its own generator and builds a :class:`DispersedRun`: the plant model, the
initial state, the controller section, the force elements, the sensor noise and the drawn
values by name (the report's scatter plots).  The controller keeps the nominal model (what
it knows); the plant is the dispersed one.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..config.sections import InitialState
from ..core import lie
from .dispersions import Dispersions, did_you_mean

__all__ = ["DispersedRun", "check_targets", "disperse"]

_AXES = ("x", "y", "z")


@dataclass
class DispersedRun:
    """What run ``k`` simulates: ``model`` (plant), ``initial``, ``controller`` (section),
    ``forces``, ``hydrodynamics``, ``noise`` ``{state field: std}`` and ``values``
    ``{name: drawn sample}`` in draw order (the factor of a ``scale`` entry, the offset of an
    ``add`` entry, the value of a ``set`` entry; vectors one name per component)."""

    k: int
    model: object
    initial: InitialState
    controller: dict | None
    forces: tuple
    hydrodynamics: object
    noise: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)


def _bodies(scn, entry) -> list[int]:
    names = scn.model.link_names
    if entry.name == "*":
        return [k for k in range(len(names)) if scn.model.mass[k] > 0]
    if entry.name == "vehicle":
        return [0]
    return [names.index(entry.name)]


def check_targets(disp: Dispersions, scn) -> None:
    """``ValueError`` naming the key of the first target the scenario does not have."""
    model = scn.model
    names = list(model.link_names)
    for e in disp.entries:
        if e.section in ("mass", "com", "inertia"):
            if e.name not in names + ["vehicle", "*"]:
                raise ValueError(f"{e.key}: no link {e.name!r} in {model.name}"
                                 f"{did_you_mean(e.name, names + ['vehicle'])}; links: "
                                 f"{', '.join(names)}, vehicle, *")
            for k in (_bodies(scn, e) if e.name != "*" else []):
                if model.mass[k] <= 0:
                    raise ValueError(f"{e.key}: link {names[k]!r} has no mass to disperse")
        elif e.section == "hydrodynamics" and scn.hydrodynamics is None:
            raise ValueError(f"{e.key}: scenario {scn.name!r} has no hydrodynamics_file")
        elif e.section == "controller":
            section = scn.controller or {}
            numeric = [k for k, v in section.items() if _is_numeric(v)]
            if e.name not in numeric:
                raise ValueError(f"{e.key}: scenario {scn.name!r} has no numeric controller "
                                 f"parameter {e.name!r}{did_you_mean(e.name, numeric)}; it has "
                                 f"{', '.join(numeric) or 'none'}")
        elif e.section == "initial" and e.name in ("base_position", "base_orientation") \
                and model.base_type != "SE3":
            raise ValueError(f"{e.key}: only an SE3 vehicle is dispersed in pose (base_type "
                             f"{model.base_type}); disperse initial.base_twist instead")
        elif e.name == "tumble" and model.b == 0:
            raise ValueError(f"{e.key}: a fixed base cannot tumble")


def _is_numeric(v) -> bool:
    a = np.asarray(v)
    return a.dtype.kind in "if" and a.size > 0


def _draw(entry, rng, size, base):
    """``(new, x)``: ``size`` samples ``x`` of ``entry`` and ``base`` with them applied by its
    mode (times, plus or replaced)."""
    x = np.asarray(entry.dist.sample(rng, size), dtype=float)
    if entry.mode == "scale":
        return base * x, x
    if entry.mode == "add":
        return base + x, x
    return x, x


def _record(values, key, x, labels=None):
    x = np.atleast_1d(np.asarray(x, dtype=float))
    if x.size == 1:
        values[key] = float(x[0])
    else:
        for i, v in enumerate(x):
            values[f"{key}.{labels[i] if labels and i < len(labels) else i}"] = float(v)


class _MassProperties:
    """The bodies' (mass, CoM, rotational inertia about the CoM) in the vehicle frame at home,
    read from the model, changed, and written back as spatial inertias."""

    def __init__(self, model, added):
        self.model = model
        self.added = added
        mats = [model.vehicle_inertia - added] + list(model.body_inertia_home)
        self.m, self.c, self.I = [], [], []
        for M in mats:
            m = float(M[0, 0])
            c = lie.unskew(M[3:, :3]) / m if m > 0 else np.zeros(3)
            C = lie.skew(c)
            self.m.append(m)
            self.c.append(c)
            self.I.append(M[3:, 3:] + m * C @ C)

    def scale_mass(self, k, factor):
        self.m[k] *= factor
        self.I[k] = self.I[k] * factor          # the same shape, denser

    def scale_second_moments(self, k, factors):
        I = self.I[k]
        S = 0.5 * np.trace(I) * np.eye(3) - I   # Σ = ∫ r rᵀ dm: PSD iff I is physical
        w, R = np.linalg.eigh(0.5 * (S + S.T))
        S = (R * (np.clip(w, 0.0, None) * factors)) @ R.T
        self.I[k] = np.trace(S) * np.eye(3) - S

    def model_with(self, added):
        from ..model.urdf import spatial_inertia
        model = copy.copy(self.model)
        mats = [spatial_inertia(m, c, I) for m, c, I in zip(self.m, self.c, self.I)]
        model.vehicle_inertia = mats[0] + added
        model.body_inertia_home = np.array(mats[1:]).reshape(self.model.body_inertia_home.shape)
        model.mass = np.array(self.m)
        com = self.model.com_home.copy()
        for k, m in enumerate(self.m):
            if m > 0:
                com[k] = self.c[k]
        model.com_home = com
        if added is not self.added:
            model.added_vehicle_inertia = added
        return model


def _mass_entry(e, rng, props, scn, values):
    names = scn.model.link_names
    for k in _bodies(scn, e):
        label = f"{e.section}.{names[k]}"
        if e.section == "mass":
            new, x = _draw(e, rng, None, props.m[k])
            if not new > 0:
                raise ValueError(f"{e.key}: drew a mass {new:g} kg <= 0 for link {names[k]!r}")
            props.scale_mass(k, new / props.m[k])
            _record(values, label, x)
        elif e.section == "com":
            R = scn.model.home[k, :3, :3]
            if e.mode != "add":
                raise ValueError(f"{e.key}: a CoM is dispersed by offsets (mode add)")
            offset = _draw(e, rng, 3, np.zeros(3))[1]
            props.c[k] = props.c[k] + R @ offset
            _record(values, label, offset, _AXES)
        else:
            f = np.asarray(e.dist.sample(rng, 3), dtype=float)
            if e.mode != "scale" or not np.all(f > 0):
                raise ValueError(f"{e.key}: inertia takes positive factors (mode scale); drew "
                                 f"{f}")
            props.scale_second_moments(k, f)
            _record(values, label, f, ("s1", "s2", "s3"))


def _hydro_entry(e, rng, hydro, values):
    name = e.name
    base = getattr(hydro, name)
    if name == "added_mass":
        f = _draw(e, rng, 6, np.ones(6))[0]
        if not np.all(f >= 0):
            raise ValueError(f"{e.key}: added-mass factors must be >= 0; drew {f}")
        d = np.sqrt(f)
        new = base * np.outer(d, d)       # D A D: stays symmetric positive semi-definite
        _record(values, f"hydrodynamics.{name}", f)
    elif name == "buoyancy_force":
        new, x = _draw(e, rng, None, float(base))
        new = float(new)
        _record(values, f"hydrodynamics.{name}", x)
    else:
        new, x = _draw(e, rng, np.size(base), np.asarray(base, dtype=float))
        if name.endswith("damping") and not np.all(new >= 0):
            raise ValueError(f"{e.key}: damping must stay >= 0 (dissipative); drew {new}")
        _record(values, f"hydrodynamics.{name}", x)
    return dataclasses.replace(hydro, **{name: new})


def _initial_entry(e, rng, model, state, values):
    g, V, q, qd = state
    key = f"initial.{e.name}"
    if e.name == "base_position":
        g = g.copy()
        g[:3, 3], x = _draw(e, rng, 3, g[:3, 3])
        _record(values, key, x, _AXES)
    elif e.name == "base_orientation":
        w = np.asarray(e.dist.sample(rng, 3), dtype=float)
        g = g.copy()
        g[:3, :3] = g[:3, :3] @ lie.so3_exp(w)
        _record(values, key, w, _AXES)
    elif e.name == "tumble":
        w = np.asarray(e.dist.sample(rng, 3), dtype=float)
        V = V + model.group.iota.T @ np.concatenate([np.zeros(3), w])
        _record(values, key, w, _AXES)
    else:
        arr = {"base_twist": V, "joint_positions": q, "joint_velocities": qd}[e.name]
        new, x = _draw(e, rng, arr.size, arr)
        names = model.joint_names if e.name.startswith("joint") else None
        _record(values, key, x, names)
        V, q, qd = ((new, q, qd) if e.name == "base_twist" else
                    (V, new, qd) if e.name == "joint_positions" else (V, q, new))
    return g, V, q, qd


def disperse(disp: Dispersions, scn, k: int) -> DispersedRun:
    """Run ``k`` of a campaign over ``scn`` (see the module docstring); the values are drawn
    in file order from ``disp.rng(k)``, so the run depends only on the seed and ``k``."""
    rng = disp.rng(k)
    model = scn.model
    hydro = scn.hydrodynamics
    added = model.added_vehicle_inertia if model.added_vehicle_inertia is not None \
        else np.zeros((6, 6))
    props = _MassProperties(model, added)
    state = (scn.g0, scn.V0, scn.q0, scn.qd0)
    ctrl = dict(scn.controller) if scn.controller else None
    values, noise, touched = {}, {}, set()
    for e in disp.entries:
        touched.add(e.section)
        if e.section in ("mass", "com", "inertia"):
            _mass_entry(e, rng, props, scn, values)
        elif e.section == "hydrodynamics":
            hydro = _hydro_entry(e, rng, hydro, values)
        elif e.section == "initial":
            state = _initial_entry(e, rng, model, state, values)
        elif e.section == "controller":
            base = np.asarray(ctrl[e.name], dtype=float)
            new, x = _draw(e, rng, base.size if base.ndim else None, base)
            ctrl[e.name] = float(new) if np.ndim(new) == 0 else [float(v) for v in new]
            _record(values, f"controller.{e.name}", x)
        else:
            std = e.dist if isinstance(e.dist, float) else abs(float(e.dist.sample(rng)))
            noise[e.name] = std
            _record(values, f"sensor_noise.{e.name}", std)
    new_added = hydro.added_mass if hydro is not None and "hydrodynamics" in touched else added
    plant = props.model_with(new_added) if touched & {"mass", "com", "inertia", "hydrodynamics"} \
        else model
    forces = scn.forces
    if hydro is not scn.hydrodynamics:
        from ..forces.hydrodynamics import hydrodynamics_elements
        nominal = len(hydrodynamics_elements(scn.hydrodynamics))
        forces = tuple(forces[:len(forces) - nominal]) + tuple(hydrodynamics_elements(hydro))
    g, V, q, qd = state
    return DispersedRun(k=k, model=plant, initial=InitialState(g=g, V=V, q=q, qd=qd),
                        controller=ctrl, forces=forces, hydrodynamics=hydro, noise=noise,
                        values=values)
