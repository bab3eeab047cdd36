"""Core layer: Lie groups and their algebra (:mod:`.lie`), the vehicle subgroups (:mod:`.groups`),
input validation (:mod:`.validation`), the simulation :class:`~.state.State` and the error types
(:mod:`.errors`).  Imports nothing else from the package."""
