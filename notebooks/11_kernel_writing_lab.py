# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: kernelspec,-jupytext.text_representation.jupytext_version,-jupytext.formats
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Lecture 11 — Write the kernels yourself: a lab on the CUDA simulator
#
# Write three kernels from skeletons, GPU-Puzzles style, on numba's CUDA simulator: standard attention,
# FlashAttention-1's tiled online softmax and FlashAttention-2's inner loop; a grader checks each against
# float64, against `simlib.count()` and against what the simulator saw.

# %% [markdown] slideshow={"slide_type": "notes"}
# Until now the kernels were ours and you read them. Here you write three, each from a skeleton, in the
# style of GPU-Puzzles: standard attention, FlashAttention-1's tiled online softmax, and
# FlashAttention-2's inner loop. They run on numba's CUDA simulator (no GPU needed: every CUDA thread
# is a Python thread), and a grader checks each one three ways: against a float64 reference, against
# `simlib.count()` byte for byte for the same tiles, and against what the simulator saw the kernel do.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Learning goals**
#
# - Write a shared-memory tiled kernel in numba.cuda: thread and block indices, `cuda.shared.array`,
#   `cuda.syncthreads()` where a tile is complete and before it is overwritten.
# - Count a kernel's HBM and SRAM accesses as they happen, and make the count equal the model's.
# - Turn the online softmax into code twice: with O, ℓ, m through HBM (FlashAttention-1) and in
#   registers (FlashAttention-2), and see the difference in bytes.
# - Read a grader's verdict: a wrong result, extra traffic, a counter that lies, a race.
#
# **Prerequisites**
#
# Lectures 2 (standard attention's three passes), 3 (the online softmax), 4 (what FA1 and FA2 move,
# tile by tile) and 5 (the kernels' counters, one source with counters on or off). Python; no CUDA
# experience needed beyond lecture 5.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Plan (50 minutes)**
#
# | Minutes | Part |
# |---|---|
# | 5 | How the lab works: one source, counters on, the grader's three questions |
# | 12 | Kernel 1: standard attention, a tiled matmul and a row softmax |
# | 14 | Kernel 2: FlashAttention-1, tiles and the online softmax, O through HBM |
# | 12 | Kernel 3: FlashAttention-2's inner loop, O in registers |
# | 4 | What the grader says about a wrong kernel |
# | 3 | Summary and exercises |

# %% [markdown] slideshow={"slide_type": "notes"}
# Run it as a lab: five minutes of the first section together, then the students work through the
# three kernels at their pace; each skeleton cell fails its grade until it is filled in, and
# `hint(exercise, n)` gives three hints each. Those who finish kernel 3 early try the planted wrong
# solutions of section 5 and predict the grader's verdict first. The solutions are hidden at the end.

# %% slideshow={"slide_type": "skip"}
import math
import os

# The lab runs on numba's CUDA simulator unless FLASHIO_GPU=1 (then on the GPU, without the audit);
# the switch must be made before numba is imported.
if os.environ.get("FLASHIO_GPU") != "1":
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import inspect

from IPython.display import Markdown, display
from numba import cuda, float32

from course.kernel_lab import grade, hint, shapes, solutions
from course.kernel_lab.exercises import EXERCISES
from course.kernel_lab.frame import NEG_INF, ZERO, copy_rows, copy_stats, fa2_frame
from course.kernel_lab.planted import PLANTED, planted
from gpu_kernels.checks import scale_for
from gpu_kernels.flush import flush_counters
from simlib import Workload, count

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. How the lab works
#
# Every kernel is **one source, compiled with counters on or off** (lecture 5): each thread keeps four
# counters in registers — HBM reads `n_gr`, HBM writes `n_gw`, SRAM reads `n_sr`, SRAM writes `n_sw` —
# increments them under `if COUNTING:` next to the accesses it makes, and adds them to a global array at
# the end with `flush_counters`. With `counting=False` the branches vanish from the compiled code.
# The rules are docs/COUNTING.md's: registers are free; a global → shared copy is one HBM read and one
# SRAM write per element; each element a thread loads from shared memory is one SRAM read.
#
# The grader asks three questions of every kernel, on a few tiny, deliberately ragged shapes:
#
# 1. Is the output right? O (and L = m + log ℓ) against float64, from NaN-poisoned outputs.
# 2. Do the counters equal `simlib.count()` for the same workload and tiles, byte for byte?
# 3. Are the counters honest and the kernel race-free? The simulator watches every element each thread
#    touches (`course.kernel_lab.audit`) and every barrier it passes.

