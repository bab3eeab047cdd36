"""Arrays handed to compiled code as Python objects, their kind checked there.

A compiled entry point converts each array argument before its body runs: numba's dispatcher
first works out the argument's type (to pick the compilation, and to refuse an array of
another kind: an int64 array must never be read as float64), then the entry point wraps the
array in a reference-counting record (a small allocation, freed after the call).  On a call
of about a microsecond — one inverse dynamics — those two steps cost half as much again.

Here the arguments are typed :data:`pyref` (the object itself, nothing converted) and the
body reads each array's header with :func:`borrow`: the object's type is exactly
``numpy.ndarray`` (the type of the model's own array ``P``), its dtype is float64 in native
byte order, it has the expected number of dimensions and is C-contiguous and aligned (and
writeable where asked).  That is the dispatcher's check, done in a few compiled instructions;
an object that fails it is reported (``ok`` False) and its memory never read.  The array built
from the header is borrowed (no reference count, like :func:`vm_dynamics.sim.packed.from_table`'s):
the caller's argument tuple keeps the object alive for the call; it is never stored or
returned.  An entry point can return one of its arguments as :data:`pyref` (the object itself,
its reference taken when the call has the GIL again): ``out`` returned at no cost.

The header's layout (``PyArrayObject`` and ``PyArray_Descr`` of numpy's C API, fixed offsets
on 64-bit CPython) is verified on real arrays at import (:data:`LAYOUT_OK`); where it does not
hold (another interpreter or word size) the callers use the dispatcher's entry points instead.
"""
from __future__ import annotations

import ctypes
import sys

import numpy as np

from .jit import NUMBA

__all__ = ["LAYOUT_OK", "pyref", "borrow"]

# offsets in bytes: PyObject (ob_type), PyArrayObject (data, nd, dimensions, descr, flags),
# PyArray_Descr (byteorder, type_num); numpy's flag bits
_TYPE, _DATA, _ND, _DIMS, _DESCR, _FLAGS = 8, 16, 24, 32, 56, 64
_BYTEORDER, _TYPE_NUM = 26, 28
_C_CONTIGUOUS, _ALIGNED, _WRITEABLE = 0x1, 0x100, 0x400
_F8 = np.dtype(np.float64)


def _layout_holds() -> bool:
    """True if arrays and dtypes of this process have the header layout the compiled code
    reads (checked on a few arrays of known properties)."""
    if sys.maxsize != 2 ** 63 - 1 or sys.implementation.name != "cpython":
        return False
    try:
        def at(obj, off, ctype):
            return ctype.from_address(id(obj) + off).value

        base = np.zeros((3, 4))
        cases = [(base, True), (np.zeros(5), True), (base[:, 1], False),
                 (np.frombuffer(b"\0" * 16), True), (np.zeros(2, dtype=np.int64), True)]
        for a, contiguous in cases:
            flags = at(a, _FLAGS, ctypes.c_int)
            if at(a, _TYPE, ctypes.c_void_p) != id(np.ndarray) \
                    or at(a, _DATA, ctypes.c_void_p) != a.ctypes.data \
                    or at(a, _ND, ctypes.c_int) != a.ndim \
                    or at(a, _DESCR, ctypes.c_void_p) != id(a.dtype) \
                    or bool(flags & _C_CONTIGUOUS) != contiguous \
                    or bool(flags & _ALIGNED) != a.flags.aligned \
                    or bool(flags & _WRITEABLE) != a.flags.writeable:
                return False
            dims = ctypes.cast(at(a, _DIMS, ctypes.c_void_p), ctypes.POINTER(ctypes.c_ssize_t))
            if tuple(dims[i] for i in range(a.ndim)) != a.shape:
                return False
        for dt in (_F8, np.dtype(">f8"), np.dtype("<f8"), np.dtype(np.int64),
                   np.dtype(np.float32)):
            if at(dt, _TYPE_NUM, ctypes.c_int) != dt.num \
                    or at(dt, _BYTEORDER, ctypes.c_char) != dt.byteorder.encode():
                return False
    except Exception:       # noqa: BLE001 - any surprise: use the dispatcher's path
        return False
    return _F8.byteorder == "=" and _F8.num == 12


#: True if :func:`borrow` reads arrays correctly in this process (module docstring).
LAYOUT_OK = NUMBA and _layout_holds()

