"""The campaign API: :func:`make_spec`, :func:`run_campaign`, :func:`rerun`.

::

    from vm_dynamics.campaign import run_campaign
    result = run_campaign("spacecraft_arm", "dispersions.yaml", runs=1000)
    result.summary()["failure_probability"]      # {"estimate", "ci95": [lo, hi], ...}
    traj = rerun(result.spec, 17).trajectory      # run 17 again, alone, bit for bit

The scenario and the dispersions are loaded and checked in the calling process first, so a
bad file fails in one line before any worker starts.  Metrics are kept for every run; full
trajectories only for the runs asked for (``keep``: the worst ``k`` and the non-passing
runs), recomputed from their index after the campaign (a run is a function of the seed and
its index), so the workers never ship trajectories back.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from .backends import execute
from .dispersions import load_dispersions, parse_dispersions
from .metrics import wilson_interval
from .runner import CampaignSpec, RunResult, context, run_one

__all__ = ["make_spec", "run_campaign", "rerun", "CampaignResult", "OUTCOMES"]

OUTCOMES = ("pass", "fail", "untrusted", "diverged")
#: Metric the worst runs are ranked by (after the outcome) when none is given.
DEFAULT_RANKING = "tracking_error_rms"


def make_spec(scenario, dispersions, overrides: dict | None = None, success=None,
              record_every: int | None = None, controller: str | None = None) -> CampaignSpec:
    """A checked :class:`~.runner.CampaignSpec`: ``dispersions`` a file path or the file's
    mapping; ``record_every`` the steps per kept sample (default: about 100 Hz); the scenario
    is loaded and the dispersions checked against it here (``ValueError`` naming the key)."""
    if isinstance(dispersions, (str, Path)):
        doc = load_dispersions(dispersions).raw
    elif isinstance(dispersions, dict):
        parse_dispersions(dispersions)
        doc = dict(dispersions)
    else:
        raise ValueError(f"dispersions: expected a file path or a mapping, got "
                         f"{type(dispersions).__name__}")
    scenario = str(scenario)
    overrides = tuple(sorted((overrides or {}).items()))
    key = hashlib.sha256(json.dumps([scenario, overrides, doc, record_every, controller],
                                    sort_keys=True, default=repr).encode()).hexdigest()[:16]
    spec = CampaignSpec(scenario=scenario, dispersions_doc=doc, overrides=overrides,
                        success=success, record_every=record_every or 1, controller=controller,
                        key=key)
    ctx = context(spec)                       # loads and checks everything now
    if record_every is None:
        every = max(1, round(0.01 / ctx.scn.dt))
        spec = CampaignSpec(scenario=scenario, dispersions_doc=doc, overrides=overrides,
                            success=success, record_every=every, controller=controller, key=key)
    elif not (isinstance(record_every, int) and record_every >= 1):
        raise ValueError(f"record_every: expected an integer >= 1, got {record_every!r}")
    return spec


@dataclass
class CampaignResult:
    """Every run's result (sorted by index), the trajectories kept (``{k: Trajectory}``) and
    the wall time; :meth:`summary` is the report's content."""

    spec: CampaignSpec
    results: list
    wall: float
    backend: str
    workers: int
    trajectories: dict = field(default_factory=dict)
    ranking: str = DEFAULT_RANKING

    def counts(self) -> dict:
        return {o: sum(r.outcome == o for r in self.results) for o in OUTCOMES}

    def worst(self, k: int = 10) -> list[RunResult]:
        """The ``k`` worst runs: the non-passing first (diverged, untrusted, fail), then by
        :attr:`ranking`, largest first (NaN last)."""
        order = {"diverged": 0, "untrusted": 1, "fail": 2, "pass": 3}

        def key(r):
            v = r.metrics.get(self.ranking, math.nan)
            return (order[r.outcome], -v if isinstance(v, float) and math.isfinite(v)
                    else math.inf, r.k)
        return sorted(self.results, key=key)[:k]

    def summary(self, confidence: float = 0.95) -> dict:
        """Counts by outcome, the failure probability (non-passing runs / runs) with its
        Wilson interval, how the controller ran, the wall time and the rate."""
        n = len(self.results)
        counts = self.counts()
        failures = n - counts["pass"]
        lo, hi = wilson_interval(failures, n, confidence)
        laws = sorted({r.compiled_law or "python" for r in self.results})
        ctx = context(self.spec)
        return {
            "scenario": ctx.scn.name, "runs": n, "seed": ctx.disp.seed,
            "success": repr(ctx.predicate), "counts": counts,
            "failure_probability": {"estimate": failures / n if n else math.nan,
                                    "confidence": confidence, "interval": [lo, hi],
                                    "method": "wilson",
                                    "counted": "fail + untrusted + diverged"},
            "controller": {"name": ctx.ctrl_name, "paths": laws,
                           "python_path_runs": sum(r.compiled_law is None for r in self.results)},
            "wall_s": self.wall, "runs_per_s": n / self.wall if self.wall > 0 else math.nan,
            "backend": self.backend, "workers": self.workers,
            "record_every": self.spec.record_every,
        }


