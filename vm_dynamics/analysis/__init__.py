"""Analysis layer: conservation and tracking metrics (:mod:`.metrics`), the Euler-angle baseline
of the tumbling study (:mod:`.euler_model`) and plots that return matplotlib Figures
(:mod:`.plotting`)."""
