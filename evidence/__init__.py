"""The model against measurement: Figure 2 of the paper (`figure2`, `figure2_l2`), the energy model against
NVML (`energy_check`, `energy_counters`, `energy_claim`, `energy_report`), the physical model against
Nsight Compute (`model_vs_ncu`, `l2_evidence`), and the posts' claims with their verdicts (`claims`,
`verdicts`, `intensity`, `paper`, the readers of the recorded runs in `readers`).

It reads simlib (the model), measurements (the recorded files) and gpu_kernels; only the course and
the lectures sit above it. `python -m evidence figure2|claims|model-vs-ncu` (evidence/cli.py).
"""
