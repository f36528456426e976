/* timeline_tests.c: unit subcommands for the timeline's report side (timeline_report.c, the
 * table's timeline lines, the trace's counter tracks) on synthetic samples. No CUPTI, no GPU.
 * tests/timeline_cpu.bats holds the expected values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "profiler.h"
#include "report.h"
#include "table.h"
#include "timeline.h"
#include "trace.h"
#include "unit.h"

void unit_kineto_profile(profile *p, report_info *info, struct cudaDeviceProp *prop);

/* sparkline utf8|ascii WIDTH V...: samples of 100 ns each over [0, 100 n) with tensor pipe = V
 * ("nan" allowed); prints the line between '|' and the sample count. */
int unit_sparkline(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "utf8") && strcmp(argv[1], "ascii"))) {
        fprintf(stderr, "sparkline: utf8|ascii WIDTH V...\n");
        return 2;
    }
    const int width = atoi(argv[2]);
    timeline t;
    timeline_set_state(&t, TIMELINE_ON, NULL);
    t.interval_ns = 100;
    t.n = (size_t)(argc - 3);
    t.s = calloc(t.n + 1, sizeof *t.s);
    if (!t.s) return 2;
    for (size_t i = 0; i < t.n; i++) {
        t.s[i].start_ns = 100 * i;
        t.s[i].end_ns = 100 * (i + 1);
        for (int j = 0; j < TL_N; j++) t.s[i].v[j] = NAN;
        t.s[i].v[TL_TENSOR - TL_FIRST] = strtod(argv[3 + i], NULL);
    }
    char buf[4 * 256 + 1];
    const uint64_t end = t.n ? 100 * t.n : 1000;
    size_t n = timeline_sparkline(&t, TL_TENSOR - TL_FIRST, 0, end, width > 256 ? 256 : width,
                                  argv[1][0] == 'u', buf, sizeof buf);
    printf("|%s| samples=%zu\n", buf, n);
    timeline_free(&t);
    return 0;
}

/* locale-utf8: timeline_locale_utf8() under the caller's environment. */
int unit_locale_utf8(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("utf8=%d\n", timeline_locale_utf8());
    return 0;
}

/* The synthetic profile of counters_tests.c plus a timeline step: its two kernels again, 1 ms
 * after the last record (same durations: GEMM 50 us, softmax 30 us, 10 us apart), and samples
 * every 500 ns from 5 us before the GEMM to 5 us after the softmax, stamped on a clock 10 us
 * ahead of the profile's (the alignment must find -10000 ns). Inside the GEMM: tensor pipe 50%,
 * DRAM 10%, warps 40%; inside the softmax: tensor 0%, DRAM 80%, warps 90%; elsewhere 0. */