# %% slideshow={"slide_type": "subslide"}
shapes("fa2_inner")  # what kernel 3 must move, per shape: simlib's bytes

# %% [markdown] slideshow={"slide_type": "fragment"}
# Those numbers are not the grader's: they are `count("fa2", workload, block_rows=Br, block_cols=Bc)`,
# the model of lectures 3 and 4. Here is the first shape's table, tensor by tensor:

# %% slideshow={"slide_type": "fragment"}
first = EXERCISES["fa2_inner"].shapes[0]
count("fa2", first.workload, **first.tiles).table()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Kernel 1: standard attention
#
# Three launches (the paper's Algorithm 0): S = scale · Q Kᵀ with a tiled matmul, P = softmax(S) by
# rows, O = P V with the same matmul. S and P go to HBM and back: that is the N² traffic.
#
# **The matmul** C (m×n) = alpha · A (m×k) · B (k×n): grid (⌈n/T⌉, ⌈m/T⌉, B·H), block (T, T), thread
# (ty, tx) owns C[row, col]. For each chunk of T along k, the block copies a T×T tile of A and of B into
# shared memory, syncs, and every thread does its multiply-adds out of shared memory. With
# `trans_b=True`, B is Kᵀ: K is stored (n, k), so read a row of K and store it transposed.
#
# **The softmax**: one thread per row (block of 32 rows), the row kept in registers.
# Fill in the `# YOUR CODE` parts, then run the grading cell.


# %% slideshow={"slide_type": "subslide"}
def my_matmul_kernel(tile, trans_b, counting):
    T = tile
    TRANS_B = trans_b
    COUNTING = counting

    def matmul(a, b, c, alpha, counters):
        # a: (B·H, m, k); b: (B·H, k, n), or (B·H, n, k) when TRANS_B; c: (B·H, m, n)
        As = cuda.shared.array((T, T), float32)
        Bs = cuda.shared.array((T, T), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        bh = cuda.blockIdx.z
        row = cuda.blockIdx.y * T + ty
        col = cuda.blockIdx.x * T + tx
        m, n, kdim = c.shape[1], c.shape[2], a.shape[2]
        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0
        acc = ZERO
        for k0 in range(0, kdim, T):
            kk = min(T, kdim - k0)
            # YOUR CODE: As[ty, x] = a[bh, row, k0 + x] and Bs[x, tx] = B[k0 + x, col] for the valid
            # elements (with TRANS_B, B[k0 + x, col] is b[bh, col, k0 + x]); count each copy.
            cuda.syncthreads()
            # YOUR CODE: acc += As[ty, x] * Bs[x, tx] for x < kk (when row < m and col < n); count.
            cuda.syncthreads()
        if row < m and col < n:
            c[bh, row, col] = acc * alpha
            if COUNTING:
                n_gw += 1
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    return cuda.jit(matmul)


def my_softmax_kernel(n_keys, counting):
    NK = n_keys
    COUNTING = counting

    def row_softmax(s, p, counters):
        x = cuda.local.array(NK, float32)  # my row, in registers
        row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        bh = cuda.blockIdx.y
        n_gr = 0
        n_gw = 0
        if row < s.shape[1]:
            pass  # YOUR CODE: read the row once, subtract its max, exponentiate, write P = x / sum once
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, 0, 0)

    return cuda.jit(row_softmax)


grade("naive", matmul_kernel=my_matmul_kernel, softmax_kernel=my_softmax_kernel)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The skeleton fails: that is the starting point. Stuck? `hint("naive", 1)`, then 2 and 3.

