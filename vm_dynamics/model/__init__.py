"""Model layer: URDF parsing (:mod:`.urdf`), the vehicle-manipulator :class:`Model`
(:mod:`.model`; mimic joints as :class:`JointCoupling`, :mod:`.coupling`), mounting an arm on
a vehicle (:mod:`.mounting`) and the hydrodynamic environment (:mod:`.hydrodynamics`).
Imports the core and dynamics layers."""
from .coupling import JointCoupling
from .model import Model, load_model

__all__ = ["Model", "load_model", "JointCoupling"]
