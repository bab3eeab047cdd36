"""The controller plug-in interface and the registry that finds controllers by name.

A controller is a class derived from :class:`Controller`.  It is configured once from a dict of
parameters (a YAML mapping; unknown keys are rejected), bound to a model and an initial state by
:meth:`Controller.reset`, and then called at every control instant::

    tau, base_wrench = ctrl.compute(t, state, reference)

``state`` is any object with the attributes ``g`` (4×4 vehicle pose), ``V`` (vehicle body twist,
b-vector), ``q`` and ``qd`` (e.g. :class:`vm_dynamics.State`).  ``tau`` is the n-vector
of joint torques; ``base_wrench`` is the b-vector ``[f; n]`` applied to the vehicle, in the
vehicle body frame (zeros where the vehicle is unactuated).  ``reference`` is a
:class:`vm_dynamics.control.references.Reference` (or a bare joint/pose trajectory).

Controllers are found by name through the entry-point group ``vm_dynamics.controllers``
(:func:`importlib.metadata.entry_points`), so a third-party package registers one with::

    [project.entry-points."vm_dynamics.controllers"]
    my_ctrl = "my_pkg:MyController"

The built-ins are registered the same way and, in addition, listed in an in-code fallback table
so they work from a source tree that is not installed.
"""
from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from importlib import metadata

import numpy as np

__all__ = ["Controller", "ENTRY_POINT_GROUP", "BUILTIN_CONTROLLERS", "get_controller",
           "available_controllers", "gain_vector", "pose_gains", "known_wrenches",
           "read_state"]

ENTRY_POINT_GROUP = "vm_dynamics.controllers"

#: Fallback table for the built-ins (the same targets as the entry points in setup.py).
BUILTIN_CONTROLLERS = {
    "computed_torque": "vm_dynamics.control.computed_torque:ComputedTorqueController",
    "pd_gravity": "vm_dynamics.control.pd_gravity:PDGravityController",
    "task_space": "vm_dynamics.control.task_space:TaskSpaceController",
}


