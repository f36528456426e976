/* run.c: the harness's main(): one stage, checked, profiled, timed, reported.
 *
 *  1. flags (cli.c), device and memory checks: bad input -> one line on stderr, exit 2;
 *  2. Q, K, V from the seeded generator, copied to the device; the stage's set-up (profiled as
 *     the set-up phase, so a plan build shows in the trace);
 *  3. O poisoned with NaN, one forward, checked against the float64 reference (reference.c:
 *     no NaN, rel_l2 within the stage's bound, every element within its bf16 bound) and hashed
 *     (o_hash: FNV-1a 64 of all of O); a failure prints the `check:` line on stderr and the
 *     summary line with check=FAIL, and exits 1;
 *  4. warm-up calls, then torch.profiler's schedule: wait 1, warm-up 1, active --steps; each
 *     forward is one step inside an `attn_fwd` range (profiler.c);
 *  5. the timeline pass (pm_sampling.c): one more forward under CUPTI PM sampling, recorded as
 *     the profile's timeline step (trace only), its samples aligned after prof_finish
 *     (skipped by --no-timeline);
 *  6. gpu_us: CUDA events around 20 back-to-back forwards (the queue kept full), median of
 *     10 batches (3 when a batch is slow), outside the profiler; cpu_us: median host time of one
 *     forward call;
 *  7. the counter pass (counters.c): one more forward under CUPTI's Range Profiler, per-kernel
 *     DRAM bytes, achieved occupancy, tensor pipe, warp stalls (skipped by --no-counters);
 *  8. the regions pass (--regions N, regions_pass.c): the stage's regions build, timed against
 *     the plain kernel, then one recorded forward checked as the plain one; its summary and
 *     trace tracks;
 *  9. a `check:` line, the table (table.c), the trace (trace.c), the summary line (last line of
 *     stdout); exit 0, or 1 if stdout could not be written.
 * When another CUPTI client owns CUPTI (run under ncu or nsys) the profiler steps aside: the
 * check, the forwards and the timing run, the table, trace and counters are "off" (trace=none).
 * The --trace path is checked before the device (trace_check_path), under ATTN_SANITIZE=1 too.
 * Under ATTN_SANITIZE=1 (make sanitize) there is no profiler, no timing (gpu_us=0.0 ...) and no
 * trace (trace=none).
 *
 * --cases FILE (the test suites' mode): many runs in one process, one after another, so that they
 * share one CUDA context (creating one costs a fraction of a second, and the driver creates them
 * one at a time across processes). Each line of FILE is "OUT<TAB>FLAG<TAB>FLAG...": one run's
 * flags, tab-separated (a flag or value may hold spaces, not tabs); an empty line is skipped. The
 * run's stdout and stderr go to OUT.out (as `2>&1` into a file would write them), then its exit
 * status to OUT.status (written last, through a rename: a reader that sees it sees the whole
 * output). A run must not profile beyond the trace: --no-counters and --no-timeline, no
 * --regions (CUPTI's Range Profiler and PM sampling are device-wide and set up per pass), else
 * it exits 2 with one line. A run that exits before it allocates device memory (bad flags, a
 * shape the device refuses or that does not fit: exit 2) lets the next run go on; one that exits
 * later (a CUDA error: exit 1) ends the process after writing its status, and the caller starts
 * a new process for the runs that have no OUT.status yet. A trailing CR of a line is dropped; a
 * NUL byte in a line is refused. The process's own errors (FILE unreadable, a line without OUT,
 * a status that cannot be written) print one line on its stderr and exit 2. Exit status: 0 when
 * every line ran, whatever the runs' own statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "cli.h"
#include "counters.h"
#include "harness.h"
#include "profiler.h"
#include "reference.h"
#include "regions_pass.h"
#include "report.h"
#include "table.h"
#include "tensor.h"
#include "timeline.h"
#include "trace.h"

enum { TIMING_CALLS = 20, TIMING_BATCHES = 10 };

/* The stage's regions build (common/regions.cuh, ATTN_REGIONS_REGISTER), linked only into the
 * stages that have one: weak, so its address is NULL in the others. */
