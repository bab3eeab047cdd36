"""The force-element seam: every external effect on the system is one :class:`ForceElement`.

An element knows, for a state ``(g, V, q)``:

* its wrenches (:meth:`ForceElement.wrenches`): a vehicle wrench (b-vector of the vehicle's
  subgroup, body frame ``[f; n]``) and frame wrenches ``{frame: [f; n]}`` (frame axes, at the
  frame's origin), as :meth:`vm_dynamics.Model.forward_dynamics` takes them;
* its potential energy if it is conservative (:attr:`ForceElement.conservative`): the engine then
  counts it in the energy and not in the work of the applied wrenches, so the balance
  ``E − E₀ = W`` stays exact;
* its compiled counterpart (:meth:`ForceElement.compiled`): one row of its kind's parameter
  record, evaluated inside every compiled RK stage by the dispatcher of
  :mod:`vm_dynamics.forces.kernels`.

Uniform gravity is an element (:class:`~vm_dynamics.forces.gravity.UniformGravity`) whose
compiled form is the model's gravity vector: :func:`~vm_dynamics.forces.gravity.fold_gravity`
folds it into the model, whose recursions apply it exactly as a fictitious acceleration of the
root and whose energy kernels hold its potential.  Added mass is a model property
(:meth:`~vm_dynamics.Model.with_added_vehicle_inertia`).

:func:`total_wrenches` is the one place where the inputs and the elements' wrenches are merged.
"""
from __future__ import annotations

from typing import ClassVar, Iterable

import numpy as np

__all__ = ["ForceElement", "total_wrenches", "vehicle_wrench", "potential_energy",
           "as_elements"]


class ForceElement:
    """One external effect (see the module docstring).  Subclasses set :attr:`kind` (the field
    of :class:`vm_dynamics.forces.registry.Forces` holding their compiled parameters) and
    implement :meth:`wrenches` and :meth:`compiled`; conservative ones set
    :attr:`conservative` and implement :meth:`potential_energy`."""

    kind: ClassVar[str] = ""
    conservative: ClassVar[bool] = False
    #: False if :meth:`wrenches` never returns frame wrenches (a vehicle wrench only)
    acts_on_frames: ClassVar[bool] = True
    #: True if the element keeps the system in orbit (a lasting central force at orbital
    #: speed): ``formulation="auto"`` then integrates the velocity
    #: (:func:`vm_dynamics.sim.records.choose_formulation` says why)
    orbital: ClassVar[bool] = False
    #: the parameter names of :meth:`from_config` besides ``kind`` (the configuration reader
    #: rejects any other key, suggesting the nearest)
    parameters: ClassVar[tuple] = ()

    def key(self) -> tuple:
        """What makes two elements the same effect (equality and hash; default: identity).
        A compiled law compensates the engine's elements only if they are equal."""
        return (id(self),)

    def __eq__(self, other):
        return type(other) is type(self) and other.key() == self.key()

    def __hash__(self):
        return hash((type(self).__name__, self.key()))

    def wrenches(self, model, g: np.ndarray, V: np.ndarray, q: np.ndarray
                 ) -> tuple[np.ndarray | None, dict]:
        """``(vehicle b-vector or None, {frame: [f; n]})`` acting at the state."""
        raise NotImplementedError

    def vehicle_wrench(self, model, g: np.ndarray, V: np.ndarray, q: np.ndarray):
        """The vehicle part of :meth:`wrenches` alone (b-vector or None); elements override it
        when the frame part is costly."""
        return self.wrenches(model, g, V, q)[0]

    def potential_energy(self, model, g: np.ndarray, q: np.ndarray) -> float:
        """Potential energy at ``(g, q)`` (0 for non-conservative elements)."""
        return 0.0

    @classmethod
    def from_config(cls, spec: dict, where: str) -> "ForceElement":
        """The element from its scenario/node parameters ``spec`` (a mapping; ``where`` names
        it in errors); kinds that are not configured this way raise ``ValueError``."""
        raise ValueError(f"{where}: kind {cls.kind!r} is not configured by parameters")

    def compiled(self, model) -> tuple | None:
        """This element's row(s) of its kind's parameter record (numpy arrays, leading
        dimension the number of rows), or None when its compiled form is a model constant
        (uniform gravity: the model's gravity vector)."""
        raise NotImplementedError


def as_elements(forces=None, environment=None) -> tuple:
    """The elements of ``forces`` (an iterable of :class:`ForceElement`, or None) followed by
    those of ``environment`` (a :class:`~vm_dynamics.model.hydrodynamics.Hydrodynamics`, the
    compatibility path: its damping and buoyancy become elements).  Anything else is a
    ``ValueError`` naming the argument."""
    from ..model.hydrodynamics import Hydrodynamics
    out = []
    if forces is not None:
        if isinstance(forces, ForceElement) or not isinstance(forces, Iterable):
            raise ValueError(f"forces: expected a list of force elements, got "
                             f"{type(forces).__name__}")
        for i, e in enumerate(forces):
            if not isinstance(e, ForceElement):
                raise ValueError(f"forces[{i}]: expected a force element (vm_dynamics.forces), "
                                 f"got {type(e).__name__}")
            out.append(e)
    if environment is not None:
        if not isinstance(environment, Hydrodynamics):
            raise ValueError(f"environment: expected a Hydrodynamics (vm_dynamics.model."
                             f"hydrodynamics) or None, got {type(environment).__name__}")
        from .hydrodynamics import hydrodynamics_elements
        out.extend(hydrodynamics_elements(environment))
    return tuple(out)


def total_wrenches(model, elements, g, V, q, base_wrench=None, frame_wrenches=None
                   ) -> tuple[np.ndarray, dict]:
    """The applied ``base_wrench`` (b, or None) and ``frame_wrenches`` plus every element's
    wrenches at ``(g, V, q)``: ``(b-vector, {frame: [f; n]})``.  The one merge of inputs and
    external effects (engine reference stages, controllers' compensation, the interaction with
    a real arm, vm-sim's balance)."""
    bw = np.zeros(model.b) if base_wrench is None else np.array(base_wrench, dtype=float)
    frames = dict(frame_wrenches or {})
    for e in elements:
        w0, wf = e.wrenches(model, g, V, q)
        if w0 is not None:
            bw = bw + w0
        for name, w in wf.items():
            frames[name] = frames.get(name, 0.0) + w
    return bw, frames


def vehicle_wrench(model, elements, g, V, q) -> np.ndarray:
    """The vehicle part (b-vector) of the elements' wrenches alone."""
    bw = np.zeros(model.b)
    for e in elements:
        w0 = e.vehicle_wrench(model, g, V, q)
        if w0 is not None:
            bw = bw + w0
    return bw


def potential_energy(model, elements, g, q) -> float:
    """Sum of the conservative elements' potential energies at ``(g, q)``."""
    return float(sum(e.potential_energy(model, g, q) for e in elements if e.conservative))
