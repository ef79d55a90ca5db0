"""Attention on the tensor cores in fp16/bf16, from numba: ``fa2_tc`` (FlashAttention-2 forward) and
``naive_tc`` (the materialising pipeline), built from the inline-PTX helpers of ``warp_ops``
(mma.sync, ldmatrix, cp.async), each with a CUDA-simulator twin of the same fragment semantics.

Inputs are fp32 host arrays rounded to the dtype (``dtypes``: uint16 bit patterns on the device).
Importing this package does not import numba; the kernel modules do.
"""
