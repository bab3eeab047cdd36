"""Named records of the compiled simulation step (:mod:`.kernels`) and its one scratch buffer.

The engine passes a few records instead of tens of arrays: the model
(:class:`~vm_dynamics.dynamics.fast.records.ModelConstants`), the force elements
(:class:`~vm_dynamics.forces.registry.Forces`), the method's tableau (:class:`TableauArrays`),
the step's settings (:class:`StepSpec`), the state (:class:`EngineState`), the inputs
(:class:`StageInputs`) and the prescribed joint rows (:class:`PrescribedRows`).  The scratch of
one step lives in one float64 buffer whose named views are a :class:`Work` (the recursions'
:class:`~vm_dynamics.dynamics.fast.records.Workspace` and the step's :class:`Scratch`);
passing the one buffer keeps a compiled call cheap.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core.errors import SimulationDiverged
from ..dynamics.fast.records import Workspace

__all__ = ["FORMULATIONS", "FORM_CODES", "STATUS", "SimulationError", "check_formulation",
           "choose_formulation", "TableauArrays", "StepSpec", "EngineState", "StageInputs",
           "PrescribedRows", "Stage", "Rates", "LawOutputs", "Scratch", "Work", "MAX_STAGES",
           "buffer_size", "last_size"]

FORMULATIONS = ("auto", "spatial_momentum", "body_momentum", "velocity")
FORM_CODES = {"velocity": 0, "spatial_momentum": 1, "body_momentum": 2}
STATUS = {1: "the vehicle pose is not a rigid transform",
           2: "the state became non-finite (NaN/Inf)",
           3: "singular locked or articulated inertia"}


class SimulationError(SimulationDiverged):
    """A step of the engine failed (non-finite or overflowing state, singular inertia).

    ``t`` is the time of the step's start (the last good state), ``reason`` what failed;
    ``partial`` (from :meth:`Simulator.run`) the rows completed before, ``trajectory`` (from
    :func:`vm_dynamics.sim.simulate`) the samples recorded before.  A
    :class:`~vm_dynamics.core.errors.SimulationDiverged`, hence a ``ValueError``."""

    partial = None


def check_formulation(formulation, prescribed) -> None:
    """``ValueError`` naming the culprit for an unknown ``formulation``, a ``prescribed`` motion
    that is not a callable, or the velocity formulation with prescribed motion."""
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation={formulation!r}: unknown; choose one of "
                         f"{', '.join(FORMULATIONS)}")
    if prescribed is not None and not callable(prescribed):
        raise ValueError("prescribed: expected a callable t -> (q, qd, qdd)")
    if prescribed is not None and formulation == "velocity":
        raise ValueError("formulation='velocity' cannot be used with prescribed motion; "
                         "the vehicle is integrated through its momentum (LP-1)")


def choose_formulation(model, g0, formulation: str = "auto", elements=(),
                       prescribed: bool = False) -> str:
    """Resolve ``"auto"``: ``velocity`` if one of the force ``elements`` keeps the system in
    orbit (:attr:`~vm_dynamics.forces.ForceElement.orbital`: at orbital speed both momentum
    variables lose digits, the spatial momentum to ``r × p`` and the body momentum's rate
    ``ad*_V P`` to a cancellation of size ``|P||V|``) -- ``body_momentum`` if the joints follow
    a ``prescribed`` motion (integrated through the momentum, (LP-1); the spatial momentum's
    ``r × p`` diverges at orbital speed) --, ``body_momentum`` if gravity acts along a
    translation axis of the vehicle at ``g0`` (μ would grow like m·g·t), otherwise
    ``spatial_momentum``."""
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation={formulation!r}: unknown; choose one of "
                         f"{', '.join(FORMULATIONS)}")
    if formulation != "auto":
        return formulation
    if any(e.orbital for e in elements):
        return "body_momentum" if prescribed else "velocity"
    lin = [a for a in model.group.axes if a < 3]
    along = np.asarray(g0)[:3, :3][:, lin].T @ model.gravity if lin else np.zeros(0)
    falls = bool(np.any(np.abs(along) > 1e-12 * max(1.0, np.linalg.norm(model.gravity))))
    return "body_momentum" if falls else "spatial_momentum"


#: Stage slots in the scratch (lie_euler 1, rkmk4 4; adaptive methods use the Python driver).
MAX_STAGES = 4


class TableauArrays(NamedTuple):
    """An explicit Runge–Kutta tableau: ``a`` (s×s), weights ``b`` (s), nodes ``c`` (s)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray


class StepSpec(NamedTuple):
    """``form`` the momentum variable (0 velocity, 1 spatial momentum, 2 body momentum),
    ``presc`` prescribed joint motion, ``gri = g_ref⁻¹`` (spatial-momentum frame), ``dt``, and
    ``driven`` the mask of the kinematically driven joints (empty: none; :mod:`.driven`)."""

    form: int
    presc: bool
    gri: np.ndarray
    dt: float
    driven: np.ndarray