class Controller:
    """Base class of every controller.

    Subclasses set :attr:`name`, list their parameters with defaults in :attr:`PARAMS`, and
    implement :meth:`_reset` and :meth:`compute`.  Parameter values are checked in
    :meth:`_reset` (where the model's dimensions are known) or in :meth:`_check_params`.
    """

    name: str = "controller"
    PARAMS: dict = {}

    def __init__(self, params: Mapping | None = None):
        self.params = self.validate_params(params)
        self._check_params(self.params)
        self.model = None
        self.external = None
        self.external_forces = None

    @classmethod
    def validate_params(cls, params: Mapping | None) -> dict:
        """Defaults overlaid with ``params``; unknown keys raise ``ValueError`` naming them."""
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise ValueError(f"{cls.name}: parameters must be a mapping (dict), got "
                             f"{type(params).__name__}")
        unknown = [k for k in params if k not in cls.PARAMS]
        if unknown:
            raise ValueError(f"{cls.name}: unknown parameter {unknown[0]!r}; valid parameters "
                             f"are: {', '.join(sorted(cls.PARAMS))}")
        out = dict(cls.PARAMS)
        out.update(params)
        return out

    def _check_params(self, params: dict) -> None:
        """Model-independent checks of parameter values (override)."""

    def _choice(self, key: str, choices) -> str:
        value = self.params[key]
        if value not in choices:
            raise ValueError(f"{self.name}: parameter {key!r}={value!r}; choose one of "
                             f"{', '.join(map(repr, choices))}")
        return value

    def reset(self, model, state=None, external=None) -> None:
        """Bind to ``model`` and (re)initialise from ``state`` (the hold set-points).

        ``external`` is an optional model of *known* external wrenches acting on the system
        (buoyancy, hydrodynamics, ...): a list of force elements (:mod:`vm_dynamics.forces`,
        e.g. the engine's own), or a callable ``(t, state) -> (base_wrench, frame_wrenches)``
        with ``base_wrench`` a b-vector in the vehicle body frame (or ``None``) and
        ``frame_wrenches`` a ``{frame: [f; n]}`` dict as in
        :meth:`vm_dynamics.Model.forward_dynamics` (or ``None``).  Every built-in compensates it;
        force elements can also be compensated inside a compiled law (:meth:`compiled_law`).
        """
        from ..forces import ForceElement, as_elements, fold_gravity, total_wrenches
        #: the force elements of ``external`` (None if it is a callable or absent); a
        #: uniform_gravity element is folded into the model's gravity, which every law
        #: compensates (:func:`vm_dynamics.forces.fold_gravity`)
        self.external_forces = None
        if external is not None and not callable(external):
            if isinstance(external, ForceElement) or not isinstance(external, (list, tuple)):
                raise ValueError("external: expected a list of force elements or a callable "
                                 "(t, state) -> (base_wrench, frame_wrenches)")
            model, elements = fold_gravity(model, as_elements(external))
            self.external_forces = elements

            def external(t, state):
                bw, frames = total_wrenches(model, elements, state.g, state.V, state.q)
                return bw, frames or None
        self.model = model
        self.external = external
        self._reset(model, state)

    def _reset(self, model, state) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def compute(self, t: float, state, reference):
        """Return ``(tau, base_wrench)``: joint torques (n) and vehicle body wrench (b)."""
        raise NotImplementedError

    def _hold(self, model, state) -> None:
        """Set the hold set-points ``q_hold``, ``g_hold`` of :meth:`reset`: copies of
        ``state``'s ``q`` and ``g``, or the neutral configuration and the identity without
        one (the built-in laws' reference where theirs gives none)."""
        if state is None:
            self.q_hold, self.g_hold = model.neutral_configuration(), np.eye(4)
        else:
            self.g_hold, _, self.q_hold, _ = (a.copy() for a in read_state(model, state))

    def _require_reset(self):
        if self.model is None:
            raise RuntimeError(f"{self.name}: call reset(model, state) before compute()")
        return self.model

    def compiled_law(self, reference):
        """The law as data the engine evaluates in compiled code at every stage
        (:class:`vm_dynamics.control.compiled.CompiledLaw`), or None (the default: the engine
        calls :meth:`compute`).  Called after :meth:`reset`; the efforts must equal
        :meth:`compute`'s."""
        return None

    def inputs(self, reference):
        """What this controller hands the engine for ``reference``: a
        :class:`~vm_dynamics.control.inputs.ControllerInputs`, which unpacks as ``tau_fn,
        base_wrench_fn`` (callables ``(t, state) -> array`` for :func:`vm_dynamics.sim.simulate`;
        :meth:`compute` runs once per distinct ``(t, state)``) and knows :meth:`compiled_law`:
        given both channels, simulate evaluates that law inside the compiled engine step."""
        from .inputs import ControllerInputs
        return ControllerInputs(lambda t, state: self.compute(t, state, reference),
                                lambda: self.compiled_law(reference))

    def __repr__(self):
        changed = {k: v for k, v in self.params.items() if self.PARAMS.get(k) is not v}
        return f"{type(self).__name__}({changed!r})"


# ---------------------------------------------------------------------------- parameter helpers
def gain_vector(value, size: int, key: str, owner: str = "controller") -> np.ndarray:
    """A scalar or a list of ``size`` non-negative numbers as a ``size``-vector."""
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}: parameter {key!r} must be a number or a list of {size} "
                         f"numbers, got {value!r}") from None
    if a.ndim == 0:
        a = np.full(size, float(a))
    if a.shape != (size,):
        raise ValueError(f"{owner}: parameter {key!r} must be a number or a list of {size} "
                         f"numbers, got shape {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{owner}: parameter {key!r} must be finite and non-negative: {a}")
    return a


def pose_gains(params: dict, owner: str, lin: str, ang: str, full: str,
               default: float | None) -> np.ndarray:
    """6-vector of pose gains ``[linear(3); angular(3)]`` from either ``lin``/``ang`` (scalars or
    3-lists) or ``full`` (a scalar or 6-list); giving both forms is an error.  Parameters left at
    ``None`` take ``default`` (if ``default`` is None too, the result is None: "derive it")."""
    if params.get(full) is not None:
        for k in (lin, ang):
            if params.get(k) is not None:
                raise ValueError(f"{owner}: give either {full!r} or {lin!r}/{ang!r}, not both")
        return gain_vector(params[full], 6, full, owner)
    vals = [params.get(k) for k in (lin, ang)]
    if default is None and any(v is None for v in vals):
        if all(v is None for v in vals):
            return None
        raise ValueError(f"{owner}: give both {lin!r} and {ang!r} (or {full!r})")
    return np.concatenate([gain_vector(default if v is None else v, 3, k, owner)
                           for k, v in zip((lin, ang), vals)])


