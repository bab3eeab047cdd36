"""Per-run metrics, the success predicate and the failure probability's Wilson interval.

Metrics of one run (SI units; NaN where a metric does not apply):

* ``tracking_error_rms``, ``tracking_error_final``, ``tracking_error_max`` — ‖q_d − q‖₂ (rad or
  m) against the scenario's joint reference;
* ``position_max_m``, ``position_final_m`` — ‖p(t) − p(0)‖ of the vehicle;
* ``attitude_max_deg``, ``attitude_final_deg`` — the angle of R(0)ᵀR(t);
* ``tau_peak`` (max |τᵢ|), ``base_force_peak``, ``base_torque_peak`` (max ‖f‖, ‖n‖ of the
  applied vehicle wrench);
* ``energy_balance_rel`` and ``momentum_drift_rel`` (:mod:`vm_dynamics.analysis.metrics`);
* ``diverged`` (the state left :data:`~vm_dynamics.core.divergence.DIVERGENCE_LIMITS` or the
  step failed) and ``trusted`` (finished, and the energy balance within the scenario's
  ``divergence_threshold``: :func:`~vm_dynamics.core.divergence.energy_balance_violated`).

A run's outcome is ``"diverged"``, ``"untrusted"`` (integration not trusted: not counted as a
pass), ``"fail"`` (the success predicate is false) or ``"pass"``.
"""
from __future__ import annotations

import ast
import math

import numpy as np

__all__ = ["METRICS", "run_metrics", "check_expression", "Predicate", "wilson_interval",
           "outcome"]

#: The numeric metrics a success expression may name.
METRICS = ("tracking_error_rms", "tracking_error_final", "tracking_error_max",
           "position_max_m", "position_final_m", "attitude_max_deg", "attitude_final_deg",
           "tau_peak", "base_force_peak", "base_torque_peak", "energy_balance_rel",
           "momentum_drift_rel", "t_end", "diverged", "trusted")
_FUNCTIONS = {"abs": abs, "min": min, "max": max, "isnan": math.isnan}
_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
          ast.UAdd, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Compare,
          ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.Name, ast.Load,
          ast.Constant, ast.Call)


def check_expression(expr: str, key: str = "success") -> ast.Expression:
    """The parsed success expression; ``ValueError`` naming ``key`` for a syntax error, a
    construct other than arithmetic/comparison/boolean logic, or an unknown name (with the
    nearest metric)."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"{key}: invalid expression {expr!r:.80} ({exc.msg})") from None
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise ValueError(f"{key}: {type(node).__name__} is not allowed in {expr!r:.80}; use "
                             f"metrics, numbers, comparisons, and/or/not, + - * / ** and "
                             f"{', '.join(_FUNCTIONS)}()")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _FUNCTIONS):
            raise ValueError(f"{key}: only {', '.join(_FUNCTIONS)}() may be called in "
                             f"{expr!r:.80}")
        if isinstance(node, ast.Name) and node.id not in METRICS and node.id not in _FUNCTIONS:
            from .dispersions import did_you_mean
            raise ValueError(f"{key}: unknown metric {node.id!r}{did_you_mean(node.id, METRICS)}; "
                             f"metrics: {', '.join(METRICS)}")
    return tree


class Predicate:
    """A success predicate: an expression over :data:`METRICS` (a string) or a Python callable
    ``metrics dict -> bool`` (importable by workers when the campaign runs in processes)."""

    def __init__(self, spec=None):
        self.spec = spec
        self._code = None
        if isinstance(spec, str):
            self._code = compile(check_expression(spec), "<success>", "eval")
        elif spec is not None and not callable(spec):
            raise ValueError(f"success: expected an expression or a callable, got "
                             f"{type(spec).__name__}")

    def __call__(self, metrics: dict) -> bool:
        if self.spec is None:
            return True
        if self._code is None:
            return bool(self.spec(dict(metrics)))
        names = {k: metrics.get(k, math.nan) for k in METRICS}
        return bool(eval(self._code, {"__builtins__": {}}, {**_FUNCTIONS, **names}))

    def __repr__(self):
        return "always" if self.spec is None else (self.spec if isinstance(self.spec, str)
                                                     else getattr(self.spec, "__name__", "callable"))


def outcome(metrics: dict, predicate: Predicate) -> str:
    """``"diverged"``, ``"untrusted"``, ``"fail"`` or ``"pass"`` (see the module docstring)."""
    if metrics["diverged"]:
        return "diverged"
    if not metrics["trusted"]:
        return "untrusted"
    return "pass" if predicate(metrics) else "fail"


def wilson_interval(failures: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion ``failures / n``."""
    if n <= 0:
        return 0.0, 1.0
    from scipy.stats import norm
    z = float(norm.ppf(0.5 + confidence / 2))
    p = failures / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _rotation_angles_deg(g) -> np.ndarray:
    R0 = g[0, :3, :3]
    rel = np.einsum("ji,kjl->kil", R0, g[:, :3, :3])
    c = np.clip((np.trace(rel, axis1=1, axis2=2) - 1) / 2, -1.0, 1.0)
    return np.degrees(np.arccos(c))


