"""The lab's hints: three per exercise, from a nudge to nearly the answer (`hint(exercise, n)` in the
lecture), and the targeted ones the grader adds to a failing grade, chosen by which check failed.

>>> hint("fa2_inner", 1).startswith("Four steps")
True
"""

from __future__ import annotations

#: Progressive hints, shown one at a time.
PROGRESSIVE = {
    "naive": (
        "The matmul: thread (ty, tx) owns C[row, col]; for each chunk k0 of T along the inner dimension the "
        "block copies one T×T tile of A and one of B into shared memory (one HBM read and one SRAM write per "
        "element), syncs, and multiplies out of shared memory (two SRAM reads per multiply-add).",
        "Ragged tiles: the last chunk along k has kk = min(T, K − k0) columns, and rows or columns beyond m or "
        "n are neither loaded nor written. With trans_b the B operand is K stored (n, k): read a row of K "
        "along k (coalesced) and store it transposed into the B tile.",
        "The softmax keeps its row in registers (cuda.local.array(n_keys, float32)): read S once (N reads), "
        "take the max, exponentiate x − max in place and sum, then write P = x / sum once (N writes). No "
        "shared memory at all: simlib's naive schedule with no softmax threads counts none.",
    ),
    "fa1": (
        "Algorithm 1, lines 9–13, for your row (thread tid < r): S_ij = scale·Q_i K_jᵀ into Ss[tid, :c] with "
        "its max m̃, P̃ = exp(S − m̃) over S with its sum ℓ̃, then P̃V_j into a register row acc.",
        "The update reads m_i and ℓ_i from SRAM (ms[tid], ls[tid]): m_new = max(m_i, m̃), "
        "ℓ_new = e^{m_i − m_new}ℓ_i + e^{m̃ − m_new}ℓ̃, and O_i ← (e^{m_i − m_new}ℓ_i·O_i + e^{m̃ − m_new}·P̃V) / ℓ_new, "
        "reading O_i from Os[tid, x] once per element.",
        "Write O_i, ℓ_new and m_new straight from registers to HBM (o, l, m at row q0 + tid): d + 2 HBM "
        "writes and d + 2 SRAM reads per row and tile, plus the tile arithmetic: 2d reads and 1 write per "
        "score, 1 + 1 for the exponential, 1 + d reads for P̃V.",
    ),
    "fa2_inner": (
        "Four steps for your row: (1) the scores of the tile into Ss[tid, :c] and their max with the old m; "
        "(2) P̃ = exp(S − m_new) over S and its sum; (3) rescale: α = exp(m − m_new), O_acc *= α, "
        "ℓ_new = α·ℓ + Σp̃; (4) O_acc += P̃ V_j.",
        "m is −∞ before the first tile: α = exp(−∞ − m_new) = 0, which is right (O_acc and ℓ are still 0). "
        "Return (m_new, ℓ_new, reads, writes), the SRAM accesses this call made.",
        "Per score: 2d reads and 1 write (the score), 1 read and 1 write (the exponential), 1 + d reads "
        "(p once, then a V row). O_acc is a local array: registers are free.",
    ),
}

#: Targeted hints when an output is wrong but finite, per exercise and output (L = m + log ℓ).
WRONG_OUTPUT = {
    "naive": {
        "O": "O is finite but wrong: check the scale 1/√d (the qk launch passes it as alpha), the ragged last "
        "chunk (kk = min(T, K − k0)), the transposed K tile, and that the softmax subtracts the row max before exp.",
    },
    "fa1": {
        "O": "L is right but O is not: the update must rescale both the old O_i (by e^{m_i − m_new}·ℓ_i) and the "
        "new P̃V (by e^{m̃ − m_new}) and divide by ℓ_new.",
        "L": "L = m + log ℓ is wrong: m_new = max(m_i, m̃) with m̃ the max of the tile's scores (scaled by 1/√d), "
        "ℓ_new = e^{m_i − m_new}·ℓ_i + e^{m̃ − m_new}·ℓ̃, both written back to HBM after every tile.",
    },
    "fa2_inner": {
        "O": "L is right but O is not: O_acc must be rescaled by α = exp(m − m_new) before P̃V_j is added.",
        "L": "L = m + log ℓ is wrong: m_new is the max over the old m and every new score (scaled by 1/√d), "
        "and ℓ_new = α·ℓ + Σp̃ with α = exp(m − m_new).",
    },
}

NAN_OUTPUT = (
    "Some outputs are NaN or inf. Outputs start as NaN, so an element your kernel never writes stays NaN "
    "(a ragged last tile? a row with tid ≥ r?); ℓ = 0 also gives 0/0 = NaN."
)
LOG_OF_ZERO = (
    "On the simulator log(0) raises 'math domain error' (a GPU would give −inf): ℓ was still 0 when the frame "
    "took L = m + log ℓ, so the inner loop did not return ℓ_new = α·ℓ + Σp̃."
)
COUNTERS = (
    "Your counters and what the kernel did differ (the simulator watched every access): count each access where "
    "you make it, and only that: an SRAM read per element you load from a shared array, an HBM read and an SRAM "
    "write per element you copy into one."
)
TRAFFIC = (
    "Your counters are honest but the kernel moves other traffic than the schedule: compare the arrays below "
    "with simlib's table (count(...).table()) and look for a value you re-read instead of keeping it in a register."
)
RACE = (
    "A race: two threads touched one element with no cuda.syncthreads() between them, so on a GPU the result "
    "depends on timing. Sync after a tile is loaded and before it is overwritten."
)
SLICED = (
    "The audit follows element accesses only: index arrays one element at a time (Qs[tid, x], not Qs[tid])."
)


def hint(exercise: str, number: int) -> str:
    """Hint `number` (1–3) of `exercise`; ValueError naming the argument otherwise."""
    if exercise not in PROGRESSIVE:
        raise ValueError(f"exercise must be one of {', '.join(PROGRESSIVE)}, got {exercise!r}")
    hints = PROGRESSIVE[exercise]
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(hints):
        raise ValueError(f"number must be 1 to {len(hints)}, got {number!r}")
    return hints[number - 1]
