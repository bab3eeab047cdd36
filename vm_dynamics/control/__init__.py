"""Controllers for vehicle-manipulator systems, with a plug-in interface.

``get_controller(name, params)`` builds a controller registered under the entry-point group
``vm_dynamics.controllers`` (built-ins: ``computed_torque``, ``pd_gravity``, ``task_space``);
``reset(model, state)`` binds it; ``compute(t, state, reference) -> (tau, base_wrench)``;
``inputs(reference)`` is what it hands the engine (:class:`~.inputs.ControllerInputs`).
References (joint waypoints/sinusoids/set-points, SE(3) pose waypoints) are in
:mod:`vm_dynamics.control.references`.
"""
from .base import (
                   BUILTIN_CONTROLLERS,
                   ENTRY_POINT_GROUP,
                   Controller,
                   available_controllers,
                   get_controller,
)
from .computed_torque import ComputedTorqueController
from .pd_gravity import PDGravityController
from .references import (
                   JointSetpoint,
                   JointSinusoid,
                   JointWaypoints,
                   PoseSetpoint,
                   PoseWaypoints,
                   Reference,
                   reference_from_config,
)
from .task_space import TaskSpaceController

__all__ = ["Controller", "get_controller", "available_controllers", "ENTRY_POINT_GROUP",
           "BUILTIN_CONTROLLERS", "ComputedTorqueController", "PDGravityController",
           "TaskSpaceController",
           "Reference", "JointWaypoints", "JointSinusoid", "JointSetpoint", "PoseWaypoints",
           "PoseSetpoint", "reference_from_config"]