extern const attn_regions_build attn_regions_build_def __attribute__((weak));

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n)
{
    qsort(x, n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Dense bf16 tensor-core peak in TFLOP/s: NVIDIA's datasheet numbers (H100/H200 989, A100 312), else
 * SMs x clock x dense bf16 FLOP per clock per SM for the architecture (0 if unknown). */
static double bf16_peak_tflops(const struct cudaDeviceProp *prop, int device)
{
    if (strstr(prop->name, "H100") || strstr(prop->name, "H200")) return 989.0;
    if (strstr(prop->name, "A100")) return 312.0;
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) != cudaSuccess) return 0.0;
    double per_sm = prop->major == 9 ? 4096 : prop->major == 8 && prop->minor == 0 ? 2048
                  : prop->major >= 8 ? 1024 : 0;
    return prop->multiProcessorCount * (khz * 1e3) * per_sm * 1e-12;
}

/* The GPU activities (kernels + memcpys + memsets, as the blog counts) and the memcpys of each
 * active step: "6" when every step agrees, else "min-max" such as "6-7" (fixed length, whatever
 * the number of steps). len >= 24. */
static void count_per_step(const profile *p, int steps, char *kernels, char *memcpys, size_t len)
{
    int kmin = 0, kmax = 0, mmin = 0, mmax = 0;
    for (int s = 1; s <= steps; s++) {
        int k, m, ms;
        prof_count_step(p, s, &k, &m, &ms);
        k += m + ms;
        if (s == 1 || k < kmin) kmin = k;
        if (s == 1 || k > kmax) kmax = k;
        if (s == 1 || m < mmin) mmin = m;
        if (s == 1 || m > mmax) mmax = m;
    }
    if (kmin == kmax) snprintf(kernels, len, "%d", kmin);
    else snprintf(kernels, len, "%d-%d", kmin, kmax);
    if (mmin == mmax) snprintf(memcpys, len, "%d", mmin);
    else snprintf(memcpys, len, "%d-%d", mmin, mmax);
}

static void forward_once(void *arg)
{
    attn_problem *p = arg;
    ATTN_STAGE_SYMBOL.forward(p);
}

/* Poisoned run: the output rows holding a NaN must be exactly row `row` of head (0, 0), all of
 * it. Returns 1 when so. */
static int poison_rows_ok(const attn_shape *s, const bf16_bits *o, int row)
{
    const size_t rows = (size_t)s->batch * s->heads * s->seq;
    for (size_t r = 0; r < rows; r++) {
        int nan_count = 0;
        for (int d = 0; d < s->head_dim; d++)
            nan_count += isnan(bf16_to_float(o[r * s->head_dim + d]));
        int expect = r == (size_t)row ? s->head_dim : 0;
        if (nan_count != expect) return 0;
    }
    return 1;
}

/* "13.0" of a CUDA version number such as 13000 (cudaDriverGetVersion, cudaRuntimeGetVersion). */
static void cuda_version_text(int v, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d", v / 1000, v % 1000 / 10);
}

/* 0 if the CUDA runtime sees a device; else 1 and one line in why (starting "no CUDA device: ")
 * saying which of these it is: no driver at all (cudart could not load libcuda.so.1: it reports
 * driver version 0), the CUDA toolkit's stub libcuda.so.1 in place of a driver, a driver older
 * than this build's runtime, a driver that finds no GPU (naming CUDA_VISIBLE_DEVICES when set), or
 * another CUDA error, with both versions. cudaDriverGetVersion, cudaRuntimeGetVersion and
 * cudaGetDeviceCount create no context, so the profiler can still attach afterwards. */
