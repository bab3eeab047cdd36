"""The dynamics node's ``/diagnostics``: simulation, command watchdog and joint source status,
built from a :class:`~vm_dynamics.nodes.dynamics_core.DynamicsCore`'s public state."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ros import messages as rm

__all__ = ["diagnostics_message"]

_WATCHDOG_TEXT = {"waiting": "no command received yet (inputs zero)",
                  "ok": "commands fresh",
                  "tripped": "command timeout: inputs zeroed"}


def diagnostics_message(core) -> Any:
    """``diagnostic_msgs/DiagnosticArray`` of ``core``: simulation, command watchdog and (HIL)
    joint source."""
    hw = core.model.name
    level, text = _simulation_level(core)
    wd = core.watchdog
    statuses = [
        dict(name="vm_dynamics: simulation", level=level, message=text, hardware_id=hw,
             values=_simulation_values(core)),
        dict(name="vm_dynamics: command watchdog", level="WARN" if wd == "tripped" else "OK",
             message=_WATCHDOG_TEXT[wd], hardware_id=hw, values=_watchdog_values(core)),
    ]
    source = _joint_source_status(core)
    if source is not None:
        statuses.append(dict(source, hardware_id=hw))
    if core.capture is not None:
        st = core.capture.statistics()
        text = ("grasped" if st["grasped"] else
                f"{st['contacts']} contact(s)" if st["contacts"] else "free")
        statuses.append(dict(name="vm_dynamics: capture", level="OK", message=text,
                             hardware_id=hw, values=st))
    if core.measured_wrench is not None:
        mw = core.measured_wrench
        level, text = mw.status()
        statuses.append(dict(name="vm_dynamics: measured wrench", level=level, message=text,
                             hardware_id=hw, values={"wrench_source": "measured",
                                                     **mw.statistics()}))
    return rm.diagnostic_array_msg(core.t, statuses)


def _simulation_level(core) -> tuple[str, str]:
    if core.diverged:
        level, text = "ERROR", core.error
    elif core.user_paused:
        level, text = "OK", "paused"
    elif core.lockstep and not core.lockstep_ready():
        level, text = "OK", "lockstep: waiting for a command"
    else:
        level, text = "OK", "running"
    rtf = core.timing.get("real_time_factor")
    target = float(core.params["real_time_factor"])
    if level == "OK" and rtf is not None and target > 0 and not core.paused \
            and rtf < 0.9 * target:
        level, text = "WARN", f"real-time factor {rtf:.2f} below target {target:g}"
    return level, text


def _simulation_values(core) -> dict:
    guard = core.energy_guard
    st = np.asarray(core.step_times) if core.step_times else np.zeros(1)
    scale = abs(guard.E0) + guard.K0 + core.abs_work
    momentum = guard.momentum() if not core.diverged else guard.momentum0
    values = {
        "sim_time": core.t, "steps": core.steps, "paused": core.paused,
        "diverged": core.diverged, "integrator": core.method,
        "dynamics_backend": core.sim.backend, "formulation": core.sim.formulation,
        "dt": core.dt, "lockstep": core.lockstep,
        "step_time_mean_ms": 1e3 * float(np.mean(st)),
        "step_time_max_ms": 1e3 * float(np.max(st)),
        "energy": guard.E0 + core.work + guard.residual,
        "energy_input_work": core.work,
        "energy_balance_residual": guard.residual,
        "energy_balance_residual_rel": abs(guard.residual) / scale if scale > 0 else 0.0,
        "momentum_change": float(np.linalg.norm(momentum - guard.momentum0)),
    }
    values.update(core.timing)
    return values


def _watchdog_values(core) -> dict:
    e, w = core.effort, core.wrench
    return {
        "state": core.watchdog, "command_timeout": core.timeout,
        "effort_age": "never" if e.time is None else core.t - e.time,
        "wrench_age": "never" if w.time is None else core.t - w.time,
        "effort_accepted": e.accepted, "effort_rejected": e.rejected,
        "wrench_accepted": w.accepted, "wrench_rejected": w.rejected,
        "last_rejection": e.last_error or w.last_error,
        **core.input_stats,
    }


def _joint_source_status(core) -> dict | None:
    if core.measured is not None:
        mi = core.measured
        if mi.anchor is None:
            level, text = "WARN", "waiting for measured joint states (vehicle holds)"
        elif mi.holding:
            level, text = "WARN", "measured joint states stopped: the vehicle holds"
        else:
            level, text = "OK", "measured joint states drive the vehicle"
        return dict(name="vm_dynamics: joint source", level=level, message=text,
                    values={"joint_source": "measured", **mi.statistics()})
    if core.prescribed is not None:
        return dict(name="vm_dynamics: joint source", level="OK",
                    message=f"prescribed motion ({core.prescribed.kind})",
                    values={"joint_source": "prescribed"})
    return None