# %% slideshow={"slide_type": "fragment"}
print(hint("naive", 1))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Kernel 2: FlashAttention-1
#
# Algorithm 1 of the FlashAttention paper: the **outer loop runs over K/V blocks**, the inner one over
# Q blocks. O, ℓ and m live in HBM: for every (K/V block j, Q block i) the block loads Q_i, O_i, ℓ_i, m_i
# into SRAM, computes the tile, and writes the updated O_i, ℓ_i, m_i back (lines 8–13):
#
# $$\tilde m = \mathrm{rowmax}(S_{ij}),\quad \tilde P = e^{S_{ij}-\tilde m},\quad
#   m^\text{new} = \max(m_i, \tilde m),\quad \ell^\text{new} = e^{m_i - m^\text{new}}\ell_i + e^{\tilde m - m^\text{new}}\,\mathrm{rowsum}(\tilde P)$$
# $$O_i \leftarrow \frac{e^{m_i - m^\text{new}}\ell_i\,O_i + e^{\tilde m - m^\text{new}}\,\tilde P V_j}{\ell^\text{new}}$$
#
# One thread block per batch·head, Br threads, thread t owns row t of each Q block. The loops, the loads
# (`copy_rows` returns how many elements this thread copied) and the barriers are given; write the
# arithmetic of one tile for your row.


