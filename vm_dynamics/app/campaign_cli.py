"""``vm-campaign``: a Monte Carlo campaign of a scenario, or one of its runs replayed.

    vm-campaign SCENARIO --dispersions FILE [--runs N] [--out DIR] [--workers N]
                [--backend local|serial|dask] [--cluster tcp://HOST:PORT] [--chunk-size N]
                [--success EXPR] [--keep-worst K] [--keep-failures] [--ranking METRIC]
                [-p NAME:=VALUE ...] [--no-plots] [--quiet]
    vm-campaign SCENARIO --dispersions FILE --replay K [--out DIR] [--no-plots]

A campaign writes ``campaign.json`` (every run's dispersed values and metrics), ``report.md``
(outcomes, the failure probability with its 95 % Wilson interval, the worst runs) and
``histograms.png``/``scatter.png`` into DIR (default ``out/<scenario>_campaign``).
``--replay K`` runs run K alone and writes what ``vm-sim`` writes (``trajectory.mcap`` with
every sample, ``summary.json`` with the run's campaign metrics, the plots) into DIR (default
``out/<scenario>_run<K>``); its metrics are those of the campaign, bit for bit.

Exit codes: 0 done; 2 bad arguments or a bad scenario or dispersions file (one line naming the
key, before any run); 130 interrupted.
"""
from __future__ import annotations

import argparse
import sys

__all__ = ["main", "build_parser"]

EXIT_OK, EXIT_USAGE, EXIT_INTERRUPTED = 0, 2, 130


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vm-campaign", description=__doc__.split("\n\n")[0])
    p.add_argument("scenario", help="scenario name (vm-sim --list) or .yaml path")
    p.add_argument("--dispersions", required=True, metavar="FILE",
                   help="dispersions YAML (seed, runs, success, dispersions)")
    p.add_argument("--runs", type=int, help="number of runs (default: the file's runs)")
    p.add_argument("--out", help="output directory")
    p.add_argument("--backend", default="local", choices=("local", "serial", "dask"))
    p.add_argument("--workers", type=int, help="worker processes (default: every core)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="Dask scheduler address (tcp://host:port); implies --backend dask")
    p.add_argument("--chunk-size", type=int, help="runs per task (default: automatic)")
    p.add_argument("--success", metavar="EXPR", help="success predicate over the metrics")
    p.add_argument("--keep-worst", type=int, default=0, metavar="K",
                   help="keep the trajectories of the K worst runs (in campaign.npz)")
    p.add_argument("--keep-failures", action="store_true",
                   help="keep the trajectories of every run that did not pass")
    p.add_argument("--ranking", default="tracking_error_rms", metavar="METRIC",
                   help="metric the worst runs are ranked by")
    p.add_argument("--replay", type=int, metavar="K", help="replay run K as vm-sim would")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME:=VALUE",
                   help="scenario parameter override (as vm-sim -p)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        from ..campaign import make_spec
        from .arguments import parse_param_overrides
        spec = make_spec(args.scenario, args.dispersions, parse_param_overrides(args.param),
                         success=args.success)
        if args.replay is not None:
            return _replay(spec, args)
        return _campaign(spec, args)
    except ValueError as exc:
        _log(f"vm-campaign: error: {str(exc).splitlines()[0]}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _log("vm-campaign: interrupted")
        return EXIT_INTERRUPTED


def _campaign(spec, args) -> int:
    from pathlib import Path

    from ..campaign import run_campaign
    from ..campaign.report import write_report
    from ..campaign.runner import context
    name = context(spec).scn.name
    out = Path(args.out or f"out/{name}_campaign")
    backend = "dask" if args.cluster else args.backend
    result = run_campaign(None, spec=spec, runs=args.runs, backend=backend, workers=args.workers,
                          cluster=args.cluster, chunk_size=args.chunk_size,
                          progress=not args.quiet, keep_worst=args.keep_worst,
                          keep_failures=args.keep_failures, ranking=args.ranking)
    files = write_report(result, out, plots=not args.no_plots)
    if result.trajectories:
        _save_trajectories(result.trajectories, out / "campaign.npz")
    s = result.summary()
    fp = s["failure_probability"]
    _log(f"vm-campaign: {s['runs']} runs in {s['wall_s']:.3g} s ({s['runs_per_s']:.3g} runs/s, "
         f"{backend}); {s['counts']['pass']} pass; failure probability {fp['estimate']:.4g} "
         f"[{fp['interval'][0]:.4g}, {fp['interval'][1]:.4g}] (95 % Wilson); report: "
         f"{files['markdown']}")
    return EXIT_OK


def _save_trajectories(trajectories: dict, path) -> None:
    import numpy as np
    arrays = {}
    for k, traj in trajectories.items():
        if traj is None:
            continue
        for field in ("t", "g", "V", "q", "qd", "tau", "base_wrench"):
            arrays[f"run{k}_{field}"] = getattr(traj, field)
    np.savez_compressed(path, **arrays)


def _replay(spec, args) -> int:
    """Run ``args.replay`` alone into a vm-sim output directory."""
    import dataclasses

    from ..campaign import rerun
    from ..campaign.apply import disperse
    from ..campaign.runner import context, make_controller
    from .interrupts import DeferredInterrupt
    from .output_dir import output_dir
    from .outputs import write_outputs, write_summary
    from .run import Run, SampleRecorder, open_recorder
    ctx = context(spec)
    k = args.replay
    if k < 0:
        raise ValueError(f"--replay: expected a run index >= 0, got {k}")
    d = disperse(ctx.disp, ctx.scn, k)
    scn = dataclasses.replace(ctx.scn, model=d.model, initial=d.initial, forces=d.forces,
                              hydrodynamics=d.hydrodynamics, controller=d.controller)
    out = output_dir(scn, args.out or f"out/{scn.name}_run{k}")
    run = Run(scn=scn, ctrl_name=ctx.ctrl_name, ctrl=make_controller(ctx, d),
              reference=ctx.reference, out=out, record_rate=0.0, plots=not args.no_plots,
              progress=False)
    run.recorder = open_recorder(run)
    run.record_every = spec.record_every
    _log(f"vm-campaign: replaying run {k} of {scn.name} (seed {ctx.disp.seed}) ...")
    result = rerun(spec, k, on_sample=SampleRecorder(run))
    with DeferredInterrupt(_log) as stop:
        summary = write_outputs(run, result.trajectory, result.wall,
                                result.metrics.get("divergence"), False, stop, _log)
    from ..campaign.report import jsonable
    summary["campaign"] = jsonable({"run": k, "seed": ctx.disp.seed, "outcome": result.outcome,
                                    "values": result.values, "metrics": result.metrics,
                                    "compiled_law": result.compiled_law})
    write_summary(out, summary)
    _log(f"vm-campaign: run {k}: {result.outcome}; wrote {out}/")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
