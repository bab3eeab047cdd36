"""Simulation layer: the engine :class:`~.engine.Simulator` (state and public API), its stepping
strategies (:mod:`.steppers`), stage evaluations (:mod:`.stages`), compiled step
(:mod:`.kernels`, records in :mod:`.records`), the Runge–Kutta–Munthe-Kaas methods
(:mod:`.integrators`), :func:`simulate` (:mod:`.simulate`, samples in :mod:`.samples`) and base
reconstruction (:mod:`.reconstruction`)."""
