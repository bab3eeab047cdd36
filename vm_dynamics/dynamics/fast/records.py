"""Named records of the compiled kernels: the model as they take it (:class:`ModelConstants`,
built once per model by :class:`vm_dynamics.dynamics.fast.FastModel`, ``kernel_constants``),
the workspace of the recursions (:class:`Workspace`) and the batched forward dynamics' states
(:class:`ForwardInputs`).  A kernel reads ``C.parent``, ``ws.IA``, never a positional slot."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["ModelConstants", "Workspace", "ForwardInputs"]


class ModelConstants(NamedTuple):
    """``parent`` (body of each joint's parent, the vehicle is body 0), ``jtype`` (0 revolute,
    1 prismatic), ``xi`` (joint twists at home), ``inert`` (body inertias, 13 numbers each),
    ``rootx`` (added vehicle inertia M_A), ``axes`` (rows of ``[v; ω]`` spanned by ι₀),
    ``grav`` (gravity, inertial frame), and the mimic coupling ``q_tree = coupling q + c`` with
    ``masters`` the tree indices of the model's coordinates (both empty without mimic joints)."""

    parent: np.ndarray
    jtype: np.ndarray
    xi: np.ndarray
    inert: np.ndarray
    rootx: np.ndarray
    axes: np.ndarray
    grav: np.ndarray
    coupling: np.ndarray
    masters: np.ndarray


class Workspace(NamedTuple):
    """The recursions' per-body arrays (:func:`.kinematics.workspace`): body poses ``Rw, Pw``
    and inertias ``IA`` in the vehicle frame, joint twists ``S``, body velocities ``vel``,
    velocity-product accelerations ``cacc``, articulated bias forces ``pA``, ``U`` and
    ``aux = (1/D_j, u_j)`` of the ABA, accelerations ``acc``, the root's pivot ``K`` and
    right-hand side ``rhs``."""

    Rw: np.ndarray
    Pw: np.ndarray
    S: np.ndarray
    IA: np.ndarray
    vel: np.ndarray
    cacc: np.ndarray
    pA: np.ndarray
    U: np.ndarray
    aux: np.ndarray
    acc: np.ndarray
    K: np.ndarray
    rhs: np.ndarray


class ForwardInputs(NamedTuple):
    """The states and inputs of a batch of forward dynamics (leading axis: the N states): poses
    ``g`` (N×4×4), ``V`` (N×b), ``q``, ``qd``, efforts ``tau`` (N×n), vehicle wrenches ``bw``
    (N×b), and the frame wrenches ``fw`` (N×m×6) on the bodies ``fw_body`` (m, shared; see
    :func:`vm_dynamics.dynamics.fast.kernels.kinematics.add_external`)."""

    g: np.ndarray
    V: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    bw: np.ndarray
    fw_body: np.ndarray
    fw: np.ndarray
