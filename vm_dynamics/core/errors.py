"""Exceptions of vm_dynamics that carry more than a message.

:class:`SimulationDiverged` is raised when a simulation reaches a non-finite or exploding
state.  It is a ``ValueError`` (bad inputs — a step too large or gains too stiff for the
dynamics — are the usual cause), so existing ``except ValueError`` handlers keep working, and it
carries what a caller needs to report the failure and keep the work done so far.
"""
from __future__ import annotations

__all__ = ["SimulationDiverged"]


class SimulationDiverged(ValueError):
    """A simulation stopped at the first non-finite or exploding state.

    Attributes
    ----------
    t : float
        Simulated time (s) of the first bad state (or of the step that failed).
    reason : str
        What was wrong, e.g. ``"joint velocity 3.2e+07 exceeds 1e+06"`` or ``"non-finite
        state"``.
    trajectory : Trajectory or None
        The samples computed before the failure (all finite), or ``None`` if none are
        available.

    ``str(exc)`` is the one-line message ``"diverged at t = X s (reason); reduce dt or the
    gains"``.
    """

    def __init__(self, t: float, reason: str, trajectory=None):
        self.t = float(t)
        self.reason = str(reason)
        self.trajectory = trajectory
        super().__init__(f"diverged at t = {self.t:.6g} s ({self.reason}); reduce dt or the gains")

    def __reduce__(self):
        return (type(self), (self.t, self.reason, self.trajectory))