static int no_usable_device(char *why, size_t len)
{
    int driver = 0, runtime = 0, count = 0;
    char drv[32], rt[32];
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count > 0) return 0;
    cuda_version_text(driver, drv, sizeof drv);
    cuda_version_text(runtime, rt, sizeof rt);
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (e == cudaErrorStubLibrary)
        snprintf(why, len, "no CUDA device: no NVIDIA driver found: the libcuda.so.1 loaded is the "
                 "CUDA toolkit's stub (for linking only; take lib64/stubs off LD_LIBRARY_PATH): "
                 "running a stage needs an NVIDIA GPU and its driver");
    else if (driver == 0)
        snprintf(why, len, "no CUDA device: no NVIDIA driver found (libcuda.so.1 not loadable): "
                 "running a stage needs an NVIDIA GPU and its driver");
    else if (e == cudaErrorInsufficientDriver)
        snprintf(why, len, "no CUDA device: the NVIDIA driver is too old for this build: it "
                 "supports CUDA %s, the stages use the CUDA %s runtime; update the driver, or "
                 "build with a CUDA toolkit (CUDA_HOME) it supports", drv, rt);
    else if (e == cudaErrorNoDevice || e == cudaSuccess)
        snprintf(why, len, "no CUDA device: the NVIDIA driver (CUDA %s) is loaded but finds no "
                 "GPU%s%s%s", drv, visible ? " (CUDA_VISIBLE_DEVICES='" : "",
                 visible ? visible : "", visible ? "' is set)" : "");
    else
        snprintf(why, len, "no CUDA device: %s (%s; driver CUDA %s, runtime CUDA %s)",
                 cudaGetErrorString(e), cudaGetErrorName(e), drv, rt);
    return 1;
}

/* What a run made: the stage's state, the four tensors on the device and on the host, the rows
 * checked. */
static void free_run(const attn_stage *stage, attn_problem *p, size_t *rows, bf16_bits *hq,
                     bf16_bits *hk, bf16_bits *hv, bf16_bits *ho)
{
    if (stage->teardown) stage->teardown(p);
    dev_free((void *)p->q);
    dev_free((void *)p->k);
    dev_free((void *)p->v);
    dev_free(p->o);
    free(rows);
    free(hq); free(hk); free(hv); free(ho);
}

/* --cases: the run in progress (see the top of this file). */
static struct {
    const char *out;     /* its OUT prefix; NULL outside --cases */
    int resumable;       /* it holds no device state yet: an early exit may go on to the next run */
    jmp_buf resume;
    int keep_err;        /* the process's own stderr while fd 2 is the run's file */
} cases = { .keep_err = -1 };

/* The device state of a run begins (its first allocation): from here an exit ends the process. */
static void case_holds_device(void)
{
    cases.resumable = 0;
}

/* One run: argv as a process's own (argv[0] the program). Returns its exit status; the exits of
 * bad input and failed calls (attn_exit) leave from inside. */
