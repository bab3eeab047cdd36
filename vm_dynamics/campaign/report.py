"""A campaign's report: ``campaign.json`` (summary and every run's values and metrics),
``report.md`` (summary, failure probability, the worst runs), histograms of the metrics and
scatter plots of metrics against the dispersed values (PNG, matplotlib)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .campaign import CampaignResult

__all__ = ["write_report", "campaign_json", "markdown", "figures", "jsonable", "PLOTTED_METRICS"]

#: The metrics plotted (those that vary from run to run and are finite are drawn).
PLOTTED_METRICS = ("tracking_error_rms", "tracking_error_final", "attitude_max_deg",
                   "position_max_m", "tau_peak", "base_torque_peak", "energy_balance_rel")


def jsonable(x):
    """``x`` with NumPy scalars as Python ones and NaN/Inf as None (strict JSON)."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def campaign_json(result: CampaignResult) -> dict:
    """The summary and every run (``k``, outcome, compiled law, values, metrics); NaN is
    written as null."""
    runs = [{"k": r.k, "outcome": r.outcome, "compiled_law": r.compiled_law,
             "values": r.values, "metrics": r.metrics} for r in result.results]
    return jsonable({"summary": result.summary(), "runs": runs,
                   "kept_trajectories": sorted(result.trajectories)})


def _fmt(v) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (float, int)):
        return "–" if not math.isfinite(v) else f"{v:.4g}"
    return str(v)


def markdown(result: CampaignResult, worst: int = 10, figures=()) -> str:
    """The report's text."""
    s = result.summary()
    fp = s["failure_probability"]
    lo, hi = fp["interval"]
    c = s["counts"]
    lines = [f"# Campaign: {s['scenario']}, {s['runs']} runs (seed {s['seed']})", "",
             f"- success predicate: `{s['success']}`",
             f"- outcomes: {c['pass']} pass, {c['fail']} fail, {c['untrusted']} integration "
             f"not trusted, {c['diverged']} diverged",
             f"- failure probability: {fp['estimate']:.4g} "
             f"({100 * fp['confidence']:g} % Wilson interval [{lo:.4g}, {hi:.4g}]; counted: "
             f"{fp['counted']})",
             f"- controller: {s['controller']['name'] or 'none'}, ran as "
             f"{', '.join(s['controller']['paths'])}"
             + (f" ({s['controller']['python_path_runs']} runs on the Python path: no compiled "
                f"law, sensor noise or an open-loop input)"
                if s["controller"]["python_path_runs"] and s["controller"]["name"] else ""),
             f"- wall time {s['wall_s']:.3g} s, {s['runs_per_s']:.3g} runs/s, backend "
             f"{s['backend']} with {s['workers']} workers; metrics on every "
             f"{s['record_every']}-th step", "",
             f"## Worst runs (by outcome, then {result.ranking})", ""]
    cols = ["tracking_error_rms", "attitude_max_deg", "position_max_m", "tau_peak",
            "energy_balance_rel"]
    lines.append("| run | outcome | " + " | ".join(cols) + " | note |")
    lines.append("|" + "---|" * (len(cols) + 3))
    for r in result.worst(worst):
        div = r.metrics.get("divergence")
        note = div["reason"] if div else ""
        lines.append(f"| {r.k} | {r.outcome} | "
                     + " | ".join(_fmt(r.metrics.get(m, math.nan)) for m in cols)
                     + f" | {note} |")
    lines += ["", f"Replay a run: `vm-campaign {s['scenario']} --dispersions FILE --replay K`",
              ""]
    for f in figures:
        lines.append(f"![{Path(f).stem}]({Path(f).name})")
    return "\n".join(lines) + "\n"


def _columns(result, names, source):
    return {n: np.array([getattr(r, source).get(n, math.nan) for r in result.results],
                        dtype=float) for n in names}


def figures(result: CampaignResult, out: Path) -> list[Path]:
    """``histograms.png`` (every plotted metric) and ``scatter.png`` (each varying metric
    against each dispersed value, up to 6 × 6 panels); the paths written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    metrics = {k: v for k, v in _columns(result, PLOTTED_METRICS, "metrics").items()
               if np.isfinite(v).sum() > 1 and np.nanmax(v) > np.nanmin(v)}   # those that vary
    names = list(dict.fromkeys(n for r in result.results for n in r.values))[:6]
    values = _columns(result, names, "values")
    colors = np.array(["tab:green" if r.outcome == "pass" else "tab:red" for r in result.results])
    written = []
    if metrics:
        fig, axes = plt.subplots(1, len(metrics), figsize=(3 * len(metrics), 2.6), squeeze=False)
        for ax, (name, v) in zip(axes[0], metrics.items()):
            ax.hist(v[np.isfinite(v)], bins=30, color="tab:blue")
            ax.set_title(name, fontsize=8)
            ax.tick_params(labelsize=7)
        fig.tight_layout()
        written.append(out / "histograms.png")
        fig.savefig(written[-1], dpi=90)
        plt.close(fig)
    shown = list(metrics)[:6]
    if shown and values:
        fig, axes = plt.subplots(len(shown), len(values), squeeze=False,
                                 figsize=(2.4 * len(values), 2.0 * len(shown)))
        for i, m in enumerate(shown):
            for j, (name, x) in enumerate(values.items()):
                ax = axes[i, j]
                ax.scatter(x, metrics[m], s=4, c=colors)
                ax.tick_params(labelsize=6)
                if i == len(shown) - 1:
                    ax.set_xlabel(name, fontsize=7)
                if j == 0:
                    ax.set_ylabel(m, fontsize=7)
        fig.tight_layout()
        written.append(out / "scatter.png")
        fig.savefig(written[-1], dpi=90)
        plt.close(fig)
    return written


def write_report(result: CampaignResult, out, plots: bool = True, worst: int = 10) -> dict:
    """Write ``campaign.json``, ``report.md`` and (``plots``) the figures into ``out``;
    returns ``{"json", "markdown", "figures"}`` paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "campaign.json").write_text(json.dumps(campaign_json(result), indent=1,
                                                  allow_nan=False) + "\n")
    figs = figures(result, out) if plots and len(result.results) > 1 else []
    (out / "report.md").write_text(markdown(result, worst, figs))
    return {"json": out / "campaign.json", "markdown": out / "report.md", "figures": figs}
