"""Borrowed views of a compiled call's arguments: the same arrays without their reference count.

numba counts a reference for every array a compiled function receives, unpacks from a record or
takes a view of (one atomic update of the array's counter each, and again when it is dropped).
A step of the engine passes records of tens of arrays through several calls per Runge–Kutta
stage, so these updates cost more than some of the arithmetic.  :func:`borrowed` returns its
argument (an array, or a record or tuple of them, nested) with every array's reference-count
handle removed: the data, shape and strides are the same, the counting becomes a no-op.

This is sound because an entry point's arguments are held by its Python caller for the whole
call: a borrowed array (or a view of one) is used only inside that call, never returned, stored
or boxed to Python.  Without numba, :func:`borrowed` returns its argument.
"""
from __future__ import annotations

from ..dynamics.fast.kernels.jit import NUMBA

__all__ = ["borrowed"]

if NUMBA:
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    def _strip(context, builder, ty, value):
        """``value`` of type ``ty`` with the meminfo and parent of every array set to null."""
        if isinstance(ty, types.Array):
            ary = context.make_array(ty)(context, builder, value=value)
            ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
            ary.parent = cgutils.get_null_value(ary.parent.type)
            return ary._getvalue()
        if isinstance(ty, types.BaseTuple):
            for i, item_ty in enumerate(ty.types):
                item = builder.extract_value(value, i)
                value = builder.insert_value(value, _strip(context, builder, item_ty, item), i)
        return value

    @intrinsic
    def borrowed(typingctx, x):
        """``x`` (an array, or a tuple/named tuple of arrays and scalars, nested) without its
        arrays' reference counting; use only inside the compiled call that received ``x``."""
        def codegen(context, builder, signature, args):
            return _strip(context, builder, signature.args[0], args[0])
        return x(x), codegen
else:
    def borrowed(x):
        """``x`` itself (no numba: nothing is counted)."""
        return x