def _wrench_peaks(model, bw) -> tuple[float, float]:
    if model.b == 0 or len(bw) == 0:
        return math.nan, math.nan
    w6 = bw @ model.group.iota.T
    return float(np.max(np.linalg.norm(w6[:, :3], axis=1))), \
        float(np.max(np.linalg.norm(w6[:, 3:], axis=1)))


def run_metrics(scn, plant, forces, traj, joint_reference, diverged, threshold) -> dict:
    """The metrics of one run's trajectory (``traj``; None if not a sample was computed) on
    ``plant`` with force elements ``forces``; ``diverged`` the divergence (``{t, reason}``) or
    None; ``threshold`` the energy-balance threshold."""
    from ..analysis import metrics as analysis
    from ..core import divergence
    nan = math.nan
    m = dict.fromkeys(METRICS, nan)
    m.update(diverged=diverged is not None, trusted=False,
             divergence=None if diverged is None else dict(diverged))
    if traj is None or len(traj) < 2:
        return m
    p = traj.g[:, :3, 3]
    dp = np.linalg.norm(p - p[0], axis=1)
    att = _rotation_angles_deg(traj.g)
    m.update(position_max_m=float(dp.max()), position_final_m=float(dp[-1]),
             attitude_max_deg=float(att.max()), attitude_final_deg=float(att[-1]),
             tau_peak=float(np.abs(traj.tau).max()) if traj.tau.size else nan,
             t_end=float(traj.t[-1]))
    m["base_force_peak"], m["base_torque_peak"] = _wrench_peaks(plant, traj.base_wrench)
    if joint_reference is not None:
        e, final, rms = analysis.tracking_errors(traj.t, traj.q, joint_reference)
        m.update(tracking_error_rms=rms, tracking_error_final=final,
                 tracking_error_max=float(np.linalg.norm(e, axis=1).max()))
    if diverged is None:
        checks = analysis.conservation_checks(plant, traj, _frame_fn(plant, forces), forces)
        s = checks.summary()
        m["energy_balance_rel"] = s["energy_balance_rel"]
        if s["momentum_drift_rel"] is not None:
            m["momentum_drift_rel"] = s["momentum_drift_rel"]
        worst = float(np.max(np.abs(checks.balance)))
        m["trusted"] = not divergence.energy_balance_violated(worst, checks.energy_scale,
                                                              threshold)
    return m


def _frame_fn(model, forces):
    """The working force elements' frame wrenches, as vm-sim's analysis passes them."""
    working = [e for e in forces if not e.conservative]
    if not any(e.acts_on_frames for e in working):
        return None
    from ..forces import total_wrenches

    def frame_fn(t, state):
        return total_wrenches(model, working, state.g, state.V, state.q)[1]
    return frame_fn
