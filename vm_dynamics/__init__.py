"""vm_dynamics — singularity-free Lagrange–Poincaré dynamics of vehicle-manipulator systems.

Pure Python (numpy/scipy); importing it needs no ROS.  Conventions: twists ``[v; ω]`` (linear
first), wrenches ``[f; n]``, the vehicle velocity is its body (left-trivialised) twist,
``Ad_g = [[R, p~R], [0, R]]``, ROS quaternions ``x, y, z, w``.  See the README.
"""
from .core import lie
from .core.errors import SimulationDiverged
from .core.groups import FIXED, SE2, SE3, SO3, VehicleGroup, get_group
from .model.model import Model, load_model
from .core.lie import pose
from .sim.reconstruction import reconstruct_base
from .sim.engine import SimulationError, Simulator
from .sim.simulate import State, Trajectory, simulate
from .dynamics import lp

__all__ = ["load_model", "Model", "VehicleGroup", "get_group", "SE3", "SE2", "SO3", "FIXED",
           "simulate", "Trajectory", "State", "reconstruct_base", "Simulator", "pose",
           "SimulationError", "SimulationDiverged", "lie", "lp"]
__version__ = "0.1.0"
