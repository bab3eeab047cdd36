"""The external effects of a scenario or node configuration: one reader for ``vm-sim`` and both
nodes (:func:`model_forces`), so that they simulate and compensate the same force elements.

The sections it reads (nested, or ROS 2's flat dotted names):

* ``forces`` — the force elements (:data:`vm_dynamics.forces.ELEMENTS`), each a ``kind`` and
  that kind's parameters: a mapping of names to elements, the form a ROS 2 parameter file can
  hold (``forces: {tether: {kind: spring, frame: ee_link, ...}}``, i.e. the parameters
  ``forces.tether.kind`` ...); from Python or ``vm-sim -p`` overrides also a list of them;
* ``two_body`` — ``{mu, gradient}``: a two_body element (``mu`` 0: none);
* ``gravity`` — the model's uniform gravity, into which a ``uniform_gravity`` element folds
  (:func:`vm_dynamics.forces.fold_gravity`: the element sets it when ``gravity`` is
  ``[0, 0, 0]``, agrees with it when equal, and is an error otherwise);
* ``hydrodynamics_file`` — added mass (into the model), damping and buoyancy (elements).

Every error is one line naming the parameter (``forces.tether.stifness: ...``), with the
nearest valid name when there is one.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core.paramtree import flatten, unflatten

__all__ = ["model_forces"]


def _section(p: Mapping[str, Any], name: str) -> dict:
    """The nested section ``name`` of flat ``p``, without unset (None) values."""
    return unflatten({k: v for k, v in p.items() if v is not None}, name)


def _configured(p: Mapping[str, Any]) -> tuple[list, list]:
    """``(elements, labels)`` of the ``forces`` and ``two_body`` sections of flat ``p``."""
    from ..forces.registry import config_items, element_from_config
    listed, named = p.get("forces"), _section(p, "forces")
    if listed not in (None, []) and named:
        raise ValueError("forces: give the elements as a list or by name, not both")
    items = config_items(listed if listed not in (None, []) else named)
    elements = [element_from_config(spec, label) for label, spec in items]
    labels = [label for label, _ in items]
    two = _section(p, "two_body")
    if two and two.get("mu", 0.0) != 0.0:
        elements.append(element_from_config({"kind": "two_body", **two}, "two_body"))
        labels.append("two_body")
    return elements, labels


def model_forces(model, params: Mapping[str, Any], folders=()) -> tuple:
    """``(model, elements, hydrodynamics)`` of a configuration (module docstring): the model
    with a ``uniform_gravity`` element folded into its gravity and the hydrodynamic added mass
    added, the force elements acting on it (those of ``forces`` and ``two_body``, then the
    hydrodynamics'), and the hydrodynamics (None without ``hydrodynamics_file``; relative
    file names are looked up in ``folders`` first).  The elements are checked against the
    model (unknown frames and links)."""
    from ..forces import compile_forces, fold_gravity, hydrodynamics_elements
    from ..model.hydrodynamics import load_hydrodynamics
    from .scenario import find_file
    p = flatten(params)
    elements, labels = _configured(p)
    model, elements = fold_gravity(model, elements, labels)
    hydro = None
    if p.get("hydrodynamics_file"):
        path = find_file(p["hydrodynamics_file"], "hydrodynamics_file", folders)
        hydro = load_hydrodynamics(path, gravity_magnitude=float(np.linalg.norm(model.gravity)))
        missing = [k for k in hydro.link_buoyancy if k not in model.frame_body]
        if missing:
            raise ValueError(f"hydrodynamics_file: links {missing} are not in the URDF")
        model = model.with_added_vehicle_inertia(hydro.added_mass)
        elements = elements + tuple(hydrodynamics_elements(hydro))
    compile_forces(model, elements)           # unknown frames or links surface now
    return model, elements, hydro
