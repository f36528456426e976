/* counters.h: per-kernel hardware counters, one forward under CUPTI's Range Profiler
 * (cupti_range_profiler.h + cupti_profiler_host.h, CUDA 13.0), after the timed and traced steps.
 *
 * The counter pass (counters_run) runs one more forward with auto ranges (one range per kernel
 * launch) and kernel replay, after prof_finish has disabled and flushed the activity tracing and
 * after gpu_us has been timed, so it changes neither the table's times, nor the trace's, nor
 * gpu_us. Ranges are kernels, named "0", "1", ... in launch order; range i is mapped to the i-th
 * kernel of each active step of the profile (counters_for).
 *
 * What each kernel gets (metric names confirmed at run time: a name the device's metric tables
 * refuse reads NaN, printed "-"):
 *   DRAM bytes read and written (dram__bytes_{read,write}.sum), the bytes the SMs wrote into L2
 *   (lts__t_sectors_srcunit_tex_op_write.sum x 32 B), achieved occupancy (warps active per
 *   cycle over the SM's peak, sm__warps_active.avg.pct_of_peak_sustained_active, ncu's
 *   definition), tensor-pipe utilization (any op, and HMMA-class ops; on sm_90 the HMMA class
 *   includes HGMMA), tensor instructions executed (HMMA class, which includes GMMA on sm_90, and
 *   GMMA alone), and the kernel's duration under profiling (not comparable to the traced times).
 *
 * The written bytes shown (counters_kernel_write): the larger of the DRAM write counter and the
 * L2 write bytes. The DRAM counter sees only the dirty lines evicted while the kernel runs: an
 * output that still fits in the 50 MB L2 when the kernel ends (05's 16.8 MB O) reaches DRAM later,
 * charged to whatever runs then. The L2 write bytes are what the kernel wrote; all of it reaches
 * DRAM eventually. Copies and memsets are not kernels, so they have no range: their bytes come
 * from the step's activity records (a DtoD copy reads and writes its bytes, a memset writes them).
 *
 * States: ON (measured), UNAVAILABLE (no permission, unsupported device or driver, a CUPTI
 * failure: one stderr line, counters read "-"), OFF (another CUPTI client such as Nsight Compute
 * or Nsight Systems owns CUPTI: our profiler stepped aside; counters read "off"), DISABLED
 * (--no-counters: "-"), NOT_RUN (no pass was made: "-").
 */
#ifndef ATTN_COUNTERS_H
#define ATTN_COUNTERS_H

#include <stddef.h>

#include "metrics.h"
#include "profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The metrics are the rows of METRIC_TABLE (metrics.h): the counter pass reads the rows of passes
 * MP_RANGE and MP_STALL; the other rows of a kernel_counters stay NaN. */
typedef struct { double v[CTR_N]; } kernel_counters;   /* NaN: not measured */

typedef enum { COUNTERS_NOT_RUN, COUNTERS_ON, COUNTERS_UNAVAILABLE, COUNTERS_OFF,
               COUNTERS_DISABLED } counters_state;

typedef struct counter_pass {
    counters_state state;
    char why[256];             /* the reason when not ON (one line, no newline) */
    size_t n;                  /* kernels (ranges) of the counter-pass forward, launch order */
    kernel_counters *k;
    int passes;                /* replay passes per kernel the metric set needed */
} counter_pass;

/* One forward under the Range Profiler: forward(arg) enqueues the stage's work (the pass
 * synchronizes after it). Call after prof_finish and after the timing. device: the CUDA ordinal
 * (its primary context must be current). On any CUPTI failure, missing permission or support:
 * one line on stderr, state UNAVAILABLE, no exit; CUDA failures of the forward exit 1 as usual.
 * If the profiler stepped aside (prof_cupti_owner() != NULL) the state is OFF and no CUPTI call
 * is made. Free with counters_free. */
void counters_run(counter_pass *out, int device, void (*forward)(void *arg), void *arg);
void counters_free(counter_pass *c);

/* A pass in a given state (unit tests, --no-counters, sanitize): no CUPTI call. */
void counters_set_state(counter_pass *c, counters_state state, const char *why);

/* The counters of kernel activity a of the profile: the i-th kernel of its step gets range i,
 * if the step's kernel count equals the pass's. NULL when there is no such mapping (set-up step,
 * counts differ, counters not ON). */
const kernel_counters *counters_for(const profile *p, const counter_pass *c, const gpu_activity *a);

/* Bytes a kernel wrote: max(DRAM write, L2 write sectors x 32). *from_l2 (may be NULL) = 1 when
 * the L2 figure is the larger. NaN when neither was measured. */
double counters_kernel_write(const kernel_counters *k, int *from_l2);

/* Bytes per forward of active step `step`: its kernels' counters (read: DRAM read; write:
 * counters_kernel_write) plus its copies' and memsets' bytes from their activity records (a
 * DtoD copy reads and writes its bytes, HtoD writes, DtoH reads; a memset writes). Returns 0,
 * or -1 (both NaN) when the counters are not ON or do not map onto the step's kernels. */
int counters_step_bytes(const profile *p, const counter_pass *c, int step, double *read,
                        double *write);

/* The warp states of a kernel (the MP_STALL rows), largest share first, "selected" (issuing: not
 * a stall) left out: up to n row ids into ids[] and their shares (% of all warp states, selected
 * included) into share[]. Returns how many (0 when the stall rows were not measured). */
int counters_top_stalls(const kernel_counters *k, int n, int *ids, double *share);

/* The tensor instruction class of a kernel: "wgmma (GMMA)" when it executed GMMA instructions;
 * else "mma.sync (HMMA)" when it executed HMMA-class instructions and kept the tensor pipe at
 * least COUNTERS_TENSOR_MIN_PCT active; else "no tensor-core math" (a small HMMA-class count
 * without tensor-pipe time is HFMA2.MMA: the compiler also issues that instruction on the tensor
 * pipe to move constants into registers); "-" when not measured. */
enum { COUNTERS_TENSOR_MIN_PCT = 5 };
const char *counters_tensor_class(const kernel_counters *k);

/* The summary line's value: bytes as an integer, "-" (not measured) or "off" (state OFF). */
void counters_format_summary(const counter_pass *c, double bytes, char *buf, size_t len);

/* Human units, decimal as Nsight Compute's: "512 B", "4.10 kB", "66.1 MB", "1.13 GB"; "-" for NaN. */
void counters_format_bytes(double bytes, char *buf, size_t len);
/* "%.1f%%", "-" for NaN. */
void counters_format_pct(double pct, char *buf, size_t len);
/* A count with thousands separators, "409,600"; "-" for NaN. */
void counters_format_count(double n, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
