"""The attention kernels, one file each: `naive` (Algorithm 0, three launches), `tiled` (readable
FlashAttention-2), `fast` (register-tiled FlashAttention-2), all fp32 on CUDA cores; `naive_tc` and
`fa2_tc` in fp16/bf16 on tensor cores. Importing this package imports no kernel (nor numba).
"""
