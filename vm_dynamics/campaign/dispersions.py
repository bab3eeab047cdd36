"""A dispersions file: which scenario parameters a campaign perturbs, and how.

YAML (every section optional; values are distributions, :mod:`.distributions`)::

    seed: 2026                      # the campaign's seed; run k uses SeedSequence(seed, spawn_key=(k,))
    runs: 1000                      # default number of runs
    success: "attitude_max_deg < 10 and tracking_error_final < 0.05"   # see .metrics
    dispersions:
      mass:        {vehicle: D, link3: D, "*": D}   # factor (mode scale) or kg (mode add)
      com:         {vehicle: D}                     # m, added on each axis of the link frame
      inertia:     {"*": D}                          # factor on each principal second moment
      hydrodynamics: {linear_damping: D, quadratic_damping: D, added_mass: D,
                      buoyancy_force: D, current: D, center_of_buoyancy: D}
      initial:     {base_position: D, base_orientation: D, base_twist: D, tumble: D,
                    joint_positions: D, joint_velocities: D}
      controller:  {kp: D, kd: D, ...}               # any numeric gain: factor (mode scale)
      sensor_noise: {joint_positions: S, joint_velocities: S, base_twist: S,
                     base_position: S, base_orientation: S}   # S: white-noise std, number or D

A distribution may carry ``mode: scale | add | set`` (defaults: ``scale`` for mass, inertia,
hydrodynamic coefficients and gains; ``add`` for CoM, initial state, current and centre of
buoyancy).  ``"*"`` under mass/com/inertia disperses every body independently.  Vectors get one
independent sample per component.  ``tumble`` adds a random angular velocity (rad/s, vehicle
frame); ``base_orientation`` a random rotation vector (rad).

Mass properties stay physical: a mass factor scales the body's density (mass and inertia about
the CoM together), an inertia factor multiplies the principal values of the second-moment
matrix ``Σ = ½ tr(I) 1 − I`` (so ``I`` stays positive definite and satisfies the triangle
inequality), and a factor or mass that would not be positive is an error naming the key.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .distributions import Distribution, parse_distribution

__all__ = ["Dispersions", "Entry", "load_dispersions", "parse_dispersions", "SECTIONS", "did_you_mean"]

#: The sections of ``dispersions`` and, per section, its fixed keys (None: link names).
SECTIONS = {
    "mass": None, "com": None, "inertia": None,
    "hydrodynamics": ("linear_damping", "quadratic_damping", "added_mass", "buoyancy_force",
                      "current", "center_of_buoyancy"),
    "initial": ("base_position", "base_orientation", "base_twist", "tumble", "joint_positions",
                "joint_velocities"),
    "controller": (),          # open: the scenario's numeric controller parameters
    "sensor_noise": ("joint_positions", "joint_velocities", "base_twist", "base_position",
                     "base_orientation"),
}
_DEFAULT_MODE = {"mass": "scale", "com": "add", "inertia": "scale", "hydrodynamics": "scale",
                 "initial": "add", "controller": "scale", "sensor_noise": "set"}
_ADDITIVE_HYDRO = ("current", "center_of_buoyancy")
_TOP = ("seed", "runs", "success", "dispersions")
_UNSUPPORTED = {
    "delay": "vm.simulate has no input or measurement delay (delays exist in the ROS nodes "
             "only: controller_node's command timeout); remove it",
    "delays": "vm.simulate has no input or measurement delay (delays exist in the ROS nodes "
              "only); remove it",
}


@dataclass(frozen=True)
class Entry:
    """One dispersed target: ``section``, ``name`` (link, field or gain), its distribution or
    constant (sensor noise), the mode, and the file key (for messages)."""

    section: str
    name: str
    dist: Distribution | float
    mode: str
    key: str


@dataclass(frozen=True)
class Dispersions:
    """A parsed dispersions file: ``seed``, default ``runs``, ``success`` (expression or
    None), and the entries in file order (the order samples are drawn in)."""

    seed: int
    runs: int | None = None
    success: str | None = None
    entries: tuple = ()
    source: str = "<dispersions>"
    raw: dict = field(default_factory=dict, compare=False)

    def rng(self, k: int) -> np.random.Generator:
        """Run ``k``'s generator of dispersed values: ``SeedSequence(seed).spawn(N)[k]``."""
        return np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(k,)))

    def noise_rng(self, k: int) -> np.random.Generator:
        """Run ``k``'s generator of sensor noise (independent of the dispersed values)."""
        return np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(k, 1)))


