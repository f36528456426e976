/* counters_tests.c: unit subcommands for the counter pass's report side (counters_report.c, the
 * table's and the trace's counter parts) on a synthetic profile: the 3-step profile of
 * profiler_tests.c with ProfilerStep ranges, plus synthetic counters for its two kernels per step
 * (tests/common.bats holds the expected values and how they follow). No CUPTI, no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "profiler.h"
#include "report.h"
#include "table.h"
#include "trace.h"
#include "unit.h"

/* profiler_tests.c */
void unit_kineto_profile(profile *p, report_info *info, struct cudaDeviceProp *prop);

/* Per step: the GEMM (range 0) and the softmax (range 1).
 *   GEMM:    DRAM read 100 MB, DRAM write 5 MB, 2,000,000 L2 write sectors (64 MB: the L2 figure
 *            is shown), 11.8% warps active, tensor pipe 43.8%, 1,000,000 HMMA-class, 0 GMMA;
 *   softmax: DRAM read and write 268,435,456 B, 8,388,608 L2 write sectors (= the DRAM bytes: the
 *            DRAM figure is shown), 15% warps active (theoretical 18.75%), 0.9% tensor pipe,
 *            655,360 HMMA-class (HFMA2.MMA moves: no tensor-core math), 0 GMMA.
 * Copies and memsets of a step: one 256 MiB DtoD copy (read + write), one 4-byte memset (write). */
static int make_counters(counter_pass *c, const char *state)
{
    if (!strcmp(state, "unavailable")) {
        counters_set_state(c, COUNTERS_UNAVAILABLE, "cuptiRangeProfilerEnable failed: "
                           "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
        return 0;
    }
    if (!strcmp(state, "off")) {
        counters_set_state(c, COUNTERS_OFF, "Nsight Compute");
        return 0;
    }
    if (!strcmp(state, "disabled")) {
        counters_set_state(c, COUNTERS_DISABLED, "--no-counters");
        return 0;
    }
    if (strcmp(state, "on")) {
        fprintf(stderr, "expected on, unavailable, off or disabled, got %s\n", state);
        return -1;
    }
    counters_set_state(c, COUNTERS_ON, NULL);
    c->passes = 1;
    c->n = 2;
    c->k = calloc(2, sizeof *c->k);
    if (!c->k) return -1;
    const double gemm[] = { 100e6, 5e6, 2e6, 11.8, 43.8, 43.8, 1e6, 0, 90000 };
    const double soft[] = { 268435456, 268435456, 8388608, 15.0, 0.9, 0.9, 655360, 0, 30000 };
    for (int m = 0; m < CTR_N; m++) c->k[0].v[m] = c->k[1].v[m] = NAN;
    memcpy(c->k[0].v, gemm, sizeof gemm);
    memcpy(c->k[1].v, soft, sizeof soft);
    /* The GEMM's warp states (warps per issued instruction), 5.0 in all: long_scoreboard 40%,
     * barrier 20%, selected 20% (not a stall), wait 12%, math_pipe_throttle 8%; the other
     * reasons 0. The softmax's stall rows stay NaN (not measured: no stalls line). */
    for (int m = 0; m < CTR_N; m++)
        if (METRICS[m].pass == MP_STALL) c->k[0].v[m] = 0.0;
    c->k[0].v[STALL_LONG_SCOREBOARD] = 2.0;
    c->k[0].v[STALL_BARRIER] = 1.0;
    c->k[0].v[STALL_SELECTED] = 1.0;
    c->k[0].v[STALL_WAIT] = 0.6;
    c->k[0].v[STALL_MATH_THROTTLE] = 0.4;
    return 0;
}

int unit_kineto_table(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "kineto-table: on|unavailable|off|disabled\n"); return 2; }
    counter_pass c;
    if (make_counters(&c, argv[1])) return 2;
    profile p;
    struct cudaDeviceProp prop;
    report_info info;
    unit_kineto_profile(&p, &info, &prop);
    info.counters = &c;
    table_print(stdout, &p, &info);
    prof_free(&p);
    counters_free(&c);
    return 0;
}

int unit_kineto_trace(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "kineto-trace: PATH on|unavailable|off|disabled\n"); return 2; }
    counter_pass c;
    if (make_counters(&c, argv[2])) return 2;
    profile p;
    struct cudaDeviceProp prop;
    report_info info;
    unit_kineto_profile(&p, &info, &prop);
    info.counters = &c;
    trace_write(argv[1], &p, &info);
    prof_free(&p);
    counters_free(&c);
    return 0;
}

int unit_kineto_summary(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "kineto-summary: on|unavailable|off|disabled\n"); return 2; }
    counter_pass c;
    if (make_counters(&c, argv[1])) return 2;
    profile p;
    struct cudaDeviceProp prop;
    report_info info;
    unit_kineto_profile(&p, &info, &prop);
    double r, w;
    char rb[32], wb[32];
    counters_step_bytes(&p, &c, 1, &r, &w);
    counters_format_summary(&c, r, rb, sizeof rb);
    counters_format_summary(&c, w, wb, sizeof wb);
    printf("dram_read=%s dram_write=%s\n", rb, wb);
    prof_free(&p);
    counters_free(&c);
    return 0;
}

/* Each argument as a double ("nan" allowed), formatted by fmt. */
static int format_each(int argc, char **argv, void (*fmt)(double, char *, size_t))
{
    if (argc < 2) { fprintf(stderr, "%s: VALUE...\n", argv[0]); return 2; }
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        double x = strtod(argv[i], &end);
        if (end == argv[i] || *end) { fprintf(stderr, "%s: not a number: %s\n", argv[0], argv[i]); return 2; }
        char buf[64];
        fmt(x, buf, sizeof buf);
        printf("%s\n", buf);
    }
    return 0;
}

int unit_format_bytes(int argc, char **argv) { return format_each(argc, argv, counters_format_bytes); }
int unit_format_pct(int argc, char **argv) { return format_each(argc, argv, counters_format_pct); }
int unit_format_count(int argc, char **argv) { return format_each(argc, argv, counters_format_count); }
