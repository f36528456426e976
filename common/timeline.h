/* timeline.h: when, inside a kernel: GPU-wide hardware counters sampled every few hundred ns
 * over one more forward (the timeline pass), drawn as counter tracks in the trace and as a
 * sparkline under each kernel's details.
 *
 * The pass (pm_sampling.c, CUPTI PM sampling, cupti_pmsampling.h + cupti_profiler_host.h, CUDA
 * 12.6+): the rows of pass MP_PM of METRIC_TABLE (metrics.h; they must fit in one pass), GPU time
 * interval trigger, one forward between cuptiPmSamplingStart and Stop. It runs as the profile's
 * timeline step (PROF_STEP_TIMELINE, after the traced steps, before the timing): its kernels are
 * traced, so the trace holds the kernels the samples measure, in a "timeline pass" range of
 * their own; the table and gpu_us never see it.
 *
 * Clocks: each sample's window is stamped by the GPU's global timer (%globaltimer, ns); CUPTI's
 * activity records are in its own timestamp domain. timeline_align measures the offset between
 * the two on the pass's own kernels: the first and last sample with warps active against the
 * first kernel's start and the last kernel's end. When the two edges agree within two sampling
 * intervals the clocks are taken as one (offset 0); else the samples are shifted by the measured
 * offset (and the note says so).
 *
 * States as the counter pass's: ON, UNAVAILABLE (no permission, another profiler session, an
 * older GPU or driver, a metric the device refuses, a config needing more than one pass: one
 * line on stderr, the timeline reads "-"), OFF (another CUPTI client owns CUPTI), DISABLED
 * (--no-timeline, sanitize), NOT_RUN.
 */
#ifndef ATTN_TIMELINE_H
#define ATTN_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The timeline pass's metrics, in METRIC_TABLE order: the MP_PM rows. */
enum { TL_FIRST = TL_TENSOR, TL_N = CTR_N - TL_TENSOR };

/* Default sampling interval (ns) and the range --timeline-interval accepts. */
enum { TIMELINE_INTERVAL_NS = 500, TIMELINE_INTERVAL_MIN = 100, TIMELINE_INTERVAL_MAX = 1000000 };
/* A sample with warps active above this (%) is busy: the alignment's edges. */
#define TIMELINE_BUSY_PCT 1.0
/* Sparkline width in characters. */
enum { TIMELINE_SPARK_WIDTH = 40 };

typedef struct {
    uint64_t start_ns, end_ns;     /* the window, in CUPTI's activity clock once aligned */
    double v[TL_N];                /* metric TL_FIRST + j; NaN: not evaluated */
} tl_sample;

typedef enum { TIMELINE_NOT_RUN, TIMELINE_ON, TIMELINE_UNAVAILABLE, TIMELINE_OFF,
               TIMELINE_DISABLED } timeline_state;

typedef struct timeline {
    timeline_state state;
    char why[256];                 /* the reason when not ON */
    uint64_t interval_ns;
    size_t n;                      /* samples, in time order */
    tl_sample *s;
    size_t dropped;                /* samples outside the pass's kernels, dropped by timeline_align */
    int overflow;                  /* the hardware buffer or the counter data image filled up */
    int aligned;                   /* timeline_align ran on kernels and busy samples */
    int64_t measured_offset_ns;    /* activity clock - sample clock, from the edges */
    int64_t applied_offset_ns;     /* what was added to the samples (0 when the clocks agree) */
} timeline;

/* The timeline pass: forward(arg) once under PM sampling at interval_ns. forward_us: the host
 * wall time of one forward with its synchronize (sizes the counter data image). Call inside the
 * profile's timeline step. Any CUPTI failure: one line on stderr, UNAVAILABLE, no exit; CUDA
 * failures of the forward exit 1 as usual. Free with timeline_free. */
void timeline_run(timeline *out, int device, uint64_t interval_ns, double forward_us,
                  void (*forward)(void *arg), void *arg);
void timeline_free(timeline *t);
void timeline_set_state(timeline *t, timeline_state state, const char *why);

/* After prof_finish: aligns the samples' clock to the profile's (see above) using the
 * profile's PROF_STEP_TIMELINE kernels, then keeps only the samples overlapping them
 * (widened by one interval each side). No-op unless ON. */
void timeline_align(timeline *t, const profile *p);

/* The timeline kernel that corresponds to kernel a of an active step: the i-th kernel of the
 * timeline step for the i-th kernel of a's step (same name); NULL if none. */
const gpu_activity *timeline_kernel_for(const profile *p, const gpu_activity *a);

/* Over kernel k's interval: the samples whose window midpoint lies in it; mean of metric j
 * (TL index) into *mean (NaN when none). Returns the count. */
size_t timeline_mean(const timeline *t, const gpu_activity *k, int j, double *mean);

/* The samples of metric j over [start, end) as a sparkline of `width` characters into buf
 * (UTF-8 block characters U+2581..U+2588 for 0..100 %, or ASCII ".:-=+*#@" when utf8 == 0):
 * column c is the mean of the samples whose window overlaps its slice of the interval;
 * ' ' for a slice no sample overlaps, '?' for a NaN mean. buf holds at least 3 * width + 1
 * bytes. Returns the samples behind the line. */
size_t timeline_sparkline(const timeline *t, int j, uint64_t start, uint64_t end, int width,
                          int utf8, char *buf, size_t len);

/* 1 when the locale's character set is UTF-8: the first set of LC_ALL, LC_CTYPE, LANG names
 * UTF-8 (or utf8, any case). */
int timeline_locale_utf8(void);

#ifdef __cplusplus
}
#endif
#endif
