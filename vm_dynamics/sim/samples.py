"""The sample buffer of :func:`vm_dynamics.sim.simulate`: which samples are kept, their inputs, the
per-sample consumers (callback, on_sample, progress bar) and the arrays of the trajectory.

Samples ``0, r, 2r, …`` and the last one are kept (``r = record_every``); the others pass
through one scratch row (the callback and ``on_sample`` still see them).  The inputs applied at
a sample may be known only later (the first stage of the next step evaluates them): such a
sample is *pending* until :meth:`SampleBuffer.inputs_of` gives them, or they are evaluated at
the sample's own state (:class:`SampleInputs`).
"""
from __future__ import annotations

import numpy as np

from ..core.state import State

__all__ = ["SampleBuffer", "SampleInputs"]


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class SampleInputs:
    """The inputs recorded at a sample: those given (the engine's first stage there) or the
    stage inputs evaluated at the sample's state; plus the force elements' vehicle wrench, and
    for prescribed motion the efforts that realise it (:meth:`Simulator.prescribed_effort`)."""

    def __init__(self, sim, stage_inputs, prescribed, frame_fns, has_base_wrench):
        self.sim, self.stage_inputs = sim, stage_inputs
        self.prescribed, self.frame_fns = prescribed, frame_fns
        self.has_base_wrench = has_base_wrench

    def __call__(self, t, g, V, q, qd, given):
        """``(tau, base_wrench)`` at the sample ``(t, g, V, q, qd)``."""
        sim = self.sim
        state = State(t, _ro(g), _ro(V), _ro(q), _ro(qd))
        if given is not None:
            tau, bw = given
        else:
            inputs = sim.evaluate_inputs(self.stage_inputs, t, state)
            tau, bw = inputs.tau, inputs.base_wrench
        bw = np.array(bw, dtype=float)
        if sim.forces and sim.model.b:   # the applied vehicle wrench includes the elements'
            from ..forces import vehicle_wrench
            bw += vehicle_wrench(sim.model, sim.forces, g, V, q)
        if self.prescribed:                 # at the sample's own state (not the engine's)
            fws = {name: fn(t, state) for name, fn in self.frame_fns} if self.frame_fns \
                else None
            base = np.array(given[1] if given is not None else inputs.base_wrench, dtype=float) \
                if self.has_base_wrench else None
            tau = sim.prescribed_effort(fws, base, state=state)   # (adds the elements itself)
        return tau, bw


