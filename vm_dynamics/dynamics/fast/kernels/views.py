"""C-contiguous views of a flat array, built inline.

``buf[i:i + size].reshape(shape)`` in compiled code calls numba's reshape helper (a C function
that works out whether the reshape can be a view): about 17 ns, and the packed entry points
(:mod:`.packed`) and workspaces (:func:`.kinematics.workspace_views`) take a dozen such views
per call.  :func:`flat_view` builds the same view directly — data pointer, shape and C strides
— in a few instructions; the view holds a reference to ``buf``'s memory like any numba view.
Without numba it is the slice and reshape.
"""
from __future__ import annotations

from .jit import NUMBA

__all__ = ["flat_view"]

if NUMBA:
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def flat_view(typingctx, buf, start, shape):
        """The C-contiguous view of ``prod(shape)`` entries of the 1-d contiguous array ``buf``
        from index ``start``, of shape ``shape`` (a tuple of integers); no bounds check."""
        if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"
                and isinstance(shape, types.UniTuple) and isinstance(start, types.Integer)):
            return None
        ndim = shape.count
        retty = types.Array(buf.dtype, ndim, "C")

        def codegen(context, builder, sig, args):
            bufv, startv, shapev = args
            src = context.make_array(sig.args[0])(context, builder, value=bufv)
            dst = context.make_array(retty)(context, builder)
            dims = [context.cast(builder, s, sig.args[2].dtype, types.intp)
                    for s in cgutils.unpack_tuple(builder, shapev, ndim)]
            strides = [None] * ndim
            step = src.itemsize
            for i in range(ndim - 1, -1, -1):
                strides[i] = step
                step = builder.mul(step, dims[i])
            first = context.cast(builder, startv, sig.args[1], types.intp)
            context.populate_array(dst, data=builder.gep(src.data, [first]),
                                   shape=cgutils.pack_array(builder, dims),
                                   strides=cgutils.pack_array(builder, strides),
                                   itemsize=src.itemsize, meminfo=src.meminfo, parent=None)
            context.nrt.incref(builder, sig.args[0], bufv)      # the view's reference
            return dst._getvalue()
        return retty(buf, start, shape), codegen
else:
    import numpy as np

    def flat_view(buf, start, shape):
        """``buf[start:start + prod(shape)].reshape(shape)`` (no numba)."""
        return buf[start:start + int(np.prod(shape))].reshape(shape)
