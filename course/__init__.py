"""What the lectures (notebooks/) use beside the model and the evidence: charts with labelled axes, the
step-through widgets (the tile walk of naive, FA1 and FA2 with a byte counter, the online softmax of one
row) each with a static fallback, and the energy lecture's tables.

The top of the import order (simlib < measurements < gpu_kernels < evidence < course): nothing below
imports this package (tests/test_layering.py).
"""
