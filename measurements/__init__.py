"""The measurement data layer under data/measurements/: the manifest and `import-run` (`manifest`), the
provenance sidecar written with every measured file (`provenance`), and Nsight Compute's CSV (`ncu_csv`).

Above the model (it may use simlib's writer) and below the kernels, the evidence and the course, which
all read and write measurements through it. Plain Python: no numba is imported here.
"""
