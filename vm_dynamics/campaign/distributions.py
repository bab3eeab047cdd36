"""Named distributions of a dispersions file: parsed once, sampled from a run's generator.

A distribution is a mapping with ``dist`` and its parameters::

    {dist: normal, mean: 0.0, std: 0.05}
    {dist: uniform, low: -0.1, high: 0.1}
    {dist: truncated_normal, mean: 1.0, std: 0.05, low: 0.9, high: 1.1}
    {dist: lognormal, median: 1.0, sigma: 0.05}     # exp(N(log median, sigma²)): always > 0
    {dist: constant, value: 2.0}

Every problem is a ``ValueError`` naming the key (``dispersions.mass.link3.std``), so a bad
file fails in one line before any run.  Sampling draws from the ``numpy.random.Generator`` it
is given, so a run's values depend only on that generator (the run's seed).
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Distribution", "parse_distribution", "DISTRIBUTIONS"]

#: Each distribution's required and optional parameters.
DISTRIBUTIONS = {
    "normal": (("mean", "std"), ()),
    "uniform": (("low", "high"), ()),
    "truncated_normal": (("mean", "std", "low", "high"), ()),
    "lognormal": (("sigma",), ("median",)),
    "constant": (("value",), ()),
}


@dataclass(frozen=True)
class Distribution:
    """One named distribution with its checked parameters (:data:`DISTRIBUTIONS`)."""

    kind: str
    params: tuple          # ((name, value), ...) in table order
    key: str               # where it was given, for error messages

    def get(self, name: str, default=None) -> float:
        return dict(self.params).get(name, default)

    def sample(self, rng: np.random.Generator, size: int | None = None):
        """``size`` samples (a float if None) drawn from ``rng``."""
        p = dict(self.params)
        if self.kind == "normal":
            return rng.normal(p["mean"], p["std"], size)
        if self.kind == "uniform":
            return rng.uniform(p["low"], p["high"], size)
        if self.kind == "lognormal":
            return p.get("median", 1.0) * np.exp(rng.normal(0.0, p["sigma"], size))
        if self.kind == "constant":
            return p["value"] if size is None else np.full(size, p["value"])
        return self._truncated(rng, p, size)

    @staticmethod
    def _truncated(rng, p, size):
        """Inverse-CDF sampling of the normal truncated to ``[low, high]`` (one uniform draw per
        sample, so the number of draws does not depend on the values)."""
        from scipy.special import ndtr, ndtri
        a = (p["low"] - p["mean"]) / p["std"]
        b = (p["high"] - p["mean"]) / p["std"]
        lo, hi = ndtr(a), ndtr(b)
        u = rng.uniform(0.0, 1.0, size)
        x = p["mean"] + p["std"] * ndtri(lo + u * (hi - lo))
        return np.clip(x, p["low"], p["high"])

    def support(self) -> tuple[float, float]:
        """The interval the samples lie in (infinite ends for unbounded distributions)."""
        p = dict(self.params)
        if self.kind in ("uniform", "truncated_normal"):
            return p["low"], p["high"]
        if self.kind == "lognormal":
            return 0.0, math.inf
        if self.kind == "constant":
            return p["value"], p["value"]
        return -math.inf, math.inf


def _number(value, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{key}: expected a finite number, got {value!r:.60}")
    return float(value)


def parse_distribution(spec, key: str) -> Distribution:
    """The :class:`Distribution` of a mapping ``{dist: name, ...}`` given at ``key``; a
    ``ValueError`` naming ``key`` (and the parameter) for anything else."""
    if not isinstance(spec, dict):
        raise ValueError(f"{key}: expected a distribution mapping like {{dist: normal, mean: 0, "
                         f"std: 0.1}}, got {spec!r:.60}")
    kind = spec.get("dist")
    if kind not in DISTRIBUTIONS:
        near = difflib.get_close_matches(str(kind), DISTRIBUTIONS, n=1, cutoff=0.5)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"{key}.dist: unknown distribution {kind!r}{hint}; known: "
                         f"{', '.join(DISTRIBUTIONS)}")
    required, optional = DISTRIBUTIONS[kind]
    extra = sorted(set(spec) - {"dist", "mode"} - set(required) - set(optional))
    if extra:
        allowed = list(required) + list(optional)
        near = difflib.get_close_matches(extra[0], allowed, n=1, cutoff=0.5)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"{key}.{extra[0]}: unknown parameter of {kind}{hint}; it takes "
                         f"{', '.join(allowed)}")
    params = []
    for name in required + optional:
        if name not in spec:
            if name in optional:
                continue
            raise ValueError(f"{key}.{name}: missing; {kind} takes {', '.join(required)}")
        params.append((name, _number(spec[name], f"{key}.{name}")))
    p = dict(params)
    for scale in ("std", "sigma"):
        if scale in p and p[scale] < 0:
            raise ValueError(f"{key}.{scale}: must be >= 0, got {p[scale]:g}")
    if "low" in p and not p["low"] < p["high"]:
        raise ValueError(f"{key}.low: must be below high ({p['low']:g} >= {p['high']:g})")
    if kind == "truncated_normal" and p["std"] == 0:
        raise ValueError(f"{key}.std: must be > 0 for a truncated normal")
    if kind == "lognormal" and p.get("median", 1.0) <= 0:
        raise ValueError(f"{key}.median: must be > 0, got {p['median']:g}")
    return Distribution(kind, tuple(params), key)
