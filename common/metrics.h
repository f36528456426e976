/* metrics.h: every hardware metric the profiler reads is one row of one table, METRIC_TABLE:
 * its CUPTI name, its unit, how it aggregates over a kernel's launches, which pass reads it and
 * its label. The row drives the counter pass (counters.c asks CUPTI for every row of its pass),
 * the timeline pass (pm_sampling.c), the kernel details (table.c), the trace's kernel args and
 * counter tracks (trace.c). To add a metric, add a row; to rename one the device refuses, edit
 * its name here (tests/probes/pm_metrics.sh lists what the device has).
 *
 * Passes:
 *   MP_RANGE  the counter pass: one value per kernel launch (CUPTI Range Profiler, kernel
 *             replay; cupti_range_profiler.h). A name the device refuses reads NaN ("-").
 *   MP_STALL  the counter pass too: the warp states, as Nsight Compute's Warp State Statistics
 *             section reads them (smsp__average_warps_issue_stalled_<reason>_per_issue_active
 *             .ratio: warps in that state per issued instruction, averaged over the SM
 *             sub-partitions). A reason's share = its ratio over the sum of all rows of MP_STALL.
 *   MP_PM     the timeline pass: GPU-wide values every sampling interval (CUPTI PM sampling,
 *             cupti_pmsampling.h). Must fit in one pass (PM sampling refuses more); the names
 *             are the "elapsed" forms, measured over each sample's window.
 * Aggregation over the launches of one kernel configuration in a step: MA_SUM (bytes, counts,
 * time) or MA_MEAN (percentages, ratios).
 */
#ifndef ATTN_METRICS_H
#define ATTN_METRICS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MU_BYTES, MU_SECTORS, MU_PCT, MU_COUNT, MU_NS, MU_RATIO } metric_unit;
typedef enum { MA_SUM, MA_MEAN } metric_agg;
typedef enum { MP_RANGE, MP_STALL, MP_PM } metric_pass;

