"""Kinematically constrained systems with symmetry (paper 002, §4): kinematic connection,
curvature, Hamel equations in the independent velocities and reconstruction on the group."""
from .ball import RollingBall, ball_connection_matrix, rolling_ball
from .connection import TRIVIALISATIONS, KinematicConnection
from .drive import ConstrainedStepper, WheelOdometry, WheelVelocityController
from .hamel import HamelSystem, ReducedLagrangian, ShapeTerms
from .integrate import ConstrainedTrajectory, simulate_constrained
from .wheeled import DifferentialDrive, diff_drive_connection_matrix, differential_drive

__all__ = ["KinematicConnection", "TRIVIALISATIONS", "HamelSystem", "ReducedLagrangian",
           "ShapeTerms", "ConstrainedTrajectory", "simulate_constrained", "RollingBall",
           "rolling_ball", "ball_connection_matrix", "DifferentialDrive", "differential_drive",
           "diff_drive_connection_matrix", "ConstrainedStepper", "WheelVelocityController",
           "WheelOdometry"]
