"""Uniform gravity as a force element that folds into the model's gravity.

:class:`UniformGravity` ``(g)`` is the field of constant acceleration ``g`` (inertial frame,
m/s²): the weight ``m_k g`` of every body at its centre of mass, with the potential energy
``U = −Σ m_k gᵀ x_k`` (``x_k`` the inertial centre of mass).  Its wrenches and potential are
those of the element API (:meth:`UniformGravity.wrenches`, :meth:`~UniformGravity.potential_energy`),
but the engine does not evaluate them: as in Pinocchio, a uniform field is the model's
gravity vector, which the O(n) recursions apply exactly as a fictitious acceleration of the
root and whose potential the energy kernels hold.  :func:`fold_gravity` turns an element list
into ``(model with that gravity, the other elements)``; the engine, the controllers'
compensation and the configuration reader call it, so ``simulate(model_without_gravity,
forces=[UniformGravity(g)])`` and ``simulate(model_with_gravity_g)`` take the same compiled
steps (the same numbers, bit for bit).

One field, one value: the element sets the gravity of a model whose gravity is zero; a model
whose gravity already equals ``g`` is used as it is (the same field stated twice is not
doubled); any other model gravity is a ``ValueError`` naming both, as is a second
``uniform_gravity`` element.
"""
from __future__ import annotations

import copy
import weakref

import numpy as np

from ..core.validation import MAX_MAGNITUDE, as_vector
from .base import ForceElement

__all__ = ["UniformGravity", "fold_gravity", "with_gravity"]


class UniformGravity(ForceElement):
    """Uniform gravitational acceleration ``g`` (3-vector, inertial frame, m/s²)."""

    kind = "uniform_gravity"
    conservative = True
    parameters = ("g",)

    def __init__(self, g):
        self.g = as_vector(g, 3, "uniform_gravity g", limit=MAX_MAGNITUDE).copy()

    @classmethod
    def from_config(cls, spec: dict, where: str) -> "UniformGravity":
        """``{kind: uniform_gravity, g: [x, y, z]}``."""
        if "g" not in spec:
            raise ValueError(f"{where}: missing key 'g' (the acceleration [x, y, z], m/s^2)")
        try:
            return cls(spec["g"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None

    def key(self):
        return (self.g.tobytes(),)

    def __repr__(self):
        return f"UniformGravity({self.g.tolist()})"

    def _bodies(self, model, g, q):
        """``(body, link frame, mass, centre of mass in link-frame coordinates, inertial pose
        of the link frame)`` of each body with mass."""
        for k in np.flatnonzero(model.mass > 0):
            name = model.link_names[k]
            home = model.frame_home[name]
            c = home[:3, :3].T @ (model.com_home[k] - home[:3, 3])
            yield k, name, float(model.mass[k]), c, g @ model.frame_pose(q, name)

    def wrenches(self, model, g, V, q):
        """The weights: the vehicle's as its b-vector, each link's as a frame wrench
        ``[Rᵀ m g; c × Rᵀ m g]`` on its link frame."""
        bw, frames = None, {}
        for k, name, m, c, T in self._bodies(model, g, q):
            f = T[:3, :3].T @ (m * self.g)
            w = np.concatenate([f, np.cross(c, f)])
            if k == 0:
                bw = model.group.project(w)
            else:
                frames[name] = frames.get(name, 0.0) + w
        return bw, frames

    def potential_energy(self, model, g, q) -> float:
        """``−Σ m_k gᵀ x_k``, zero with every centre of mass at the inertial origin."""
        return float(-sum(m * (self.g @ (T[:3, :3] @ c + T[:3, 3]))
                          for _, _, m, c, T in self._bodies(model, g, q)))

    def compiled(self, model):
        """No rows: the compiled form is the model's gravity constant (:func:`fold_gravity`),
        which must equal ``g``."""
        if not np.array_equal(model.gravity, self.g):
            raise ValueError(f"uniform_gravity: g = {self.g.tolist()} is not the model's "
                             f"gravity {np.asarray(model.gravity).tolist()}; fold it into the "
                             f"model first (vm_dynamics.forces.fold_gravity)")
        return None


#: the models with another gravity made by :func:`with_gravity`, per model and vector, so that
#: the engine and a controller folding the same element share one model (and its kernels)
_VARIANTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def with_gravity(model, gravity):
    """A copy of ``model`` whose uniform gravity is ``gravity`` (``model`` itself if it has
    that gravity already); the same call returns the same copy."""
    gravity = as_vector(gravity, 3, "gravity", limit=MAX_MAGNITUDE)
    if np.array_equal(model.gravity, gravity):
        return model
    variants = _VARIANTS.setdefault(model, {})
    key = gravity.tobytes()
    if key not in variants:
        other = copy.copy(model)
        other.gravity = gravity.copy()
        variants[key] = other
    return variants[key]


def fold_gravity(model, elements, labels=None) -> tuple:
    """``(model, elements)`` with the :class:`UniformGravity` element of ``elements`` (if any)
    folded into the model's gravity and removed from the list (module docstring: the rule
    for a model that has a gravity already).  Errors name an element by its entry of
    ``labels`` (default ``forces[i]``)."""
    elements = tuple(elements)
    found = [i for i, e in enumerate(elements) if isinstance(e, UniformGravity)]
    if not found:
        return model, elements
    name = (lambda i: labels[i]) if labels is not None else (lambda i: f"forces[{i}]")
    if len(found) > 1:
        raise ValueError(f"{name(found[1])}: a second uniform_gravity element ({name(found[0])} "
                         f"is one); uniform fields add up: give their sum once")
    e = elements[found[0]]
    rest = tuple(x for x in elements if not isinstance(x, UniformGravity))
    current = np.asarray(model.gravity, dtype=float)
    if current.any() and not np.array_equal(current, e.g):
        raise ValueError(f"{name(found[0])}: uniform_gravity g = {e.g.tolist()} conflicts with "
                         f"the model's gravity {current.tolist()} (the gravity parameter, or "
                         f"load_model's); give gravity in one place: a model gravity of "
                         f"[0, 0, 0] lets the element set it")
    return with_gravity(model, e.g), rest