static int run_case(int argc, char **argv)
{
    const attn_stage *stage = &ATTN_STAGE_SYMBOL;
    run_options opt;
    cli_parse(argc, argv, stage, &opt);
    const attn_shape *s = &opt.shape;
    char why[512] = {0};
    const attn_regions_build *regions_build = &attn_regions_build_def;
    if (opt.regions && !regions_build)
        die_usage("--regions: %s has no regions build (the stages with region markers: "
                  "04_efficient, 05_flash, 07_hopper)", stage->name);

    /* What the stage refuses whatever the device (a head_dim, a length), before any GPU work. */
    if (stage->supports && stage->supports(s, NULL, why, sizeof why) != 0)
        die_usage("%s", why[0] ? why : "this shape is not supported by this stage");

    /* The trace path, before any GPU work: a bad one fails now, with nothing written. Under
     * ATTN_SANITIZE=1 it is checked the same way (a bad path reads the same), but there is no
     * profile, hence no trace. */
    const int no_trace = trace_check_path(opt.trace) == 1;
    if (opt.sanitize || no_trace) strcpy(opt.trace, "none");
    if (opt.validate) { /* --validate: the input is good; nothing else happens */
        cli_check_stdout();
        return 0;
    }
    if (cases.out && (!opt.no_counters || !opt.no_timeline || opt.regions))
        die_usage("--cases: each run needs --no-counters and --no-timeline and no --regions (the "
                  "counter pass, the timeline pass and the regions pass each run alone: start "
                  "./%s/run for such a run)", stage->name);

    /* The device: none usable -> one line saying why, exit 2. */
    if (no_usable_device(why, sizeof why)) die_usage("%s", why);
    if (opt.sanitize)
        fprintf(stderr, "note: ATTN_SANITIZE=1: profiler, timing and trace are off (gpu_us, cpu_us, "
                "tflops and pct_peak read 0; trace=none)\n");
    prof_init();
    const int device = 0;
    struct cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    CUDA_CHECK(cudaSetDevice(device));
    if (stage->supports && stage->supports(s, &prop, why, sizeof why) != 0)
        die_usage("%s", why[0] ? why : "this shape is not supported by this stage");
    if (opt.regions > prop.multiProcessorCount)
        die_usage("--regions %d: %s has %d SMs (expected 1 to %d)", opt.regions, prop.name,
                  prop.multiProcessorCount, prop.multiProcessorCount);

    /* Memory: Q, K, V, O plus the stage's extra bytes must fit. In double: the largest shapes the
     * flags allow hold more than 2^64 bytes. */
    const double qkvo_d = 4.0 * s->batch * s->heads * (double)s->seq * s->head_dim * sizeof(bf16_bits);
    const size_t extra = stage->extra_bytes ? stage->extra_bytes(s) : 0;
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    const double need = qkvo_d + (double)extra, gib = 1024.0 * 1024.0 * 1024.0;
    if (need > (double)free_b)
        die_usage("shape %dx%dx%dx%d needs %.0f bytes of device memory (%.2f GiB; Q, K, V, O: "
                  "%.2f GiB, stage: %.2f GiB), only %.2f GiB free", s->batch, s->heads, s->seq,
                  s->head_dim, need, need / gib, qkvo_d / gib, (double)extra / gib,
                  (double)free_b / gib);
    /* From here the sizes fit in device memory, hence in size_t. */
    const size_t elems = (size_t)s->batch * s->heads * s->seq * s->head_dim;
    const size_t bytes = elems * sizeof(bf16_bits);

    bf16_bits *hq = malloc(bytes), *hk = malloc(bytes), *hv = malloc(bytes), *ho = malloc(bytes);
    if (!hq || !hk || !hv || !ho)
        die_usage("shape %dx%dx%dx%d: %zu bytes of host memory not available", s->batch,
                  s->heads, s->seq, s->head_dim, 4 * bytes);
    tensor_fill_normal(hq, elems, opt.seed, 1);
    tensor_fill_normal(hk, elems, opt.seed, 2);
    tensor_fill_normal(hv, elems, opt.seed, 3);
    if (opt.poison_q >= 0) hq[(size_t)opt.poison_q * s->head_dim] = BF16_POISON;

    attn_problem p;
    memset(&p, 0, sizeof p);
    p.shape = *s;
    p.scale = (float)(1.0 / sqrt((double)s->head_dim));
    p.prop = &prop;
    p.stream = 0; /* the legacy default stream, as PyTorch's eager launches */
    p.extra_bytes = extra;
    p.quiet = opt.quiet;
    case_holds_device();
    p.q = dev_alloc(bytes, "Q");
    p.k = dev_alloc(bytes, "K");
    p.v = dev_alloc(bytes, "V");
    p.o = dev_alloc(bytes, "O");
    CUDA_CHECK(cudaMemcpy((void *)p.q, hq, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy((void *)p.k, hk, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy((void *)p.v, hv, bytes, cudaMemcpyHostToDevice));

    prof_step_begin(0, 1); /* set-up phase: kept for the trace (a plan build shows there) */
    prof_range_push("setup"); /* a cpu_op around the set-up's launches, as Kineto's tools expect */
    p.state = stage->setup ? stage->setup(&p) : NULL;
    prof_range_pop();
    prof_step_end();

    /* The checked forward, on an output full of NaN. */
    prof_step_begin(-1, 0);
    CUDA_CHECK(cudaMemsetAsync(p.o, 0xFF, bytes, p.stream)); /* 0xFFFF: a bf16 NaN */
    stage->forward(&p);
    prof_step_end();
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(ho, p.o, bytes, cudaMemcpyDeviceToHost));

    const size_t total_rows = (size_t)s->batch * s->heads * s->seq;
    size_t want = opt.check_rows < total_rows ? opt.check_rows : total_rows;
    size_t *rows = malloc(sizeof(size_t) * (want + 6));
    if (!rows)
        die_usage("--check-rows: %zu rows (%zu bytes of row indices) do not fit in host memory",
                  want, sizeof(size_t) * (want + 6));
    size_t n_rows = ref_pick_rows(s, want, opt.seed, rows);
    if (n_rows != want) /* only on host out-of-memory (its sampling set) */
        die_usage("--check-rows: %zu rows: the sampling set (%zu bytes) does not fit in host memory",
                  want, 4 * sizeof(size_t) * want);
    if (opt.poison_q >= 0) { /* the poisoned row is checked separately, by poison_rows_ok */
        size_t u = 0;
        for (size_t r = 0; r < n_rows; r++)
            if (rows[r] != (size_t)opt.poison_q) rows[u++] = rows[r];
        n_rows = u;
    }
    check_result chk = ref_check(s, p.scale, hq, hk, hv, ho, rows, n_rows);
    const double tol = stage->tolerance > 0 ? stage->tolerance : 1e-2;
    /* Pass: no NaN, rel_l2 within the stage's bound, every element within its bf16 bound
     * (reference.h). */
    int pass = ref_check_pass(&chk, tol);
    const unsigned long long o_hash = (unsigned long long)ref_fnv1a64(ho, bytes); /* all of O */
    char check_line[1024];
    ref_check_line(check_line, sizeof check_line, &chk, total_rows, tol);
    if (opt.poison_q >= 0 && !poison_rows_ok(s, ho, opt.poison_q)) {
        fprintf(stderr, "check: with --poison-q %d, the NaN rows of O are not exactly row %d of "
                "head (0, 0)\n", opt.poison_q, opt.poison_q);
        pass = 0;
    }
    if (!pass) {
        fprintf(stderr, "%s\n", check_line);
        printf("result stage=%s shape=%dx%dx%dx%d rel_l2=%.3e max_abs=%.3e err_ratio=%.3f "
               "o_hash=%016llx check=FAIL trace=none\n", stage->name, s->batch, s->heads, s->seq,
               s->head_dim, chk.rel_l2, chk.max_abs, chk.ratio, o_hash);
        profile unused;
        prof_finish(&unused); /* the next run of --cases starts a profile of its own */
        prof_free(&unused);
        free_run(stage, &p, rows, hq, hk, hv, ho);
        return 1;
    }

    /* Warm-up, then the profiler's schedule: wait 1, warm-up 1 (both dropped), active steps. */
    for (int i = 0; i < opt.warmup + 2; i++) {
        prof_step_begin(-1, 0);
        stage->forward(&p);
        prof_step_end();
    }
    for (int step = 1; step <= opt.steps; step++) {
        prof_step_begin(step, 1);
        stage->forward(&p);
        prof_step_end();
    }
    /* The timeline pass: after the traced steps, before the timing; its own recorded step. The
     * forward before it, unrecorded, times one forward on the host (sizes the sample buffer). */
    timeline tl;
    const char *tl_owner = prof_cupti_owner();
    if (tl_owner) timeline_set_state(&tl, TIMELINE_OFF, tl_owner);
    else if (opt.sanitize) timeline_set_state(&tl, TIMELINE_DISABLED, "ATTN_SANITIZE=1");
    else if (opt.no_timeline) timeline_set_state(&tl, TIMELINE_DISABLED, "--no-timeline");
    else {
        prof_step_begin(-1, 0);
        CUDA_CHECK(cudaDeviceSynchronize());
        const double t0 = now_us();
        stage->forward(&p);
        CUDA_CHECK(cudaDeviceSynchronize());
        const double forward_us = now_us() - t0;
        prof_step_end();
        prof_step_begin(PROF_STEP_TIMELINE, 1);
        timeline_run(&tl, device, opt.timeline_interval_ns, forward_us, forward_once, &p);
        prof_step_end();
    }
    profile prof;
    prof_finish(&prof); /* synchronizes; from here on nothing is recorded */
    timeline_align(&tl, &prof);
    /* Under compute-sanitizer (ATTN_SANITIZE=1, make sanitize) forwards are slow and times
     * meaningless: no timing, and the profile is empty. */
    const int timing = !opt.sanitize;

    /* gpu_us and cpu_us, unprofiled. */
    cudaEvent_t ev0, ev1;
    CUDA_CHECK(cudaEventCreate(&ev0));
    CUDA_CHECK(cudaEventCreate(&ev1));
    double gpu[TIMING_BATCHES], cpu[TIMING_BATCHES * TIMING_CALLS];
    const double timing_start = now_us();
    int batches = 0;
    /* 10 batches, or at least 3 when they are slow (a plan rebuilt per call): at most ~2 s. */
    for (int b = 0; timing && b < TIMING_BATCHES && (b < 3 || now_us() - timing_start < 2e6);
         b++, batches++) {
        CUDA_CHECK(cudaEventRecord(ev0, p.stream));
        for (int c = 0; c < TIMING_CALLS; c++) {
            double t0 = now_us();
            stage->forward(&p);
            cpu[b * TIMING_CALLS + c] = now_us() - t0;
        }
        CUDA_CHECK(cudaEventRecord(ev1, p.stream));
        CUDA_CHECK(cudaEventSynchronize(ev1));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
        gpu[b] = ms * 1e3 / TIMING_CALLS;
    }
    CUDA_CHECK(cudaEventDestroy(ev0));
    CUDA_CHECK(cudaEventDestroy(ev1));
    const double gpu_us = batches ? median(gpu, batches) : 0.0;
    const double cpu_us = batches ? median(cpu, batches * TIMING_CALLS) : 0.0;
    /* FlashAttention's convention: 4·B·H·S²·D, halved for causal. */
    const double flops = 2.0 * s->batch * s->heads * (double)s->seq * s->seq * s->head_dim;
    const double tflops = gpu_us > 0 ? flops / (gpu_us * 1e-6) * 1e-12 : 0.0;
    const double peak = bf16_peak_tflops(&prop, device);

    /* The counter pass: after the profiler has finished and after the timing, so neither the
     * table, the trace nor gpu_us sees it. */
    counter_pass ctr;
    const char *owner = prof_cupti_owner();
    if (owner) counters_set_state(&ctr, COUNTERS_OFF, owner);
    else if (opt.sanitize) counters_set_state(&ctr, COUNTERS_DISABLED, "ATTN_SANITIZE=1");
    else if (opt.no_counters) counters_set_state(&ctr, COUNTERS_DISABLED, "--no-counters");
    else {
        prof_step_begin(-1, 0); /* an unrecorded step: its NVTX ranges only */
        counters_run(&ctr, device, forward_once, &p);
        prof_step_end();
    }

    /* The regions pass: after everything that is timed, traced or counted. */
    regions_pass_result rgn;
    memset(&rgn, 0, sizeof rgn);
    if (opt.regions) {
        const regions_check_input in = { hq, hk, hv, rows, n_rows, tol };
        prof_step_begin(-1, 0); /* an unrecorded step: its NVTX ranges only */
        regions_pass_run(regions_build, stage, &p, opt.regions, &in, &rgn);
        prof_step_end();
        rgn.decoded.kernel = "regions pass";
        if (!rgn.pass) {
            fprintf(stderr, "regions build: %s\n", rgn.check_line);
            printf("result stage=%s shape=%dx%dx%dx%d rel_l2=%.3e max_abs=%.3e err_ratio=%.3f "
                   "check=FAIL trace=none\n", stage->name, s->batch, s->heads, s->seq,
                   s->head_dim, rgn.check.rel_l2, rgn.check.max_abs, rgn.check.ratio);
            prof_free(&prof);
            counters_free(&ctr);
            timeline_free(&tl);
            regions_free(&rgn.decoded);
            free_run(stage, &p, rows, hq, hk, hv, ho);
            return 1;
        }
    }

    report_info info;
    memset(&info, 0, sizeof info);
    if (opt.regions) info.regions = &rgn.decoded;
    info.stage = stage->name;
    info.idea = stage->idea;
    info.shape = *s;
    info.prop = &prop;
    info.device = device;
    info.counters = &ctr;
    info.timeline = &tl;
    if (!opt.quiet) {
        printf("%s", check_line);
        if (opt.poison_q >= 0) printf("; poisoned row %d is all NaN, as it must be", opt.poison_q);
        printf("\n");
        if (owner) {
            table_print_header(stdout, &prof, &info);
            printf("Profiler: off (%s owns CUPTI: the table, trace and counters are off; our "
                   "NVTX ranges attn_fwd and the host ops are in that tool's timeline)\n", owner);
        } else {
            table_print(stdout, &prof, &info);
        }
        if (opt.regions) {
            const regions_result *r = &rgn.decoded;
            regions_print_summary(stdout, r, stage->name);
            printf("regions stage=%s sms=%d streams=%zu events=%zu missing_end=%zu full=%d "
                   "kernel_us=%.3f plain_us=%.1f regions_us=%.1f overhead_pct=%.1f rel_l2=%.3e "
                   "check=PASS\n", stage->name, opt.regions, r->n_streams, r->n_events,
                   r->missing_end, r->full,
                   r->t_last > r->t_first ? (double)(r->t_last - r->t_first) * 1e-3 : 0.0,
                   rgn.plain_us, rgn.regions_us,
                   rgn.plain_us > 0 ? 100.0 * (rgn.regions_us - rgn.plain_us) / rgn.plain_us : 0.0,
                   rgn.check.rel_l2);
        }
    }
    const int want_trace = !owner && strcmp(opt.trace, "none") != 0;
    if (want_trace) trace_write(opt.trace, &prof, &info);

    char kps[32], mps[32], rd[32], wr[32];
    if (owner) {
        snprintf(kps, sizeof kps, "off");
        snprintf(mps, sizeof mps, "off");
    } else {
        count_per_step(&prof, opt.steps, kps, mps, sizeof kps);
    }
    double read_b, write_b;
    counters_step_bytes(&prof, &ctr, 1, &read_b, &write_b);
    counters_format_summary(&ctr, read_b, rd, sizeof rd);
    counters_format_summary(&ctr, write_b, wr, sizeof wr);
    printf("result stage=%s shape=%dx%dx%dx%d kernels_per_step=%s memcpy_per_step=%s gpu_us=%.1f "
           "cpu_us=%.1f tflops=%.1f pct_peak=%.1f extra_bytes=%zu dram_read=%s dram_write=%s "
           "rel_l2=%.3e max_abs=%.3e err_ratio=%.3f o_hash=%016llx check=PASS trace=%s\n",
           stage->name, s->batch, s->heads, s->seq, s->head_dim, kps, mps, gpu_us, cpu_us,
           tflops, peak > 0 ? 100.0 * tflops / peak : 0.0, p.extra_bytes, rd, wr, chk.rel_l2,
           chk.max_abs, chk.ratio, o_hash, want_trace ? opt.trace : "none");

    prof_free(&prof);
    counters_free(&ctr);
    timeline_free(&tl);
    regions_free(&rgn.decoded);
    free_run(stage, &p, rows, hq, hk, hv, ho);
    cli_check_stdout(); /* exit 1 if the table or the summary line could not be written */
    return 0;
}

/* ---- --cases FILE ---------------------------------------------------------------------------- */

/* OUT.status: the status, written to OUT.status.tmp and renamed (a reader sees all of it or none). */
static void write_status(const char *out, int status)
{
    char tmp[4200], final[4200];
    const char *failed = NULL;
    int e = ENAMETOOLONG;
    if (snprintf(tmp, sizeof tmp, "%s.status.tmp", out) >= (int)sizeof tmp ||
        snprintf(final, sizeof final, "%s.status", out) >= (int)sizeof final) {
        failed = out;
    } else {
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", status) < 0) {
            failed = tmp;
            e = errno;
            if (f) fclose(f);
        } else if (fclose(f) != 0) {
            failed = tmp;
            e = errno;
        } else if (rename(tmp, final) != 0) {
            failed = final;
            e = errno;
        }
        if (failed) unlink(tmp);
    }
    if (failed) {
        /* on the process's own stderr, not the run's file */
        fflush(stderr);
        if (cases.keep_err >= 0) dup2(cases.keep_err, 2);
        fprintf(stderr, "--cases: cannot write the status of %s: %s: %s\n", out, failed, strerror(e));
        exit(2);
    }
}

