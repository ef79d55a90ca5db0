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

#: What `predict` returns for each launch.
METRICS = (DRAM_READ, DRAM_WRITE, L2_READ, L2_WRITE, L1_LD, L1_ST, SHARED_LD, SHARED_ST)
#: What `python -m gpu_kernels profile` asks ncu for: the predicted metrics, the registers the
#: model needs (occupancy, local memory), and two for the reader.
PROFILE_METRICS = (*METRICS, REGISTERS, WARPS_ACTIVE, DURATION)