/* X(id, CUPTI metric name, unit, aggregation, pass, label) */
#define METRIC_TABLE(X) \
    X(CTR_DRAM_READ,        "dram__bytes_read.sum",                                   MU_BYTES,   MA_SUM,  MP_RANGE, "DRAM read") \
    X(CTR_DRAM_WRITE,       "dram__bytes_write.sum",                                  MU_BYTES,   MA_SUM,  MP_RANGE, "DRAM written") \
    X(CTR_L2_WRITE_SECTORS, "lts__t_sectors_srcunit_tex_op_write.sum",                MU_SECTORS, MA_SUM,  MP_RANGE, "L2 write sectors") \
    X(CTR_WARPS_ACTIVE,     "sm__warps_active.avg.pct_of_peak_sustained_active",      MU_PCT,     MA_MEAN, MP_RANGE, "achieved occupancy") \
    X(CTR_TENSOR_PCT,       "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", MU_PCT, MA_MEAN, MP_RANGE, "tensor pipe active") \
    X(CTR_HMMA_PCT,         "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", MU_PCT, MA_MEAN, MP_RANGE, "tensor pipe HMMA-class") \
    X(CTR_HMMA_INST,        "sm__inst_executed_pipe_tensor_op_hmma.sum",              MU_COUNT,   MA_SUM,  MP_RANGE, "HMMA-class instructions") \
    X(CTR_GMMA_INST,        "sm__inst_executed_pipe_tensor_op_gmma.sum",              MU_COUNT,   MA_SUM,  MP_RANGE, "GMMA instructions") \
    X(CTR_DURATION_NS,      "gpu__time_duration.sum",                                 MU_NS,      MA_SUM,  MP_RANGE, "duration under profiling") \
    X(STALL_LONG_SCOREBOARD, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", MU_RATIO, MA_MEAN, MP_STALL, "long_scoreboard") \
    X(STALL_SHORT_SCOREBOARD, "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio", MU_RATIO, MA_MEAN, MP_STALL, "short_scoreboard") \
    X(STALL_BARRIER,        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",       MU_RATIO, MA_MEAN, MP_STALL, "barrier") \
    X(STALL_MEMBAR,         "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",        MU_RATIO, MA_MEAN, MP_STALL, "membar") \
    X(STALL_GMMA,           "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio",          MU_RATIO, MA_MEAN, MP_STALL, "gmma") \
    X(STALL_MATH_THROTTLE,  "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio", MU_RATIO, MA_MEAN, MP_STALL, "math_pipe_throttle") \
    X(STALL_MIO_THROTTLE,   "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",  MU_RATIO, MA_MEAN, MP_STALL, "mio_throttle") \
    X(STALL_LG_THROTTLE,    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",   MU_RATIO, MA_MEAN, MP_STALL, "lg_throttle") \
    X(STALL_TEX_THROTTLE,   "smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio",  MU_RATIO, MA_MEAN, MP_STALL, "tex_throttle") \
    X(STALL_WAIT,           "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",          MU_RATIO, MA_MEAN, MP_STALL, "wait") \
    X(STALL_DISPATCH,       "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio", MU_RATIO, MA_MEAN, MP_STALL, "dispatch_stall") \
    X(STALL_NO_INSTRUCTION, "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio", MU_RATIO, MA_MEAN, MP_STALL, "no_instruction") \
    X(STALL_BRANCH,         "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio", MU_RATIO, MA_MEAN, MP_STALL, "branch_resolving") \
    X(STALL_SLEEPING,       "smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio",      MU_RATIO, MA_MEAN, MP_STALL, "sleeping") \
    X(STALL_DRAIN,          "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio",         MU_RATIO, MA_MEAN, MP_STALL, "drain") \
    X(STALL_IMC_MISS,       "smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio",      MU_RATIO, MA_MEAN, MP_STALL, "imc_miss") \
    X(STALL_MISC,           "smsp__average_warps_issue_stalled_misc_per_issue_active.ratio",          MU_RATIO, MA_MEAN, MP_STALL, "misc") \
    X(STALL_NOT_SELECTED,   "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",  MU_RATIO, MA_MEAN, MP_STALL, "not_selected") \
    X(STALL_SELECTED,       "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",      MU_RATIO, MA_MEAN, MP_STALL, "selected") \
    X(TL_TENSOR,            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", MU_PCT, MA_MEAN, MP_PM, "tensor pipe") \
    X(TL_DRAM,              "dram__throughput.avg.pct_of_peak_sustained_elapsed",     MU_PCT,     MA_MEAN, MP_PM,    "DRAM") \
    X(TL_WARPS,             "sm__warps_active.avg.pct_of_peak_sustained_elapsed",     MU_PCT,     MA_MEAN, MP_PM,    "warps active") \
    X(TL_DRAM_READ,         "dramc__read_throughput.avg.pct_of_peak_sustained_elapsed", MU_PCT,   MA_MEAN, MP_PM,    "DRAM read") \
    X(TL_DRAM_WRITE,        "dramc__write_throughput.avg.pct_of_peak_sustained_elapsed", MU_PCT,  MA_MEAN, MP_PM,    "DRAM write")

#define METRIC_ENUM(id, name, unit, agg, pass, label) id,
enum { METRIC_TABLE(METRIC_ENUM) CTR_N };
#undef METRIC_ENUM

typedef struct {
    const char *cupti;     /* the CUPTI metric name (also the trace's arg name, as Kineto's) */
    metric_unit unit;
    metric_agg agg;        /* over a kernel configuration's launches in one step */
    metric_pass pass;
    const char *label;     /* the table's and the trace tracks' words */
} metric_row;

/* The rows, indexed by the ids above (CTR_N of them). */
extern const metric_row METRICS[CTR_N];

#ifdef __cplusplus
}
#endif
#endif
