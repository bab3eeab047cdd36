"""Force elements: every external effect on a vehicle-manipulator (uniform gravity,
hydrodynamic damping and buoyancy, link buoyancy, springs, two-body gravity, …) as one object
with its wrenches, its potential energy if conservative, and its compiled counterpart
(:mod:`.base`, :mod:`.registry`, :mod:`.kernels`; uniform gravity folds into the model,
:mod:`.gravity`).  Imports the model and dynamics layers."""
from .base import ForceElement, as_elements, potential_energy, total_wrenches, vehicle_wrench
from .gravity import UniformGravity, fold_gravity, with_gravity
from .hydrodynamics import LinkBuoyancy, VehicleHydrodynamics, hydrodynamics_elements
from .registry import ELEMENTS, Forces, compile_forces, element_from_config, elements_from_config
from .spring import Spring
from .two_body import MU_EARTH, TwoBody

__all__ = ["ForceElement", "as_elements", "potential_energy", "total_wrenches", "vehicle_wrench",
           "LinkBuoyancy", "VehicleHydrodynamics", "hydrodynamics_elements", "Forces",
           "ELEMENTS", "compile_forces", "elements_from_config", "element_from_config", "Spring",
           "TwoBody", "MU_EARTH", "UniformGravity", "fold_gravity", "with_gravity"]
