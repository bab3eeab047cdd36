"""See the robot: a local 3D view in the browser (``vm-view``, ``vm-sim --view``) and offscreen
videos (``vm-sim --video``).

* :mod:`.scene` (numpy only): the robot's visual geometry from its URDF and
  :class:`~.scene.Playback`, link poses over time, built from a simulation or read from any
  MCAP recording with ``/robot_description`` and TF (:func:`~.scene.playback_from_mcap`).
* :mod:`.server`: :class:`~.server.RobotViewer`, a page served from this machine by `viser
  <https://viser.studio>`_ (three.js, no account, no internet) with a time slider for replays
  and a live mode for running simulations.  Needs ``pip install vm_dynamics[viz]``.
* :mod:`.video`: renders a :class:`~.scene.Playback` to MP4 or GIF offscreen with matplotlib.

Nothing here is imported by ``import vm_dynamics``: the library needs numpy and scipy only.
"""

VIZ_HINT = "install the viewer with: pip install 'vm_dynamics[viz]'"


def missing_extra(exc: ImportError) -> str:
    """One-line message for a viewer dependency that is not installed."""
    name = getattr(exc, "name", None) or str(exc)
    return f"{name} is not installed; {VIZ_HINT}"
