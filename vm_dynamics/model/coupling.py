"""How the tree's joints follow the model's coordinates: URDF mimic joints as the linear map
``q_full = G q + c`` (:class:`JointCoupling`, built by :func:`vm_dynamics.model.load_model`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["JointCoupling"]


@dataclass(frozen=True, eq=False)
class JointCoupling:
    """Linear coupling of the tree's joints to the model's coordinates: ``q_full = G q + c``.

    The tree has ``n_full`` moving joints (one per body, the arrays ``Model.xi``,
    ``Model.parent_joint``, ``Model.body_inertia_home`` … are indexed by them); the model's
    coordinates ``q`` are the ``n`` independent ones (``Model.joint_names``).  A URDF
    ``<mimic joint="m" multiplier="k" offset="o"/>`` joint is not a degree of freedom: its row of
    ``G`` is ``k`` in the master's column and its entry of ``c`` is ``o`` (chains composed).
    Velocities map by ``q̇_full = G q̇``, accelerations by ``q̈_full = G q̈``, and joint forces
    (efforts) back by ``τ = Gᵀ τ_full`` (virtual work), so the master carries the gear-coupled
    load of its mimics.  Without mimic joints ``G = I``, ``c = 0`` and ``trivial`` is True.

    Attributes: ``joint_names`` (n_full, all moving joints, body order), ``joint_types``
    (n_full), ``parent_joint`` (n_full, full index of the parent joint, −1 at the vehicle; the
    same array as ``Model.parent_joint``), ``xi`` ((n_full, 6), = ``Model.xi``), ``G``
    ((n_full, n)), ``c`` ((n_full,)), ``independent`` ((n,) full index of each coordinate),
    ``mimic`` (``{mimic joint: (master joint, multiplier, offset)}``, masters independent).
    """

    joint_names: tuple
    joint_types: tuple
    parent_joint: np.ndarray
    xi: np.ndarray
    G: np.ndarray
    c: np.ndarray
    independent: np.ndarray
    mimic: dict

    @property
    def n_full(self) -> int:
        return self.G.shape[0]

    @property
    def n(self) -> int:
        return self.G.shape[1]

    @property
    def trivial(self) -> bool:
        """True when there is no mimic joint (``G = I``, ``c = 0``)."""
        return not self.mimic

    def full_positions(self, q) -> np.ndarray:
        """``G q + c``: positions of all ``n_full`` joints, order of ``joint_names``."""
        return self.G @ q + self.c

    def full_velocities(self, qd) -> np.ndarray:
        """``G q̇`` (also maps accelerations)."""
        return self.G @ qd

    def reduce_forces(self, tau_full) -> np.ndarray:
        """``Gᵀ τ_full``: efforts on all joints as generalised forces on the coordinates."""
        return self.G.T @ tau_full
