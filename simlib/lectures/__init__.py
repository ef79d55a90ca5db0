"""What the lectures (notebooks/) use beside the model: charts, the posts' claims and their verdicts,
and fixed-schema readers of the H200 measurements in data/measurements/current/.

The model core (simlib and its other subpackages) never imports this package; the lectures import
both. `python -m simlib claims [--json]` prints the verdict table from here.
"""
