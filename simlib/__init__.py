"""simlib: exact HBM/SRAM traffic of naive, FlashAttention-1 and FlashAttention-2 attention.

>>> from simlib import Workload, count
>>> count("naive", Workload(seq_len=4096, head_dim=64)).hbm_read_bytes // 2   # 3Nd + 2N² elements
34340864
"""

from .bounds import compulsory_bytes, saha_ye_bytes
from .counts import ALGORITHMS, Result, count
from .hardware import Hardware, MemoryLevel, load_preset, preset_keys
from .roofline import Roofline, roofline
from .tiling import Tiling, block_sizes, make_tiling
from .units import DTYPE_BYTES, parse_size
from .workload import Workload

__all__ = [
    "ALGORITHMS",
    "DTYPE_BYTES",
    "Hardware",
    "MemoryLevel",
    "Result",
    "Roofline",
    "Tiling",
    "Workload",
    "block_sizes",
    "compulsory_bytes",
    "count",
    "load_preset",
    "make_tiling",
    "parse_size",
    "preset_keys",
    "roofline",
    "saha_ye_bytes",
]
