"""Where a campaign's runs execute: in this process, in local worker processes (default), or
on a Dask distributed cluster (the ``campaign`` extra).

Every backend maps :func:`~.runner.run_chunk` over chunks of run indices; a run depends only
on the spec and its index, so the results are the same whichever backend computed them.
Chunks hold several runs so that dispatch (pickling the spec, a round trip to the worker)
stays small next to the runs' work.  Results come back as they finish; ``on_done`` is called
with each chunk's results (the progress bar).
"""
from __future__ import annotations

import os
from typing import Callable

from .runner import CampaignSpec, RunResult, run_chunk

__all__ = ["BACKENDS", "chunked", "default_workers", "execute"]

BACKENDS = ("local", "serial", "dask")


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:       # not Linux
        return os.cpu_count() or 1


def chunked(ks, workers: int, chunk_size: int | None = None) -> list[list[int]]:
    """``ks`` in chunks: ``chunk_size`` runs each, or by default about eight chunks per worker
    (load balance) and at most 8 runs (progress updates; a run takes a second or more, a
    task's dispatch milliseconds)."""
    ks = list(ks)
    if chunk_size is None:
        chunk_size = max(1, min(8, len(ks) // (8 * max(1, workers))))
    return [ks[i:i + chunk_size] for i in range(0, len(ks), chunk_size)]


def execute(spec: CampaignSpec, ks, backend: str = "local", workers: int | None = None,
            cluster: str | None = None, chunk_size: int | None = None,
            on_done: Callable | None = None, start_method: str | None = None) -> list[RunResult]:
    """The results of runs ``ks`` (sorted by index) computed by ``backend``: ``"serial"``
    (this process), ``"local"`` (``workers`` processes, default: every core, started by
    ``start_method``: see :func:`_local`) or ``"dask"``
    (``cluster`` a scheduler address ``tcp://host:port``, or None: a LocalCluster of
    ``workers`` single-threaded worker processes on loopback)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend: unknown {backend!r}; available: {', '.join(BACKENDS)}")
    workers = int(workers) if workers else default_workers()
    if workers < 1:
        raise ValueError(f"workers: expected >= 1, got {workers}")
    chunks = chunked(ks, workers if backend != "serial" else 1, chunk_size)
    done = on_done or (lambda results: None)
    if backend == "serial" or (backend == "local" and workers == 1):
        results = []
        for c in chunks:
            part = run_chunk(spec, c)
            done(part)
            results.extend(part)
    elif backend == "local":
        results = _local(spec, chunks, workers, done, start_method)
    else:
        results = _dask(spec, chunks, workers, cluster, done)
    return sorted(results, key=lambda r: r.k)


def _local(spec, chunks, workers, done, start_method=None) -> list:
    """The process pool.  ``fork`` (default where the platform has it): the workers start
    with what this process has loaded (the scenario, the compiled kernels), so a campaign's
    first results come at once instead of after every worker's imports; ``spawn`` or
    ``forkserver`` start clean interpreters."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    methods = multiprocessing.get_all_start_methods()
    method = start_method or ("fork" if "fork" in methods else "spawn")
    if method not in methods:
        raise ValueError(f"start_method: {method!r} is not available here; available: "
                         f"{', '.join(methods)}")
    results = []
    with ProcessPoolExecutor(max_workers=min(workers, len(chunks)) or 1,
                             mp_context=multiprocessing.get_context(method)) as pool:
        futures = [pool.submit(run_chunk, spec, c) for c in chunks]
        try:
            for f in as_completed(futures):
                part = f.result()
                done(part)
                results.extend(part)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return results


def _dask(spec, chunks, workers, cluster, done) -> list:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ValueError("backend dask: dask.distributed is not installed; install it with: "
                         "pip install 'vm_dynamics[campaign]'") from None
    local = None
    if cluster is None:
        local = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                             host="127.0.0.1", dashboard_address=None)
        client = Client(local)
    else:
        client = Client(cluster)
    results = []
    try:
        remote_spec = client.scatter(spec, broadcast=True)
        futures = client.map(run_chunk, [remote_spec] * len(chunks), chunks, pure=False)
        for f in as_completed(futures):
            part = f.result()
            done(part)
            results.extend(part)
    finally:
        client.close()
        if local is not None:
            local.close()
    return results
