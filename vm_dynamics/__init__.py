"""vm_dynamics — singularity-free Lagrange–Poincaré dynamics of vehicle-manipulator systems.

Pure Python (numpy/scipy); importing it needs no ROS.  Conventions: twists ``[v; ω]`` (linear
first), wrenches ``[f; n]``, the vehicle velocity is its body (left-trivialised) twist,
``Ad_g = [[R, p~R], [0, R]]``, ROS quaternions ``x, y, z, w``.  See the README.

The names below are loaded on first use (``vm.simulate`` imports the simulation layer then), so
that ``import vm_dynamics`` is instant and the executables can defer Ctrl-C while they load.
"""
from __future__ import annotations

import importlib

#: public name -> (module, attribute); attribute None means the module itself
_EXPORTS = {
    "load_model": ("vm_dynamics.model.model", "load_model"),
    "Model": ("vm_dynamics.model.model", "Model"),
    "VehicleGroup": ("vm_dynamics.core.groups", "VehicleGroup"),
    "get_group": ("vm_dynamics.core.groups", "get_group"),
    "SE3": ("vm_dynamics.core.groups", "SE3"),
    "SE2": ("vm_dynamics.core.groups", "SE2"),
    "SO3": ("vm_dynamics.core.groups", "SO3"),
    "FIXED": ("vm_dynamics.core.groups", "FIXED"),
    "pose": ("vm_dynamics.core.lie", "pose"),
    "State": ("vm_dynamics.core.state", "State"),
    "SimulationDiverged": ("vm_dynamics.core.errors", "SimulationDiverged"),
    "simulate": ("vm_dynamics.sim.simulate", "simulate"),
    "Trajectory": ("vm_dynamics.sim.simulate", "Trajectory"),
    "Simulator": ("vm_dynamics.sim.engine", "Simulator"),
    "SimulationError": ("vm_dynamics.sim.engine", "SimulationError"),
    "reconstruct_base": ("vm_dynamics.sim.reconstruction", "reconstruct_base"),
    "lie": ("vm_dynamics.core.lie", None),
    "lp": ("vm_dynamics.dynamics.lp", None),
}

__all__ = list(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name: str):
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'vm_dynamics' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attr is not None:
        value = getattr(value, attr)
    globals()[name] = value          # later lookups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
