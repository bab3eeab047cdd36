"""Simulation layer: Runge–Kutta–Munthe-Kaas integrators (:mod:`.integrators`), the compiled
engine (:mod:`.engine`), :func:`simulate` (:mod:`.simulate`) and base reconstruction
(:mod:`.reconstruction`)."""
