"""Nsight Compute metric names: the ones the physical model predicts, and the ones the profiler records.

One list, imported by the model (``simlib.physical.launches``) and by the profiler
(``gpu_kernels.measure.ncu_profile``), so a prediction and a measurement are always keyed alike.
A sector is 32 bytes; a wavefront is one pass of the shared-memory pipeline.
"""

DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
L2_READ = "lts__t_sectors_op_read.sum"
L2_WRITE = "lts__t_sectors_op_write.sum"
L1_LD = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
L1_ST = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
SHARED_LD = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SHARED_ST = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
REGISTERS = "launch__registers_per_thread"
WARPS_ACTIVE = "sm__warps_active.avg.pct_of_peak_sustained_active"
DURATION = "gpu__time_duration.sum"
L2_FABRIC = "lts__t_sectors_srcunit_ltcfabric.sum"

#: Instruction counters fa3_tc's model predicts beside METRICS (fa3_tc_model.py): the wgmma (warp
#: instructions of the tensor pipe's GMMA path, four per wgmma of a warpgroup), the cp.async copies
#: (LDGSTS, two spellings across ncu versions) and the LSU's shared-memory instructions (none).
GMMA_INSTRUCTIONS = "sm__inst_executed_pipe_tensor_op_gmma.sum"
LDGSTS_INSTRUCTIONS = ("smsp__inst_executed_op_ldgsts.sum", "smsp__sass_inst_executed_op_ldgsts.sum")
SHARED_LD_INSTRUCTIONS = "smsp__inst_executed_op_shared_ld.sum"
SHARED_ST_INSTRUCTIONS = "smsp__inst_executed_op_shared_st.sum"
#: The shared-memory data banks, 4-byte words: where run fa3phys-ncu-20261202 found the wgmma's
#: reads (docs/L2_INVESTIGATION.md, "fa3_tc"); the LSU's total wavefronts were recorded beside them.
SHARED_BANK_READS = "l1tex__data_bank_reads.sum"
SHARED_BANK_WRITES = "l1tex__data_bank_writes.sum"
SHARED_LSU_ALL = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
#: Named by ncu 2025.3's GH100 list (ncu_metrics_fa3_h200.log) but not yet recorded: the HGMMA's
#: own shared-memory wavefronts and bytes (benchmarks/fa3_tc_ncu_h200.sh asks for them next time).
SHARED_GMMA_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum"
SHARED_GMMA_BYTES = "sm__sass_data_bytes_mem_shared_op_gmma.sum"

#: What `predict` returns for each launch.
METRICS = (DRAM_READ, DRAM_WRITE, L2_READ, L2_WRITE, L1_LD, L1_ST, SHARED_LD, SHARED_ST)
#: What `python -m gpu_kernels profile` asks ncu for: the predicted metrics, the registers the
#: model needs (occupancy, local memory), and two for the reader.
PROFILE_METRICS = (*METRICS, REGISTERS, WARPS_ACTIVE, DURATION)
