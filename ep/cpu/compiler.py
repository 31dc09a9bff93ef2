"""The CPU kernels' compiler: Numba's nopython pipeline, with each inlined scalar function's untyped
IR built once per process instead of once per call site.

Every kernel inlines its scalar functions (`inline="always"`) at the IR level: for each call,
Numba's InlineWorker runs the frontend and the untyped passes on the callee (and, through them, on
every function it inlines), then inline_ir inlines a deep copy. That IR depends only on the
function, so over the hundreds of kernels a process may compile most of it was rebuilt from the
same bytecode: about a quarter of a small kernel's compile time. inline_ir then copies that IR as
one graph (ep.common.ir_copy). numba-cuda keeps an inlined overload's IR the same way
(typing/templates.py, `_inline_overloads`); inline_ir never mutates the IR it is given. Private API
of Numba (InlineWorker.run_untyped_passes, the module attribute InlineInlinables looks the worker
up by), swapped only while ep's own kernels are inlined: a compile holds Numba's compiler lock, so
no other compile sees it. The code is the same
(tests/test_cpu_compiler.py compares kernels of every family).
"""
from __future__ import annotations

from numba.core import inline_closurecall
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import register_pass
from numba.core.untyped_passes import InlineInlinables

from ep.common.ir_copy import blocks_copied_as_one_graph

# An inlined function's untyped IR, per function and the flags that change it.
_untyped_ir: dict = {}


class _SharedIRInlineWorker(inline_closurecall.InlineWorker):
    def run_untyped_passes(self, func, enable_ssa=False):
        key = (func, enable_ssa, self.flags.no_rewrites)
        found = _untyped_ir.get(key)
        if found is None:
            found = _untyped_ir[key] = super().run_untyped_passes(func, enable_ssa)
        return found

    def inline_ir(self, *args, **kwargs):
        with blocks_copied_as_one_graph(inline_closurecall):
            return super().inline_ir(*args, **kwargs)


@register_pass(mutates_CFG=True, analysis_only=False)
class _InlineWithSharedIR(InlineInlinables):
    _name = "ep_inline_inlinables_shared_ir"

    def run_pass(self, state) -> bool:
        original = inline_closurecall.InlineWorker
        inline_closurecall.InlineWorker = _SharedIRInlineWorker
        try:
            return super().run_pass(state)
        finally:
            inline_closurecall.InlineWorker = original


class KernelCompiler(CompilerBase):
    """Numba's nopython pipeline (parallel passes included when the build asks for them), its
    inlining pass sharing the inlined functions' untyped IR."""

    def define_pipelines(self):
        pipeline = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pipeline.passes = [
            (_InlineWithSharedIR if pass_class is InlineInlinables else pass_class, description)
            for pass_class, description in pipeline.passes
        ]
        pipeline.finalize()
        return [pipeline]
