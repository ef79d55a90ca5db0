"""Where and when a thread block runs: the SM it sits on (%smid) and the GPU's nanosecond clock
(%globaltimer), for the readable kernel's trace build (``tiled.fa2_kernel(..., trace=True)``).

numba has no API for these special registers; each is one `mov` of inline PTX through llvmlite, as
kernels/fast.py does for cp.async. Under the CUDA simulator they are plain Python: SM 0 and the host clock.
Worked example: a block that starts at globaltimer 1,000,000 and ends at 1,450,000 ran 450 µs.
"""

import functools
import time

from .counting import simulator_enabled


def _smid_py():
    return 0


def _now_py():
    return time.perf_counter_ns()


@functools.cache
def block_clocks():
    """(smid(), now()) device functions returning int64: this block's SM, the time in ns."""
    if simulator_enabled():
        return _smid_py, _now_py
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    def special_register(name, bits, constraint):
        @intrinsic
        def read(typingctx):
            def codegen(context, builder, signature, args):
                fnty = ir.FunctionType(ir.IntType(bits), [])
                asm = ir.InlineAsm(fnty, f"mov.u{bits} $0, %{name};", f"={constraint}", side_effect=True)
                value = builder.call(asm, [])
                return builder.zext(value, ir.IntType(64)) if bits < 64 else value

            return types.int64(), codegen

        return read

    return special_register("smid", 32, "r"), special_register("globaltimer", 64, "l")
