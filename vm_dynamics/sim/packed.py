"""The records a simulator passes to every compiled step, handed over as one table of pointers.

A compiled call converts every array it receives from Python (about 50 ns each: a check, a
reference-count wrapper allocated and freed), and the engine's records hold about fifty:
the model's constants, the force elements, the tableau, the named views of the work buffer and
the two state records the step reads and writes.  None of them changes between steps, so
:class:`PackedRecords` lists them once as an int64 table of ``(data address, shape, strides)``
per array, and :func:`from_table` rebuilds the same records inside the compiled call from it:
one array converted instead of fifty, and no views of the buffer to build.

Sound because the table is built from the arrays of records that :class:`PackedRecords`
holds (they stay alive as long as the table), every array is checked to be C-contiguous,
aligned and of the dtype the record type says, and the arrays rebuilt from it are, like
:func:`.borrow.borrowed` ones, without reference counting: used only inside the call, never
returned or stored.  :func:`record_type` gives the numba type the table is read as; the compiled
entry point is called with that type (a :class:`numba.types.TypeRef`, free to pass).
"""
from __future__ import annotations

import numpy as np

from ..dynamics.fast.kernels.jit import NUMBA

__all__ = ["from_table", "record_type", "PackedRecords", "bind_packed"]

_DTYPES = (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_))


def _leaves(value, out):
    """The arrays of a (nested) record in field order, into ``out``."""
    if type(value) is np.ndarray:
        out.append(value)
    elif isinstance(value, tuple):
        for item in value:
            _leaves(item, out)
    else:
        raise TypeError(f"packed records hold only arrays, got {type(value).__name__}")
    return out


if NUMBA:
    from numba import from_dtype
    from numba.core import types
    from numba.extending import intrinsic

    _TYPES: dict = {}

    def _layout(value):
        """What :func:`record_type` depends on: record types and, per array, dtype, dimensions
        and whether it is aligned and C-contiguous (a hashable key)."""
        if type(value) is np.ndarray:
            return value.dtype, value.ndim, value.flags.c_contiguous and value.flags.aligned
        if isinstance(value, tuple):
            return type(value), tuple(_layout(v) for v in value)
        return type(value)

    def record_type(value):
        """The numba type of a (nested) record of arrays as :func:`from_table` rebuilds it
        (every array C-contiguous and writeable); ``ValueError`` for an array that cannot be
        read that way.  Remembered per layout: building the type costs ~0.7 ms on the engine's
        ~50 arrays, which every simulator (every ``vm.simulate`` call) would pay again."""
        key = _layout(value)
        ty = _TYPES.get(key)
        if ty is None:
            ty = _TYPES[key] = _record_type(value)
        return ty

    def _record_type(value):
        if type(value) is np.ndarray:
            if value.dtype not in _DTYPES or not value.flags.c_contiguous \
                    or not value.flags.aligned:
                raise ValueError(f"packed records: array of {value.dtype} {value.shape} is not "
                                 "an aligned C-contiguous float64/int64/bool array")
            return types.Array(from_dtype(value.dtype), value.ndim, "C")
        if not isinstance(value, tuple):
            raise TypeError(f"packed records hold only arrays, got {type(value).__name__}")
        items = [_record_type(v) for v in value]
        if hasattr(value, "_fields"):
            return types.NamedTuple(items, type(value))
        return types.Tuple(items)

    def _build(context, builder, ty, load):
        """The value of type ``ty`` read from the table (``load()`` gives its next entry)."""
        if isinstance(ty, types.Array):
            dtype = context.get_data_type(ty.dtype)
            data = builder.inttoptr(load(), dtype.as_pointer())
            shape = [load() for _ in range(ty.ndim)]
            strides = [load() for _ in range(ty.ndim)]
            ary = context.make_array(ty)(context, builder)
            context.populate_array(ary, data=data, shape=shape, strides=strides,
                                   itemsize=context.get_constant(types.intp,
                                                                 context.get_abi_sizeof(dtype)),
                                   meminfo=None)
            return ary._getvalue()
        return context.make_tuple(builder, ty, [_build(context, builder, t, load)
                                                for t in ty.types])

    @intrinsic
    def from_table(typingctx, table, tref):
        """The record of type ``tref`` (a :class:`~numba.types.TypeRef` of
        :func:`record_type`) whose arrays ``table`` lists (:meth:`PackedRecords.table`);
        without reference counting: use only inside the compiled call that received
        ``table``."""
        if not isinstance(tref, types.TypeRef):
            return None
        ty = tref.instance_type

        def codegen(context, builder, signature, args):
            base = context.make_array(signature.args[0])(context, builder, value=args[0]).data
            pos = [0]

            def load():
                ptr = builder.gep(base, [context.get_constant(types.intp, pos[0])])
                pos[0] += 1
                return builder.load(ptr)
            return _build(context, builder, ty, load)
        return ty(table, tref), codegen