def did_you_mean(name, valid) -> str:
    """' (did you mean \'x\'?)' with the nearest of ``valid`` to ``name``, or ''."""
    near = difflib.get_close_matches(str(name), list(valid), n=1, cutoff=0.5)
    return f" (did you mean {near[0]!r}?)" if near else ""


def load_dispersions(path) -> Dispersions:
    """Read and check a dispersions YAML file (bounded, no aliases); ``ValueError`` naming
    the file and the key.  A bare name (``spacecraft_arm``) is a shipped file,
    ``config/dispersions/<name>.yaml`` of the share directory."""
    from ..core.bounded_yaml import load_yaml_file
    path = Path(path)
    if not path.is_file() and not path.suffix and len(path.parts) == 1:
        from ..config.scenario import share_dir
        shipped = share_dir() / "config" / "dispersions" / f"{path}.yaml"
        path = shipped if shipped.is_file() else path
    if not path.is_file():
        raise ValueError(f"dispersions file not found: {str(path)!r}")
    doc = load_yaml_file(path, 1024 * 1024)
    try:
        return parse_dispersions(doc, source=str(path))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def parse_dispersions(doc, source: str = "<dispersions>") -> Dispersions:
    """A :class:`Dispersions` from the file's mapping (see the module docstring)."""
    if not isinstance(doc, dict):
        raise ValueError("expected a mapping with 'seed' and 'dispersions'")
    for key in doc:
        if key in _UNSUPPORTED:
            raise ValueError(f"{key}: {_UNSUPPORTED[key]}")
        if key not in _TOP:
            raise ValueError(f"{key}: unknown key{did_you_mean(key, _TOP)}; valid: {', '.join(_TOP)}")
    seed = doc.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected an integer >= 0, got {seed!r:.60}")
    runs = doc.get("runs")
    if runs is not None and (isinstance(runs, bool) or not isinstance(runs, int) or runs < 1):
        raise ValueError(f"runs: expected an integer >= 1, got {runs!r:.60}")
    success = doc.get("success")
    if success is not None and not isinstance(success, str):
        raise ValueError(f"success: expected an expression (string), got {success!r:.60}")
    if success is not None:
        from .metrics import check_expression
        check_expression(success, "success")
    sections = doc.get("dispersions") or {}
    if not isinstance(sections, dict):
        raise ValueError("dispersions: expected a mapping of sections")
    entries = []
    for section, body in sections.items():
        entries.extend(_section_entries(section, body))
    return Dispersions(seed=seed, runs=runs, success=success, entries=tuple(entries),
                       source=source, raw=dict(doc))


def _section_entries(section, body) -> list:
    if section in _UNSUPPORTED:
        raise ValueError(f"dispersions.{section}: {_UNSUPPORTED[section]}")
    if section not in SECTIONS:
        raise ValueError(f"dispersions.{section}: unknown parameter kind"
                         f"{did_you_mean(section, SECTIONS)}; valid: {', '.join(SECTIONS)}")
    if not isinstance(body, dict) or not body:
        raise ValueError(f"dispersions.{section}: expected a mapping of targets to distributions")
    fixed = SECTIONS[section]
    out = []
    for name, spec in body.items():
        key = f"dispersions.{section}.{name}"
        if fixed and name not in fixed:
            raise ValueError(f"{key}: unknown parameter{did_you_mean(name, fixed)}; {section} takes "
                             f"{', '.join(fixed)}")
        mode = spec.get("mode", _DEFAULT_MODE[section]) if isinstance(spec, dict) else "set"
        if section == "hydrodynamics" and name in _ADDITIVE_HYDRO and isinstance(spec, dict):
            mode = spec.get("mode", "add")
        if mode not in ("scale", "add", "set"):
            raise ValueError(f"{key}.mode: expected scale, add or set, got {mode!r:.40}")
        if section == "sensor_noise" and not isinstance(spec, dict):
            if isinstance(spec, bool) or not isinstance(spec, (int, float)) or not spec >= 0:
                raise ValueError(f"{key}: expected a noise standard deviation >= 0 or a "
                                 f"distribution of it, got {spec!r:.60}")
            out.append(Entry(section, str(name), float(spec), "set", key))
            continue
        dist = parse_distribution(spec, key)
        lo, _ = dist.support()
        if mode == "scale" and section in ("mass", "inertia") and not (
                lo > 0 or dist.kind == "lognormal" and dist.get("median", 1.0) > 0):
            raise ValueError(f"{key}: the {section} factor must stay > 0, but {dist.kind} can "
                             f"give {lo:g} or less; use lognormal, or a truncated_normal/uniform "
                             f"with low > 0")
        out.append(Entry(section, str(name), dist, mode, key))
    return out