if NUMBA:
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import NativeValue, box, intrinsic, models, register_model, unbox

    class PyRef(types.Opaque):
        """A Python object passed to compiled code as it is (a borrowed pointer)."""

    #: The type of an entry point's argument taken as the object itself (module docstring).
    pyref = PyRef("pyref")
    register_model(PyRef)(models.OpaqueModel)

    @unbox(PyRef)
    def _unbox_pyref(typ, obj, c):
        return NativeValue(obj)

    @box(PyRef)
    def _box_pyref(typ, val, c):
        c.pyapi.incref(val)          # the wrapper boxes with the GIL held
        return val

    @intrinsic
    def borrow(typingctx, obj, like, ndim, writeable):
        """``(ok, array)``: the float64 C-contiguous ``ndim``-dimensional array ``obj``
        (:data:`pyref`) as a borrowed array, ``ok`` True if ``obj`` is one: of exactly the
        type of ``like`` (the model's own array), float64 in native byte order (dtype ``like``'s
        or an equal one), aligned, and writeable if ``writeable``.  If not, ``ok`` is False
        and the array is empty (nothing of ``obj`` beyond its type was read, or beyond its
        header if it is an ndarray)."""
        if not (isinstance(obj, PyRef) and isinstance(like, PyRef)
                and isinstance(ndim, types.IntegerLiteral)
                and isinstance(writeable, types.BooleanLiteral)):
            return None
        nd = ndim.literal_value
        need = _C_CONTIGUOUS | _ALIGNED | (_WRITEABLE if writeable.literal_value else 0)
        arrty = types.Array(types.float64, nd, "C")
        retty = types.Tuple((types.boolean, arrty))

        def codegen(context, builder, sig, args):
            o, lk = args[0], args[1]
            i8, i32 = ir.IntType(8), ir.IntType(32)
            intp = context.get_value_type(types.intp)

            def field(ptr, off, ty):
                p = builder.gep(ptr, [ir.Constant(intp, off)])
                return builder.load(builder.bitcast(p, ty.as_pointer()))

            ok = cgutils.alloca_once_value(builder, cgutils.false_bit)
            data = cgutils.alloca_once_value(builder, ir.Constant(i8.as_pointer(), None))
            dims = [cgutils.alloca_once_value(builder, ir.Constant(intp, 0)) for _ in range(nd)]
            same_type = builder.icmp_unsigned("==", field(o, _TYPE, i8.as_pointer()),
                                              field(lk, _TYPE, i8.as_pointer()))
            with builder.if_then(same_type, likely=True):
                descr = field(o, _DESCR, i8.as_pointer())
                order = field(descr, _BYTEORDER, i8)
                f8 = builder.or_(
                    builder.icmp_unsigned("==", descr, field(lk, _DESCR, i8.as_pointer())),
                    builder.and_(
                        builder.icmp_signed("==", field(descr, _TYPE_NUM, i32),
                                            ir.Constant(i32, _F8.num)),
                        builder.or_(builder.icmp_unsigned("==", order, ir.Constant(i8, ord("="))),
                                    builder.icmp_unsigned("==", order, ir.Constant(
                                        i8, ord("<" if sys.byteorder == "little" else ">"))))))
                flags = builder.and_(field(o, _FLAGS, i32), ir.Constant(i32, need))
                good = builder.and_(builder.and_(
                    f8, builder.icmp_signed("==", field(o, _ND, i32), ir.Constant(i32, nd))),
                    builder.icmp_unsigned("==", flags, ir.Constant(i32, need)))
                builder.store(good, ok)
                with builder.if_then(good, likely=True):
                    shape = field(o, _DIMS, intp.as_pointer())
                    for i in range(nd):
                        builder.store(builder.load(builder.gep(shape, [ir.Constant(intp, i)])),
                                      dims[i])
                    builder.store(field(o, _DATA, i8.as_pointer()), data)
            shape = [builder.load(d) for d in dims]
            strides, step = [None] * nd, ir.Constant(intp, 8)
            for i in range(nd - 1, -1, -1):
                strides[i] = step
                step = builder.mul(step, shape[i])
            ary = context.make_array(arrty)(context, builder)
            dptr = context.get_data_type(types.float64).as_pointer()
            context.populate_array(ary, data=builder.bitcast(builder.load(data), dptr),
                                   shape=cgutils.pack_array(builder, shape),
                                   strides=cgutils.pack_array(builder, strides),
                                   itemsize=ir.Constant(intp, 8), meminfo=None)
            return context.make_tuple(builder, retty, [builder.load(ok), ary._getvalue()])
        return retty(obj, like, ndim, writeable), codegen
else:
    pyref = None

    def borrow(obj, like, ndim, writeable):
        """Without numba: never called (the callers use numpy)."""
        raise RuntimeError("borrow: needs numba")
