"""``kernels_cached`` reads a dispatcher's on-disk cache index once per process once it was
found valid (reading and unpickling the index took about a millisecond of every
``Simulator``'s set-up); an index found invalid is read again (the kernel may be compiled
and cached since)."""
import types

from vm_dynamics.dynamics.fast import backend


def _dispatcher(index, reads):
    def load():
        reads.append(1)
        return index
    cf = types.SimpleNamespace(_load_index=load)
    return types.SimpleNamespace(_cache=types.SimpleNamespace(_cache_file=cf))


def test_a_valid_index_is_read_once():
    reads = []
    d = _dispatcher({"sig": 1}, reads)
    assert backend.kernels_cached(d) is True
    assert backend.kernels_cached(d) is True
    assert backend.kernels_cached(d, d) is True
    assert len(reads) == 1


def test_an_invalid_index_is_read_every_time():
    reads = []
    d = _dispatcher({}, reads)
    assert backend.kernels_cached(d) is False
    assert backend.kernels_cached(d) is False
    assert len(reads) == 2


def test_unknown_stays_unknown():
    assert backend.kernels_cached(types.SimpleNamespace()) is None