class EngineState(NamedTuple):
    """The integrated state: pose ``g`` (4×4), momentum variable ``m`` (b), joints ``q``,
    ``qd`` (the tree's with mimic joints), velocity ``V`` (b) and the work account ``W``
    (work, ∫|power|).  With a leading dimension: a trajectory, row k after step k."""

    g: np.ndarray
    m: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    V: np.ndarray
    W: np.ndarray


class StageInputs(NamedTuple):
    """Inputs held over a step: joint efforts ``tau``, vehicle wrench ``bw`` (b, body frame),
    inertial-axes vehicle wrench ``bwi`` (6), frame wrenches ``fw`` already moved to their
    bodies ``fw_body`` (see :func:`vm_dynamics.dynamics.fast.kernels.kinematics.add_external`)."""

    tau: np.ndarray
    bw: np.ndarray
    bwi: np.ndarray
    fw_body: np.ndarray
    fw: np.ndarray


class PrescribedRows(NamedTuple):
    """Prescribed ``q, q̇, q̈`` at every stage and at the step's end ((s+1)×n; with a leading
    dimension, one block per step of a rollout)."""

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray


class Stage(NamedTuple):
    """A stage state: pose ``g``, ``h = g_ref⁻¹g``, ``m``, ``q``, ``qd`` and its velocity ``V``."""

    g: np.ndarray
    h: np.ndarray
    m: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    V: np.ndarray


class Rates(NamedTuple):
    """Rates of a stage: ``dTheta`` (6, zero off 𝔥), ``dm``, ``qdd`` and the power ``pw`` of
    the applied inputs ``(P, |P|)``."""

    dTheta: np.ndarray
    dm: np.ndarray
    qdd: np.ndarray
    pw: np.ndarray


class LawOutputs(NamedTuple):
    """Per step of a compiled-law rollout: the efforts ``tau`` and base wrench ``bw`` of its
    first stage."""

    tau: np.ndarray
    bw: np.ndarray


class Scratch(NamedTuple):
    """The step's scratch: wrenches per body ``ext`` (non-conservative) and ``cons``
    (conservative elements); the composite inertia ``Ic0`` and momentum terms ``hm``; the
    stage's ``exp`` of its increment, pose ``pose`` and ``rel = g_ref⁻¹ pose``; gravity in
    vehicle axes ``gloc``; six-vectors ``six``, ``six2``, ``force`` (F_η), ``theta``; the
    stage slopes ``KT, Km, Kq, Kqd, KW``; ``neg_theta = −Θ``; the stage state ``ms, qs, qds,
    Vs``; the ABA output ``acc_out``; the locked momentum ``P``; ``rel_k = g_ref⁻¹ g_k``;
    ``last``: the state ``(g, g_ref⁻¹, m, q, q̇, V, form)`` whose first stage the workspace
    holds and, as its last entry, 1.0 while it does (:func:`vm_dynamics.sim.kernels.
    engine_step` then starts from it; every other use of the buffer sets it to 0.0)."""

    ext: np.ndarray
    cons: np.ndarray
    Ic0: np.ndarray
    hm: np.ndarray
    exp: np.ndarray
    pose: np.ndarray
    rel: np.ndarray
    gloc: np.ndarray
    six: np.ndarray
    six2: np.ndarray
    force: np.ndarray
    theta: np.ndarray
    KT: np.ndarray
    Km: np.ndarray
    Kq: np.ndarray
    Kqd: np.ndarray
    KW: np.ndarray
    neg_theta: np.ndarray
    ms: np.ndarray
    qs: np.ndarray
    qds: np.ndarray
    Vs: np.ndarray
    acc_out: np.ndarray
    P: np.ndarray
    rel_k: np.ndarray
    last: np.ndarray


class Work(NamedTuple):
    """The views of one buffer: the recursions' workspace ``ws`` and the step's scratch ``sc``."""

    ws: Workspace
    sc: Scratch


def buffer_size(b: int, n: int) -> int:
    """Length of the one float64 buffer holding a :class:`Work`."""
    S = MAX_STAGES
    ws = (n + 1) * 9 + (n + 1) * 3 + n * 6 + (n + 1) * 36 + (n + 1) * 6 + n * 6 + (n + 1) * 6 \
        + n * 6 + n * 2 + (n + 1) * 6 + 36 + 6
    sc = 2 * (n + 1) * 6 + 36 + 6 + 3 * 16 + 3 + 4 * 6 + S * 6 + S * b + 2 * S * n + S * 2 \
        + 6 + b + 2 * n + b + (b + n) + b + 16 + last_size(b, n)
    return ws + sc


def last_size(b: int, n: int) -> int:
    """Length of :attr:`Scratch.last`: g and g_ref⁻¹ (16 each), m and V (b), q and q̇ (n),
    the formulation and the flag."""
    return 32 + 2 * b + 2 * n + 2