class _Progress:
    """A tqdm bar over runs (rate in runs/s and the ETA), or nothing.  The bar (and tqdm's
    monitor thread) starts at the first result, after the local pool has forked its workers
    (a fork copies no thread, and no lock one of them might hold); its clock from the start."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.bar = total, enabled, None
        self.start = time.time()

    def __call__(self, part):
        if not self.enabled:
            return
        if self.bar is None:
            from tqdm.auto import tqdm
            # smoothing 0: the rate and ETA over the whole campaign (results come in chunks)
            self.bar = tqdm(total=self.total, unit="run", desc="campaign", smoothing=0)
            self.bar.start_t = self.bar.last_print_t = self.start
        self.bar.update(len(part))
        fails = sum(r.outcome != "pass" for r in part)
        if fails:
            self.bar.set_postfix_str(f"+{fails} not passed", refresh=False)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def run_campaign(scenario, dispersions=None, runs: int | None = None, *, spec=None,
                 backend: str = "local", workers: int | None = None, cluster: str | None = None,
                 chunk_size: int | None = None, progress: bool = False, keep_worst: int = 0,
                 keep_failures: bool = False, ranking: str = DEFAULT_RANKING,
                 **spec_options) -> CampaignResult:
    """Run ``runs`` dispersed runs (default: the file's ``runs``) of ``scenario`` on
    ``backend`` (:func:`~.backends.execute`); ``spec_options`` go to :func:`make_spec`.
    ``keep_worst``/``keep_failures``: the trajectories kept in ``result.trajectories``."""
    from .metrics import METRICS
    if ranking not in METRICS:
        from .dispersions import did_you_mean
        raise ValueError(f"ranking: unknown metric {ranking!r}{did_you_mean(ranking, METRICS)}")
    spec = spec or make_spec(scenario, dispersions, **spec_options)
    runs = runs if runs is not None else context(spec).disp.runs
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs: expected an integer >= 1 (or 'runs' in the dispersions "
                         f"file), got {runs!r}")
    bar = _Progress(runs, progress)
    start = time.perf_counter()
    try:
        results = execute(spec, range(runs), backend, workers, cluster, chunk_size, bar)
    finally:
        bar.close()
    wall = time.perf_counter() - start
    from .backends import default_workers
    result = CampaignResult(spec=spec, results=results, wall=wall, backend=backend,
                            workers=1 if backend == "serial" else (workers or default_workers()),
                            ranking=ranking)
    keep = {r.k for r in result.worst(keep_worst)} if keep_worst else set()
    if keep_failures:
        keep |= {r.k for r in results if r.outcome != "pass"}
    for k in sorted(keep):
        result.trajectories[k] = rerun(spec, k).trajectory
    return result


def rerun(spec: CampaignSpec, k: int, on_sample=None) -> RunResult:
    """Run ``k`` of ``spec`` alone, with its trajectory: the same metrics, bit for bit, as in
    the campaign."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"run: expected an index >= 0, got {k!r}")
    return run_one(spec, k, keep_trajectory=True, on_sample=on_sample)
