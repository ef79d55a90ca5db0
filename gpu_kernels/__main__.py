"""``python -m gpu_kernels``: see gpu_kernels/cli.py (arguments are parsed before numba is imported)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
