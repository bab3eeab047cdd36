"""Application layer: scenario files (:mod:`.scenario`) and the ``vm-sim`` command
(:mod:`.cli`)."""