else:
    def record_type(value):
        """Without numba: the record's arrays are passed as they are (no type)."""
        _leaves(value, [])

    def from_table(table, tref):     # noqa: ARG001 - the table is not used without numba
        """Without numba: never called (the engine passes its records)."""
        raise RuntimeError("from_table: needs numba")


class PackedRecords:
    """The records ``fixed`` (a tuple) and two states ``a``, ``b`` (the double-buffered state
    of a simulator) as one pointer table.  :meth:`table` lists ``(fixed, a, b)`` and keeps
    the records (and so their arrays) alive; :attr:`tref` is the numba type to read it as.

    ``like``: the table of the same ``fixed`` records before the states were replaced (a
    rollout or a restore gives the simulator new state arrays).  Its type and the fixed
    records' entries are taken over when the new states have the same layout, so only the
    states' twelve entries are computed: building the numba type costs milliseconds, and a
    node that alternates rollouts and single steps builds a table after every rollout."""

    __slots__ = ("fixed", "a", "b", "table", "tref", "nfixed")

    def __init__(self, fixed, a, b, like=None):
        self.fixed, self.a, self.b = fixed, a, b
        states = _entries(_leaves((a, b), []))
        if like is not None and like.fixed is fixed and _same_layout((a, b), (like.a, like.b)):
            self.tref, self.nfixed = like.tref, like.nfixed
            self.table = np.concatenate((like.table[:like.nfixed], states))
            return
        from numba.core import types
        self.tref = types.TypeRef(record_type((fixed, a, b)))
        head = _entries(_leaves(fixed, []))
        self.nfixed = head.shape[0]
        self.table = np.concatenate((head, states))

    def parity(self, x, y):
        """0 if the step goes from state ``a`` into ``b``, 1 if from ``b`` into ``a``, -1 if
        ``(x, y)`` are not this table's states."""
        if x is self.a and y is self.b:
            return 0
        if x is self.b and y is self.a:
            return 1
        return -1


def _entries(arrays):
    """``(data address, shape, strides)`` of each array, as int64."""
    entries = []
    for arr in arrays:
        entries.append(arr.__array_interface__["data"][0])
        entries.extend(arr.shape)
        entries.extend(arr.strides)
    return np.array(entries, dtype=np.int64)


def _same_layout(new, old):
    """Whether the records ``new`` are read as the records ``old`` are (:func:`record_type`):
    the same record types, and arrays of the same dtypes and dimensions, each aligned and
    C-contiguous."""
    if any(type(x) is not type(y) for x, y in zip(new, old)):
        return False
    arrays, ref = _leaves(new, []), _leaves(old, [])
    if len(arrays) != len(ref):
        return False
    for x, y in zip(arrays, ref):
        if x.dtype != y.dtype or x.ndim != y.ndim or not x.flags.c_contiguous \
                or not x.flags.aligned:
            return False
    return True


_ENTRIES: dict = {}


def bind_packed(kernel, args):
    """Call the compiled ``kernel`` once with ``args`` (its second a :attr:`PackedRecords.tref`)
    and return its compiled entry point for those argument types (no type resolution per
    call; the other arguments are the engine's records of fixed types), remembered per table
    type."""
    key = (kernel, args[1])
    entry = _ENTRIES.get(key)
    if entry is None:
        kernel(*args)
        sig = tuple(kernel.typeof_pyval(a) for a in args)
        entry = _ENTRIES[key] = kernel.overloads[sig].entry_point
    return entry
