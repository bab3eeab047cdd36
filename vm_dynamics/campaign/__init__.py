"""Monte Carlo campaigns: many closed-loop runs of a scenario with dispersed parameters.

A dispersions file (:mod:`.dispersions`) names the perturbed parameters and their
distributions and one seed; run k draws its values from ``SeedSequence(seed, spawn_key=(k,))``
(:mod:`.apply`), runs the scenario's controller on the dispersed plant (:mod:`.runner`), and is
scored (:mod:`.metrics`: metrics, success predicate, Wilson interval).  :mod:`.backends` runs
the runs in this process, in local worker processes or on a Dask cluster, with the same
results; :mod:`.report` writes the summary, plots and the worst runs.
"""
from .campaign import OUTCOMES, CampaignResult, make_spec, rerun, run_campaign
from .dispersions import Dispersions, load_dispersions, parse_dispersions
from .metrics import METRICS, Predicate, wilson_interval
from .runner import CampaignSpec, RunResult

__all__ = ["run_campaign", "make_spec", "rerun", "CampaignResult", "CampaignSpec", "RunResult",
           "Dispersions", "load_dispersions", "parse_dispersions", "Predicate",
           "wilson_interval", "METRICS", "OUTCOMES"]