class SampleBuffer:
    """The kept samples of ``N + 1`` (see the module docstring).  ``inputs`` is a
    :class:`SampleInputs`; ``callback(state) -> bool`` may stop the run; ``on_sample(t, g, V,
    q, qd, tau, base_wrench)`` sees every sample once its inputs are known; ``bar`` is a
    progress bar or None; ``track_work`` records the engine's work account."""

    def __init__(self, N, record_every, b, n, inputs, callback=None, on_sample=None, bar=None,
                 track_work=True, per_sample=False):
        self.N, self.r = N, record_every
        self.kept = N // self.r + 1 + (1 if N % self.r else 0)  # samples 0, r, 2r, ... and N
        S = self.kept + 1                               # + one scratch row
        self.rec = dict(t=np.empty(S), g=np.empty((S, 4, 4)), V=np.empty((S, b)),
                        q=np.empty((S, n)), qd=np.empty((S, n)), tau=np.empty((S, n)),
                        base_wrench=np.empty((S, b)), work=np.full((S, 2), np.nan))
        self.inputs, self.callback, self.on_sample, self.bar = inputs, callback, on_sample, bar
        self.track_work = track_work
        #: every sample goes through :meth:`record` (a per-sample consumer or force elements)
        self.per_sample = per_sample or callback is not None or on_sample is not None
        self.count = 0          # rows kept so far
        self.last = -1          # the last sample recorded
        self.pending = None     # the sample whose inputs are not yet known

    def slot(self, k):
        """Row of sample k: its own if it is kept, else the scratch row."""
        if k % self.r == 0:
            return k // self.r
        return self.kept - 1 if k == self.N else self.kept

    def inputs_of(self, k, given):
        """Store the inputs of sample ``k`` (``given`` ``(tau, base_wrench)`` or None: evaluate
        them at the sample) and pass the sample to ``on_sample``."""
        self.pending = None
        j = self.slot(k)
        rec = self.rec
        tau, bw = self.inputs(rec["t"][j], rec["g"][j], rec["V"][j], rec["q"][j], rec["qd"][j],
                              given)
        rec["tau"][j] = tau
        rec["base_wrench"][j] = bw
        if self.on_sample is not None:
            self.on_sample(rec["t"][j], rec["g"][j], rec["V"][j], rec["q"][j], rec["qd"][j],
                           _ro(rec["tau"][j]), _ro(rec["base_wrench"][j]))

    def flush(self):
        """Evaluate the inputs of the pending sample, if any."""
        if self.pending is not None:
            self.inputs_of(self.pending, None)

    def record(self, k, t, g, V, q, qd, defer=False, work=None):
        """Store sample k (its inputs now, or later if ``defer``; ``work`` the engine's
        ``[work, abs_work]`` there); returns True if the callback asks to stop."""
        if self.pending is not None and self.pending != k:   # before its row can be reused
            self.inputs_of(self.pending, None)
        j = self.slot(k)
        rec = self.rec
        rec["t"][j] = t
        rec["g"][j] = g
        rec["V"][j] = V
        rec["q"][j] = q
        rec["qd"][j] = qd
        if self.track_work:
            rec["work"][j] = work
        if defer:
            self.pending = k
        else:
            self.inputs_of(k, None)
        self.count = j + 1 if j < self.kept else self.count
        self.last = k
        if self.bar is not None and k:
            self.bar.update(1)
        if self.callback is not None:
            rows = [rec[a][j] for a in ("g", "V", "q", "qd")]
            if j == self.kept:                   # the scratch row is overwritten next sample
                rows = [a.copy() for a in rows]
            return bool(self.callback(State(t, *(_ro(a) for a in rows))))
        return False

    def record_block(self, k0, t_grid, rows, work, held=None, law=None):
        """Samples ``k0 + 1 .. k0 + m`` of ``rows = (G, V, Q, QD)`` from a compiled run with
        ``held`` inputs, or with a compiled law (``law = (efforts, base wrenches)``, row i: the
        inputs at sample ``k0 + i``, where step i started; the last sample's wait for the next
        block).  Returns the sample at which the callback asked to stop, or None."""
        G, VV, Q, QD = rows
        m = len(G)
        if m == 0:
            return None
        if law is not None and self.pending == k0:
            self.inputs_of(k0, (law[0][0], law[1][0]))
        if self.per_sample:
            return self._record_each(k0, t_grid, rows, work, law)
        if self.r == 1:
            return self._record_all(k0, t_grid, rows, work, held, law)
        r = self.rec
        rows_of = np.fromiter((self.slot(k) for k in range(k0 + 1, k0 + m + 1)), np.int64, m)
        sel = np.flatnonzero(rows_of < self.kept)
        if rows_of[-1] == self.kept:             # the newest sample also goes to the scratch row
            sel = np.append(sel, m - 1)
        js = rows_of[sel]
        r["t"][js] = t_grid[k0 + 1 + sel]
        for key, a in (("g", G), ("V", VV), ("q", Q), ("qd", QD), ("work", work)):
            r[key][js] = a[sel]
        if law is not None:          # sample k0 + 1 + i: the efforts of step i + 1
            nxt = sel[sel < m - 1]
            r["tau"][rows_of[nxt]] = law[0][nxt + 1]
            r["base_wrench"][rows_of[nxt]] = law[1][nxt + 1]
            self.pending = k0 + m    # its efforts start the next block (or are evaluated)
        else:
            r["tau"][js] = held.tau
            r["base_wrench"][js] = held.base_wrench
        stored = js[js < self.kept]
        if stored.size:
            self.count = int(stored[-1]) + 1
        self.last = k0 + m
        if self.bar is not None:
            self.bar.update(m)
        return None

    def _record_all(self, k0, t_grid, rows, work, held, law):
        """:meth:`record_block` when every sample is kept (sample k in row k): slices."""
        r = self.rec
        m = len(rows[0])
        a, e = k0 + 1, k0 + m + 1
        r["t"][a:e] = t_grid[a:e]
        for key, x in zip(("g", "V", "q", "qd", "work"), (*rows, work)):
            r[key][a:e] = x
        if law is not None:          # sample k0 + 1 + i: the efforts of step i + 1
            r["tau"][a:e - 1] = law[0][1:]
            r["base_wrench"][a:e - 1] = law[1][1:]
            self.pending = k0 + m    # its efforts start the next block (or are evaluated)
        else:
            r["tau"][a:e] = held.tau
            r["base_wrench"][a:e] = held.base_wrench
        self.count = e
        self.last = k0 + m
        if self.bar is not None:
            self.bar.update(m)
        return None

    def _record_each(self, k0, t_grid, rows, work, law):
        """:meth:`record_block` one sample at a time (a per-sample consumer)."""
        G, VV, Q, QD = rows
        m = len(G)
        for i in range(m):
            k = k0 + 1 + i
            if self.record(k, float(t_grid[k]), G[i], VV[i], Q[i], QD[i], work=work[i],
                           defer=law is not None):
                if law is not None:
                    self.inputs_of(k, (law[0][i + 1], law[1][i + 1]) if i + 1 < m else None)
                return k
            if law is not None and i + 1 < m:
                self.inputs_of(k, (law[0][i + 1], law[1][i + 1]))
        return None

    def arrays(self, prescribed: bool) -> dict:
        """The kept rows, and the last sample if it was not kept (a run cut short), as the
        :class:`~vm_dynamics.sim.simulate.Trajectory` fields; ``work``/``abs_work`` None where
        the engine's account does not apply (adaptive dense output, prescribed motion)."""
        idx = list(range(self.count))
        if self.last >= 0 and self.slot(self.last) == self.kept:
            idx.append(self.kept)
        arrays = {key: v[idx] for key, v in self.rec.items()}
        work = arrays.pop("work")
        good = self.track_work and not prescribed and len(idx) and np.all(np.isfinite(work))
        return dict(arrays, work=work[:, 0].copy() if good else None,
                    abs_work=work[:, 1].copy() if good else None)