def read_state(model, state):
    """``(g, V, q, qd)`` of a state object, checked against the model's dimensions."""
    out = []
    for attr, shape in (("g", (4, 4)), ("V", (model.b,)), ("q", (model.n,)), ("qd", (model.n,))):
        try:
            a = np.asarray(getattr(state, attr), dtype=float)
        except AttributeError:
            raise ValueError(f"state: has no attribute {attr!r} (expected g, V, q, qd)") from None
        if a.shape != shape:
            raise ValueError(f"state.{attr}: expected shape {shape}, got {a.shape}")
        out.append(a)
    return tuple(out)


def known_wrenches(controller, t, state):
    """``(base_wrench b-vector, frame_wrenches dict | None)`` from ``controller.external``."""
    model = controller.model
    zero = np.zeros(model.b)
    if controller.external is None:
        return zero, None
    out = controller.external(t, state)
    if not (isinstance(out, tuple) and len(out) == 2):
        raise ValueError("external: must return a tuple (base_wrench, frame_wrenches)")
    bw, fw = out
    bw = zero if bw is None else np.asarray(bw, dtype=float)
    if bw.shape != (model.b,):
        raise ValueError(f"external: base_wrench must have shape ({model.b},), got {bw.shape}")
    return bw, (fw or None)


# ---------------------------------------------------------------------------- registry
def _entry_points() -> dict:
    """``{name: [entry points]}`` of the group, in ``sys.path`` order."""
    found: dict = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, []).append(ep)
    return found


def available_controllers() -> list[str]:
    """Names of all controllers: entry points of ``vm_dynamics.controllers`` and the built-ins."""
    return sorted(set(_entry_points()) | set(BUILTIN_CONTROLLERS))


def _load_target(target: str):
    module, _, attr = target.partition(":")
    obj = importlib.import_module(module.strip())
    for part in attr.strip().split(".") if attr.strip() else []:
        obj = getattr(obj, part)
    return obj


def _resolve(name: str):
    """The factory registered as ``name``.

    Built-in names always resolve to the built-in (an entry point claiming a built-in name with
    another target is ignored with a warning); other names resolve to the first entry point
    on ``sys.path`` (later duplicates are ignored with a warning, like shadowed modules).
    """
    eps = _entry_points().get(name, [])
    if name in BUILTIN_CONTROLLERS:
        target = BUILTIN_CONTROLLERS[name]
        for ep in eps:
            if ep.value.replace(" ", "") != target:
                warnings.warn(f"controller {name!r}: entry point {ep.value!r} ignored; the name "
                              f"belongs to the built-in {target!r}", RuntimeWarning, stacklevel=3)
        return _load_target(target)
    if not eps:
        raise ValueError(f"controller {name!r}: unknown; available controllers are: "
                         f"{', '.join(available_controllers())}")
    for ep in eps[1:]:
        if ep.value != eps[0].value:
            warnings.warn(f"controller {name!r}: registered twice; using {eps[0].value!r}, "
                          f"ignoring {ep.value!r}", RuntimeWarning, stacklevel=3)
    try:
        return eps[0].load()
    except Exception as exc:
        raise ValueError(f"controller {name!r}: entry point {eps[0].value!r} failed to load: "
                         f"{type(exc).__name__}: {exc}") from exc


def get_controller(name: str, params: Mapping | None = None):
    """Instantiate the controller registered as ``name`` with ``params`` (a dict, e.g. YAML).

    The registered object is called with the parameter dict and must return an object with
    ``reset`` and ``compute`` (normally a :class:`Controller` subclass).  Unknown names raise
    ``ValueError`` listing the available ones.
    """
    if not isinstance(name, str):
        raise ValueError(f"controller name: expected a string, got {name!r}")
    factory = _resolve(name)
    if not callable(factory):
        raise ValueError(f"controller {name!r}: registered object {factory!r} is not callable")
    ctrl = factory(params)
    for method in ("reset", "compute"):
        if not callable(getattr(ctrl, method, None)):
            raise ValueError(f"controller {name!r}: {type(ctrl).__name__} has no {method}() "
                             f"method; derive it from vm_dynamics.control.Controller")
    return ctrl