static int timeline_profile(profile *p, report_info *info, struct cudaDeviceProp *prop,
                            timeline *t, const char *state)
{
    unit_kineto_profile(p, info, prop);
    if (!strcmp(state, "unavailable")) {
        timeline_set_state(t, TIMELINE_UNAVAILABLE, "cuptiPmSamplingEnable failed: "
                           "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
        return 0;
    }
    if (!strcmp(state, "disabled")) {
        timeline_set_state(t, TIMELINE_DISABLED, "--no-timeline");
        return 0;
    }
    if (strcmp(state, "on")) return -1;
    uint64_t last = 0;
    const gpu_activity *k[2] = { NULL, NULL };
    for (size_t i = 0; i < p->n_acts; i++) {
        if (p->acts[i].end_ns > last) last = p->acts[i].end_ns;
        if (p->acts[i].kind == ACT_KERNEL && p->acts[i].step == 1) {
            if (!k[0]) k[0] = &p->acts[i];
            else if (!k[1]) k[1] = &p->acts[i];
        }
    }
    if (!k[0] || !k[1]) return -1;
    gpu_activity g = *k[0], s = *k[1];
    p->acts = realloc(p->acts, (p->n_acts + 2) * sizeof *p->acts);
    if (!p->acts) return -1;
    const uint64_t t0 = last + 1000000;
    g.step = s.step = PROF_STEP_TIMELINE;
    g.start_ns = t0;
    g.end_ns = t0 + 50000;
    s.start_ns = g.end_ns + 10000;
    s.end_ns = s.start_ns + 30000;
    g.correlation += 1000;
    s.correlation += 1000;
    p->acts[p->n_acts++] = g;
    p->acts[p->n_acts++] = s;

    timeline_set_state(t, TIMELINE_ON, NULL);
    t->interval_ns = 500;
    const uint64_t from = t0 - 5000, to = s.end_ns + 5000;
    t->s = calloc((to - from) / 500 + 1, sizeof *t->s);
    if (!t->s) return -1;
    for (uint64_t at = from; at + 500 <= to; at += 500) {
        tl_sample *x = &t->s[t->n++];
        x->start_ns = at + 10000; /* the sample clock runs 10 us ahead */
        x->end_ns = at + 500 + 10000;
        const int in_g = at >= g.start_ns && at + 500 <= g.end_ns;
        const int in_s = at >= s.start_ns && at + 500 <= s.end_ns;
        for (int j = 0; j < TL_N; j++) x->v[j] = 0.0;
        x->v[TL_TENSOR - TL_FIRST] = in_g ? 50.0 : 0.0;
        x->v[TL_DRAM - TL_FIRST] = in_g ? 10.0 : in_s ? 80.0 : 0.0;
        x->v[TL_WARPS - TL_FIRST] = in_g ? 40.0 : in_s ? 90.0 : 0.0;
    }
    timeline_align(t, p);
    return 0;
}

/* timeline-table on|unavailable|disabled: the kernel details with the timeline lines. */
int unit_timeline_table(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "timeline-table: on|unavailable|disabled\n"); return 2; }
    profile p;
    struct cudaDeviceProp prop;
    report_info info;
    timeline t;
    if (timeline_profile(&p, &info, &prop, &t, argv[1])) return 2;
    info.timeline = &t;
    table_print_kernel_details(stdout, &p, &info);
    if (t.state == TIMELINE_ON) {
        const gpu_activity *k = NULL;
        for (size_t i = 0; i < p.n_acts && !k; i++)
            if (p.acts[i].step == PROF_STEP_TIMELINE) k = &p.acts[i];
        double m;
        const size_t n = timeline_mean(&t, k, TL_TENSOR - TL_FIRST, &m);
        printf("offset measured=%lld applied=%lld kept=%zu dropped=%zu gemm_samples=%zu "
               "gemm_tensor=%.1f\n", (long long)t.measured_offset_ns,
               (long long)t.applied_offset_ns, t.n, t.dropped, n, m);
    }
    timeline_free(&t);
    prof_free(&p);
    return 0;
}

/* timeline-trace PATH on|unavailable|disabled: its trace. */
int unit_timeline_trace(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "timeline-trace: PATH on|unavailable|disabled\n"); return 2; }
    profile p;
    struct cudaDeviceProp prop;
    report_info info;
    timeline t;
    if (timeline_profile(&p, &info, &prop, &t, argv[2])) return 2;
    info.timeline = &t;
    trace_write(argv[1], &p, &info);
    timeline_free(&t);
    prof_free(&p);
    return 0;
}

/* metric-rows: the metric table's shape (how many rows per pass; every percentage and ratio
 * row averaged over launches, every byte and count row summed). */
int unit_metric_rows(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int range = 0, stall = 0, pm = 0, wrong = 0;
    for (int m = 0; m < CTR_N; m++) {
        range += METRICS[m].pass == MP_RANGE;
        stall += METRICS[m].pass == MP_STALL;
        pm += METRICS[m].pass == MP_PM;
        const int mean = METRICS[m].unit == MU_PCT || METRICS[m].unit == MU_RATIO;
        wrong += mean != (METRICS[m].agg == MA_MEAN);
    }
    printf("rows=%d range=%d stall=%d pm=%d wrong_aggregation=%d\n", CTR_N, range, stall, pm, wrong);
    return 0;
}
