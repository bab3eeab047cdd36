"""Application layer: the ``vm-sim`` command (:mod:`.cli`) -- its command line
(:mod:`.arguments`), the run (:mod:`.run`, :mod:`.output_dir`, :mod:`.interrupts`) and what it
writes (:mod:`.outputs`).  Scenarios are read by the configuration layer
(:mod:`vm_dynamics.config.scenario`) from the files in ``config/``."""