# %% slideshow={"slide_type": "subslide"}
def my_fa1_kernel(head_dim, block_rows, block_cols, counting):
    D, BR, BC = head_dim, block_rows, block_cols
    COUNTING = counting
    SCALE = scale_for(D)  # float32(1/√d): a Python float would make the arithmetic float64

    def fa1_forward(q, k, v, o, l, m, counters):  # noqa: E741
        Qs = cuda.shared.array((BR, D), float32)
        Os = cuda.shared.array((BR, D), float32)
        Ks = cuda.shared.array((BC, D), float32)
        Vs = cuda.shared.array((BC, D), float32)
        Ss = cuda.shared.array((BR, BC), float32)
        ls = cuda.shared.array(BR, float32)
        ms = cuda.shared.array(BR, float32)
        acc = cuda.local.array(D, float32)
        tid = cuda.threadIdx.x
        bh = cuda.blockIdx.x
        n = q.shape[1]
        n_gr = 0
        n_gw = 0
        n_sr = 0
        n_sw = 0
        row = tid
        while row < n:  # line 2: O = 0, ℓ = 0, m = −∞ in HBM
            for x in range(D):
                o[bh, row, x] = ZERO
            l[bh, row] = ZERO
            m[bh, row] = NEG_INF
            if COUNTING:
                n_gw += D + 2
            row += BR
        for j in range((n + BC - 1) // BC):
            c = min(BC, n - j * BC)
            cuda.syncthreads()
            moved = copy_rows(Ks, k, bh, j * BC, c, tid, BR) + copy_rows(Vs, v, bh, j * BC, c, tid, BR)
            if COUNTING:
                n_gr += moved
                n_sw += moved
            for i in range((n + BR - 1) // BR):
                q0 = i * BR
                r = min(BR, n - q0)
                cuda.syncthreads()
                moved = copy_rows(Qs, q, bh, q0, r, tid, BR) + copy_rows(Os, o, bh, q0, r, tid, BR)
                moved += copy_stats(ls, l, bh, q0, r, tid, BR) + copy_stats(ms, m, bh, q0, r, tid, BR)
                if COUNTING:
                    n_gr += moved
                    n_sw += moved
                cuda.syncthreads()
                if tid < r:
                    pass  # YOUR CODE: lines 9-13 for row q0 + tid (scores into Ss, P̃ over S, P̃V into acc,
                    # then the update from ms[tid], ls[tid], Os[tid, x]) written to o, l, m; count it all
        if COUNTING:
            flush_counters(counters, n_gr, n_gw, n_sr, n_sw)

    return cuda.jit(fa1_forward)


grade("fa1", fa1_kernel=my_fa1_kernel)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Before you start, predict: with Tc K/V blocks, how many times does this kernel write O to HBM?
# Exercise 2 checks your answer against the grader's counts.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Kernel 3: FlashAttention-2's inner loop
#
# FlashAttention-2 swaps the loops: each thread block owns one Q block and streams every K/V block past
# it, so O_i, ℓ_i and m_i never leave the chip until the end. The lab's frame (`fa2_frame`, the same
# loop nest as the project's `tiled` kernel) loads Q_i once, K_j and V_j once per Q block, and writes
# O_i = O_acc / ℓ and L_i = m + log ℓ once. You write what happens to one query row at one K/V tile:
# a device function that returns the new m and ℓ, and the SRAM reads and writes it made.

# %% slideshow={"slide_type": "subslide"}
frame = inspect.getsource(fa2_frame).splitlines()
start = next(i for i, line in enumerate(frame) if "for j in range" in line)
print("\n".join(frame[start : start + 13]))  # the K/V loop of the frame (course/kernel_lab/frame.py)


# %% slideshow={"slide_type": "subslide"}
@cuda.jit(device=True)
def my_fa2_inner(Qs, Ks, Vs, Ss, O_acc, m, l, tid, c, scale):  # noqa: E741
    reads = 0
    writes = 0
    m_new = m
    # YOUR CODE, four steps for row tid and the c valid keys of this tile:
    # 1. S = scale · Q_i[tid] · K_j[cc] into Ss[tid, cc]; m_new = max(m, every score)
    # 2. P̃ = exp(S − m_new) written over S; row_sum = Σ P̃
    # 3. α = exp(m − m_new); O_acc *= α; ℓ_new = α·ℓ + row_sum
    # 4. O_acc += P̃ V_j, reading each p once, then a V row
    return m_new, l, reads, writes


grade("fa2_inner", inner=my_fa2_inner)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. What the grader says about a wrong kernel
#
# Five wrong solutions are planted in `course.kernel_lab.planted`, each made from a reference solution
# by one stated edit. Predict the verdict before you run the cell. This one reads p from shared memory
# for every element of the V row instead of once per key:

# %% slideshow={"slide_type": "subslide"}
display(Markdown("\n".join(f"- `{name}` ({p.exercise}): {p.breaks}" for name, p in PLANTED.items())))

# %% slideshow={"slide_type": "subslide"}
exercise, parts = planted("pv_rereads_p")
grade(exercise, **parts)

# %% [markdown] slideshow={"slide_type": "fragment"}
# The output is right and the counters are honest — they count every read the kernel makes — yet the
# grade fails: the kernel moves d more SRAM elements per score than FlashAttention-2's schedule. A value
# a thread will use d times belongs in a register. The same lesson, one level up, is the whole of
# FlashAttention: S belongs on chip.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - A kernel is right when its output matches float64 *and* it moves exactly the bytes its schedule
#   says: the same loop nest can be correct and still move d times too much.
# - Counting in the kernel (one source, counters on) makes the model checkable; the simulator's audit
#   checks the counters themselves and finds races a run would hide.
# - FlashAttention-1 and -2 share the tile arithmetic; only the loop order and where O, ℓ, m live differ.
#   FA1 writes O to HBM once per K/V block, FA2 once.
# - Barriers go where a tile is complete and before it is overwritten; the grader names the element
#   when one is missing.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Each solution is hidden; it grades the reference solution (`course.kernel_lab.solutions`) and checks
# the numbers against a derivation by hand.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 1
#
# Complete `my_matmul_kernel` and `my_softmax_kernel` until `grade("naive", ...)` passes. Then, by hand:
# how many bytes does the softmax launch read from HBM at the first shape, and how many does the first
# matmul read (Q and K, each re-read once per output tile along the other dimension)?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
result = grade("naive", matmul_kernel=solutions.matmul_kernel, softmax_kernel=solutions.softmax_kernel)
display(result)
s = EXERCISES["naive"].shapes[0]
bh, n, d, t = s.batch * s.heads, s.seq_len, s.head_dim, s.tiles["matmul_tile"]
seen = result.checks.set_index(["shape", "check"]).got
assert result.passed
assert seen[(s.label, "softmax: HBM read B = simlib")] == bh * n * n * 4  # S once
qk_reads = bh * 2 * n * d * math.ceil(n / t) * 4  # Q and K, each ⌈N/T⌉ times
assert seen[(s.label, "qk: HBM read B = simlib")] == qk_reads

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 2
#
# Complete `my_fa1_kernel` until it passes. Predict, then check: how many bytes does it write to HBM in
# all, at the first shape (Tc = ⌈N/Bc⌉; the initialisation counts too)? How does that compare with
# FlashAttention-2's writes for the same tiles?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
result = grade("fa1", fa1_kernel=solutions.fa1_kernel)
display(result)
s = EXERCISES["fa1"].shapes[0]
bh, n, d, tc = s.batch * s.heads, s.seq_len, s.head_dim, math.ceil(s.seq_len / s.tiles["block_cols"])
fa1_writes = bh * (n * d + 2 * n + tc * (n * d + 2 * n)) * 4  # init, then O, ℓ, m after every K/V block
fa2_writes = bh * (n * d + n) * 4  # O and L once
assert result.passed
assert result.checks.set_index(["shape", "check"]).got[(s.label, "HBM write B = simlib")] == fa1_writes
assert count("fa2", s.workload, **s.tiles).hbm_write_bytes == fa2_writes
print(f"FA1 writes {fa1_writes:,} B, FA2 {fa2_writes:,} B: {fa1_writes / fa2_writes:.1f}×")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 3
#
# Complete `my_fa2_inner` until it passes. Then count by hand the SRAM reads per score of your inner
# loop (d = 8 at the first shape) and compare with 3d + 2 (docs/COUNTING.md §fa2).

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
result = grade("fa2_inner", inner=solutions.fa2_inner)
display(result)
s = EXERCISES["fa2_inner"].shapes[0]
reads = result.checks.set_index(["shape", "check"]).got[(s.label, "SRAM read B = simlib")] // 4
per_score = reads / (s.batch * s.heads * s.seq_len**2)
assert result.passed
assert per_score == 3 * s.head_dim + 2  # 2d (Q and K rows) + 1 (exp) + 1 + d (p, then a V row)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 4
#
# Predict the verdict on the planted `softmax_rereads_s` (it reads S from HBM a second time for the
# exponential, and counts it): which checks fail, and by how many bytes at each shape? Then run it.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
exercise, parts = planted("softmax_rereads_s")
result = grade(exercise, matmul_kernel=solutions.matmul_kernel, **parts)
display(result)
assert set(result.failures.check) == {"softmax: HBM read B = simlib"}  # right O, honest counters
for s in EXERCISES["naive"].shapes:
    row = result.failures[result.failures["shape"] == s.label].iloc[0]
    assert row.got - row.expected == s.batch * s.heads * s.seq_len**2 * 4  # N² more elements per head

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise 5
#
# Design question: at N = 4096, d = 64 in fp32 with Br = Bc = 64 (and T = 16 for the matmul), how many
# HBM bytes per head does each of your three kernels move? Write the three closed forms (lecture 4),
# then check them with `simlib.count`. Which term makes FA1 lose to FA2?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
N, d, T, B = 4096, 64, 16, 64
w = Workload(seq_len=N, head_dim=d, dtype="fp32")
tiles = math.ceil(N / B)
by_hand = {
    "naive": 4 * (3 * N * d * math.ceil(N / T) + N * N + N * N * math.ceil(d / T) + 2 * N * N + N * d),
    "fa1": 4 * (2 * N * d + tiles * (2 * N * d + 2 * N) + N * d + 2 * N + tiles * (N * d + 2 * N)),
    "fa2": 4 * (N * d + tiles * 2 * N * d + N * d + N),
}
params = {
    "naive": {"matmul_tile": T},
    "fa1": {"block_rows": B, "block_cols": B},
    "fa2": {"block_rows": B, "block_cols": B},
}
model = {name: count(name, w, **params[name]).hbm_bytes for name in by_hand}
print({name: f"{value / 1e6:.1f} MB" for name, value in model.items()})
assert model == by_hand
assert model["fa2"] < model["fa1"] < model["naive"]