/* attn_exit's hook under --cases: the run's status first; then the next run if this one held no
 * device state, else the process ends (exit(status) follows in attn_exit). */
static void case_exit_hook(int status)
{
    if (!cases.out) return; /* the process's own error (the list itself): it ends here */
    fflush(stdout);
    fflush(stderr);
    write_status(cases.out, status);
    if (cases.resumable) longjmp(cases.resume, 1);
}

/* One run under the hook: its exit status, or -1 when it left through attn_exit and the hook
 * already wrote it. */
static int run_resumable(int argc, char **argv)
{
    cases.resumable = 1;
    if (setjmp(cases.resume)) return -1;
    return run_case(argc, argv);
}

/* fd 1 and 2 onto path (created or truncated), after flushing; stdout's error flag cleared (a
 * write that failed for the last run is not this run's); returns 0, or -1 with errno. */
static int redirect_output(const char *path)
{
    fflush(stdout);
    fflush(stderr);
    clearerr(stdout);
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    const int ok = dup2(fd, 1) >= 0 && dup2(fd, 2) >= 0;
    close(fd);
    return ok ? 0 : -1;
}

/* Runs every line of path; see the top of this file. */
static int run_cases(const char *prog, const char *path)
{
    /* fds 0-2 open (on /dev/null where closed), so that the list and the saved fds are none of
     * the three that each run's redirection replaces */
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
            die_usage("--cases: cannot open /dev/null: %s", strerror(errno));
    FILE *f = fopen(path, "r");
    if (!f) die_usage("--cases: cannot read '%s': %s", path, strerror(errno));
    const int keep_out = dup(1), keep_err = dup(2);
    if (keep_out < 0 || keep_err < 0) die_usage("--cases: dup: %s", strerror(errno));
    cases.keep_err = keep_err;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int line_no = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        line_no++;
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        if (len > 0 && line[len - 1] == '\r') line[--len] = '\0';
        if (len == 0) continue;
        if (strlen(line) != (size_t)len)
            die_usage("--cases: %s line %d holds a NUL byte", path, line_no);
        /* OUT, then the flags: split in place at each tab (an empty field stays an empty
         * argument, as "" on a command line) */
        int words = 1;
        for (ssize_t i = 0; i < len; i++) words += line[i] == '\t';
        char **argv = calloc((size_t)words + 1, sizeof *argv);
        if (!argv) die_usage("--cases: out of host memory");
        const char *out = line;
        argv[0] = (char *)prog;
        int n = 1;
        for (char *tab = strchr(line, '\t'); tab; tab = strchr(tab + 1, '\t')) {
            *tab = '\0';
            argv[n++] = tab + 1;
        }
        argv[n] = NULL;
        if (!out[0]) {
            free(argv);
            die_usage("--cases: %s line %d has no OUT before its first tab (OUT<TAB>FLAGS... "
                      "expected)", path, line_no);
        }
        char out_path[4200];
        if (snprintf(out_path, sizeof out_path, "%s.out", out) >= (int)sizeof out_path)
            die_usage("--cases: %s line %d: OUT is longer than %zu bytes", path, line_no,
                      sizeof out_path - 16);
        if (redirect_output(out_path) != 0) {
            const int e = errno;
            dup2(keep_err, 2);
            die_usage("--cases: cannot write '%s.out' (line %d): %s", out, line_no, strerror(e));
        }
        cases.out = out;
        const int status = run_resumable(n, argv);
        fflush(stdout);
        fflush(stderr);
        if (status >= 0) write_status(out, status);
        cases.out = NULL;
        dup2(keep_out, 1);
        dup2(keep_err, 2);
        free(argv);
    }
    const int read_error = ferror(f); /* getline's EOF and a read error look alike: a directory */
    const int read_errno = errno;
    free(line);
    fclose(f);
    if (read_error) die_usage("--cases: cannot read '%s': %s", path, strerror(read_errno));
    close(keep_out);
    close(keep_err);
    cases.keep_err = -1;
    return 0;
}

/* "--cases FILE" or "--cases=FILE" as the only flag: FILE; NULL when argv has no --cases, or has
 * --help (or -h) anywhere: the usage, exit 0, as with every other flag (cli_parse). */
static const char *cases_file(int argc, char **argv)
{
    int at = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return NULL;
        if (!strcmp(argv[i], "--cases") || !strncmp(argv[i], "--cases=", 8)) at = i;
    }
    if (!at) return NULL;
    const int inline_val = argv[at][7] == '=';
    const char *file = inline_val ? argv[at] + 8 : at + 1 < argc ? argv[at + 1] : NULL;
    if (!file || !file[0]) die_usage("--cases needs a file (one run a line: OUT<TAB>FLAGS...)");
    if (argc - 1 != (inline_val ? 1 : 2) || at != 1)
        die_usage("--cases FILE takes no other flag (each line of FILE holds one run's flags)");
    return file;
}

int main(int argc, char **argv)
{
    const char *file = cases_file(argc, argv);
    if (!file) return run_case(argc, argv);
    attn_set_exit_hook(case_exit_hook);
    return run_cases(argv[0], file);
}
