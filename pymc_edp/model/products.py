"""Matrix products of a log-likelihood graph computed in order, so chunks never change bits.

A BLAS ``X @ beta`` gives elements whose last bits depend on the chunk, so a pruned
audit would differ from the full one. :func:`exact_products` replaces every float64
product by :class:`InOrderMatmul` (:func:`pymc_edp.base.products.matmul_in_order`).
"""

from __future__ import annotations

import numpy as np
from pytensor.graph.op import Op

from pymc_edp.base.products import matmul2, matmul3, matmul_in_order
from pymc_edp.model.compat import graph_toposort

__all__ = ["InOrderMatmul", "exact_products"]


class InOrderMatmul(Op):
    """``matmul(a, b)`` (NumPy semantics, float64), each element summed in order."""

    __props__ = ()

    def make_node(self, a, b):
        """The product node; its type is that of ``pytensor.tensor.matmul(a, b)``."""
        import pytensor.tensor as pt
        from pytensor.graph.basic import Apply

        a, b = pt.as_tensor_variable(a), pt.as_tensor_variable(b)
        out_type = pt.matmul(a, b).type
        return Apply(self, [a, b], [out_type()])

    def perform(self, node, inputs, output_storage):
        """Computed by :func:`pymc_edp.base.products.matmul_in_order` (C backend)."""
        out = matmul_in_order(*inputs)
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].dtype)


def _register_numba() -> None:
    """Compile :class:`InOrderMatmul` natively under PyTensor's numba backend."""
    try:
        from pytensor.link.numba.dispatch import basic
    except ImportError:  # pragma: no cover - no numba backend
        return

    def funcify(op, node=None, **kwargs):
        return matmul3 if node.inputs[0].ndim == 3 else matmul2

    register = getattr(basic, "register_funcify_default_op_cache_key", None)
    if register is not None:
        register(InOrderMatmul)(funcify)
    else:  # pragma: no cover - PyTensor < 2.36
        basic.numba_funcify.register(InOrderMatmul)(funcify)


_register_numba()


def _is_product(node) -> bool:
    from pytensor.tensor.blockwise import Blockwise
    from pytensor.tensor.math import Dot

    op = node.op
    core = op.core_op if isinstance(op, Blockwise) else op
    if not isinstance(core, Dot):
        return False
    ndims = {v.ndim for v in node.inputs}
    if ndims not in ({2}, {3}):
        return False
    return all(getattr(v, "dtype", None) == "float64" for v in (*node.inputs, *node.outputs))


def exact_products(output):
    """``output`` with every float64 ``dot`` / ``matmul`` an :class:`InOrderMatmul` (new graph)."""
    from pytensor.graph.replace import clone_replace

    for _ in range(1000):  # one product replaced per pass, upstream first
        node = next((n for n in graph_toposort([output]) if _is_product(n)), None)
        if node is None:
            return output
        a, b = node.inputs
        new = InOrderMatmul()(a, b)
        if new.type.shape != node.outputs[0].type.shape:
            import pytensor.tensor as pt

            new = pt.specify_shape(new, node.outputs[0].type.shape)
        (output,) = clone_replace([output], replace={node.outputs[0]: new})
    return output  # pragma: no cover - a graph of a thousand products
