/* profiler_tests.c: unit subcommands for the profiler's join, occupancy, table and trace (CPU
 * only: synthetic records go through the same code paths as CUPTI's, see profiler.h's test hooks).
 * tests/common.bats holds the expected values and how they are derived.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "occupancy.h"
#include "profiler.h"
#include "report.h"
#include "table.h"
#include "trace.h"
#include "unit.h"

void unit_h200_props(struct cudaDeviceProp *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "NVIDIA H200");
    p->totalGlobalMem = 150109880320ull;
    p->major = 9;
    p->minor = 0;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsPerMultiProcessor = 2048;
    p->maxBlocksPerMultiProcessor = 32;
    p->regsPerBlock = 65536;
    p->regsPerMultiprocessor = 65536;
    p->warpSize = 32;
    p->sharedMemPerBlock = 49152;
    p->sharedMemPerMultiprocessor = 233472;
    p->sharedMemPerBlockOptin = 232448;
    p->reservedSharedMemPerBlock = 1024;
    p->multiProcessorCount = 132;
}

/* argv[1..want] as whole integers, each within [lo[i], hi[i]]; else one line on stderr, -1. */
static int parse_ints(int argc, char **argv, int want, long long *v, const long long *lo,
                      const long long *hi)
{
    if (argc - 1 != want) {
        fprintf(stderr, "%s: expected %d arguments, got %d\n", argv[0], want, argc - 1);
        return -1;
    }
    for (int i = 0; i < want; i++) {
        char *end = NULL;
        errno = 0;
        v[i] = strtoll(argv[i + 1], &end, 10);
        if (errno || end == argv[i + 1] || *end) {
            fprintf(stderr, "%s: not an integer: %s\n", argv[0], argv[i + 1]);
            return -1;
        }
        if (v[i] < lo[i] || v[i] > hi[i]) {
            fprintf(stderr, "%s: argument %d (%lld) is out of range (%lld to %lld)\n", argv[0],
                    i + 1, v[i], lo[i], hi[i]);
            return -1;
        }
    }
    return 0;
}

/* A whole finite number, else one line on stderr and -1. */
static int parse_double(const char *cmd, const char *text, double *x)
{
    char *end = NULL;
    errno = 0;
    *x = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(*x)) {
        fprintf(stderr, "%s: not a finite number: %s\n", cmd, text);
        return -1;
    }
    return 0;
}

int unit_format_time(int argc, char **argv)
{
    char buf[64];
    double us[64];
    if (argc < 2 || argc - 1 > 64) { fprintf(stderr, "format-time: US... (1 to 64 values)\n"); return 2; }
    for (int i = 1; i < argc; i++) {
        if (parse_double(argv[0], argv[i], &us[i - 1])) return 2;
        if (us[i - 1] < 0) { fprintf(stderr, "format-time: negative time: %s\n", argv[i]); return 2; }
    }
    for (int i = 1; i < argc; i++) {
        table_format_time(us[i - 1], buf, sizeof buf);
        printf("%s\n", buf);
    }
    return 0;
}

int unit_format_share(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "format-share: PART TOTAL\n"); return 2; }
    double part, total;
    if (parse_double(argv[0], argv[1], &part) || parse_double(argv[0], argv[2], &total)) return 2;
    char buf[64];
    table_format_share(part, total, buf, sizeof buf);
    printf("%s\n", buf);
    return 0;
}

int unit_truncate(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "truncate: NAME\n"); return 2; }
    char buf[TABLE_NAME_WIDTH_MAX + 8];
    table_truncate_name(argv[1], buf, sizeof buf);
    printf("%s\n", buf);
    return 0;
}

/* REGS THREADS STATIC_SMEM DYNAMIC_SMEM OPTIN [GRID_BLOCKS]: registers 0-255 per thread, 1-1024
 * threads, shared memory 0-1 MiB each, opt-in 0 or 1, at least one block. */
static const long long OCC_LO[6] = {0, 1, 0, 0, 0, 1};
static const long long OCC_HI[6] = {255, 1024, 1 << 20, 1 << 20, 1, 1LL << 40};

int unit_occupancy(int argc, char **argv)
{
    long long v[6];
    if (parse_ints(argc, argv, 6, v, OCC_LO, OCC_HI)) return 2;
    struct cudaDeviceProp prop;
    unit_h200_props(&prop);
    occ_kernel k = { (int)v[1], (int)v[0], (int)v[2], (int)v[3], (int)v[4], v[5] };
    occ_result o;
    if (occupancy_compute(&prop, &k, &o) != 0) {
        printf("error\n");
        return 1;
    }
    printf("blocks_per_sm=%d warps_per_sm=%d occupancy=%.2f limiter=%s optin=%d est_pct=%d "
           "kineto_blocks=%d kineto_pct=%d\n", o.active_blocks, o.active_warps, o.occupancy_pct,
           o.limiter, o.optin, o.est_pct, o.kineto_active_blocks, o.kineto_pct);
    return 0;
}

int unit_occupancy_zeroed(int argc, char **argv)
{
    long long v[5];
    if (parse_ints(argc, argv, 5, v, OCC_LO, OCC_HI)) return 2;
    struct cudaDeviceProp prop;
    unit_h200_props(&prop);
    occ_kernel k = { (int)v[1], (int)v[0], (int)v[2], (int)v[3], (int)v[4], 1 };
    printf("blocks_per_sm=%d\n", occupancy_blocks_zeroed_state(&prop, &k));
    return 0;
}

/* ---- the join ------------------------------------------------------------------------------ */

static gpu_activity kernel_act(const char *name, uint64_t start, uint64_t end, uint32_t corr)
{
    gpu_activity a;
    memset(&a, 0, sizeof a);
    a.kind = ACT_KERNEL;
    a.name = name;
    a.start_ns = start;
    a.end_ns = end;
    a.correlation = corr;
    a.stream = 7;
    a.context = 1;
    a.grid[0] = a.grid[1] = a.grid[2] = 1;
    a.block[0] = 128; a.block[1] = a.block[2] = 1;
    a.registers = 32;
    return a;
}

static gpu_activity copy_act(gpu_act_kind kind, const char *name, uint64_t start, uint64_t end,
                             uint32_t corr, uint64_t bytes)
{
    gpu_activity a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.name = name;
    a.start_ns = start;
    a.end_ns = end;
    a.correlation = corr;
    a.stream = 7;
    a.context = 1;
    a.bytes = bytes;
    a.copy_kind = kind == ACT_MEMCPY ? 8 : 0;
    return a;
}

/* A launch/copy call inside step `step` and host range `range` (-1: none), as CUPTI reports it:
 * the external-correlation records first, then the API record. */
static void feed_api(int is_driver, const char *name, uint64_t start, uint64_t end, uint32_t corr,
                     int step, int range)
{
    if (step >= 0) prof_test_ext(0, (uint64_t)step + 1, corr);
    if (range >= 0) prof_test_ext(1, (uint64_t)range + 1, corr);
    prof_test_api(is_driver, name, start, end, corr, 4242);
}

int unit_join(int argc, char **argv)
{
    (void)argc; (void)argv;
    const uint64_t T = 5000000000ull;
    /* step 1: attn_fwd (range 0) > matmul (range 1); softmax (range 2) left open */
    prof_test_range("attn_fwd", 1, -1, T, T + 100000, 1);
    prof_test_range("matmul", 0, 0, T + 1000, T + 20000, 1);
    prof_test_range("softmax", 0, 0, T + 30000, 0, 1);
    /* a runtime launch inside matmul */
    feed_api(0, "cudaLaunchKernel", T + 2000, T + 7000, 11, 1, 1);
    gpu_activity k1 = kernel_act("_Z4gemmPfi", T + 40000, T + 60000, 11);
    prof_test_activity(&k1);
    /* cudart's own driver call inside a runtime copy: folded into cudaMemcpyAsync */
    feed_api(0, "cudaMemcpyAsync", T + 8000, T + 18000, 12, 1, 1);
    feed_api(1, "cuMemcpyDtoDAsync_v2", T + 9000, T + 17000, 13, 1, 1);
    gpu_activity m1 = copy_act(ACT_MEMCPY, "Memcpy DtoD (Device -> Device)", T + 61000, T + 70000, 13,
                               4096);
    prof_test_activity(&m1);
    /* a driver launch (not inside a runtime call) in softmax */
    feed_api(1, "cuLaunchKernelEx", T + 31000, T + 39000, 14, 1, 2);
    gpu_activity k2 = kernel_act("softmax_kernel", T + 71000, T + 90000, 14);
    prof_test_activity(&k2);
    /* an inactive step: API record without external ids -> both dropped */
    feed_api(0, "cudaLaunchKernel", T + 200000, T + 205000, 20, -1, -1);
    gpu_activity k3 = kernel_act("_Z4gemmPfi", T + 210000, T + 230000, 20);
    prof_test_activity(&k3);
    /* a kernel from a call the profiler does not trace -> dropped with a warning */
    gpu_activity k4 = kernel_act("untraced_kernel", T + 240000, T + 250000, 99);
    prof_test_activity(&k4);

    profile p;
    prof_test_assemble(&p, T + 120000);
    printf("active_steps=%d acts=%zu apis=%zu ranges=%zu\n", p.active_steps, p.n_acts, p.n_apis,
           p.n_ranges);
    for (size_t i = 0; i < p.n_acts; i++) {
        const gpu_activity *a = &p.acts[i];
        printf("act kind=%d step=%d range=%d corr=%u launch=%s name=%s\n", (int)a->kind, a->step,
               a->range, a->correlation, a->launch_api ? a->launch_api : "-", a->name);
    }
    for (size_t i = 0; i < p.n_apis; i++) {
        const api_call *a = &p.apis[i];
        printf("api %s driver=%d step=%d range=%d corr=%u tid=%u\n", a->name, a->is_driver,
               a->step, a->range, a->correlation, a->thread_id);
    }
    for (size_t i = 0; i < p.n_ranges; i++) {
        const host_range *r = &p.ranges[i];
        printf("range %s step=%d depth=%d parent=%d dur_ns=%llu\n", r->name, r->step, r->depth,
               r->parent, (unsigned long long)(r->end_ns - r->start_ns));
    }
    int k, m, s;
    prof_count_step(&p, 1, &k, &m, &s);
    printf("count step=1 kernels=%d memcpys=%d memsets=%d\n", k, m, s);
    prof_free(&p);
    return 0;
}

/* ---- a synthetic 3-step profile -------------------------------------------------------------
 * Step s (1..3) starts at B = T0 + s ms (times in ns from B):
 *   attn_fwd [0, 400000]
 *     matmul      [10000, 30000]  cudaLaunchKernel [12000, 17000] -> gemm kernel [40000, 90000]
 *     masked_fill [30000, 50000]  cudaMemcpyAsync  [32000, 36000] -> Memcpy DtoD [95000, 105000]
 *     softmax     [50000, 70000]  cuLaunchKernelEx [52000, 60000] -> softmax kernel [110000, 140000]
 *                                 cudaMemsetAsync  [61000, 63000] -> Memset [140000, 140875]
 * Set-up (step 0) at T0: build_plan [0, 200000] with cudaLaunchKernel [1000, 3000] -> the
 * oddly named kernel [5000, 6000]. */
static const char *ODD_KERNEL = "void f<(anon)::T, 3>(char const*, \"q\\\"x\")\\path";
static const char *SETUP_RANGE = "build_plan\t(set-up)\x01";

static void synthetic_profile_steps(profile *p, int profiler_steps)
{
    const uint64_t T0 = 1700000000123456789ull;
    uint32_t corr = 1;
    prof_test_range(SETUP_RANGE, 0, -1, T0, T0 + 200000, 0);
    feed_api(0, "cudaLaunchKernel", T0 + 1000, T0 + 3000, corr, 0, 0);
    gpu_activity k0 = kernel_act(ODD_KERNEL, T0 + 5000, T0 + 6000, corr);
    k0.grid[0] = 264;
    k0.block[0] = 256;
    k0.registers = 32;
    prof_test_activity(&k0);
    corr++;
    int idx = 1;
    for (int s = 1; s <= 3; s++) {
        const uint64_t B = T0 + (uint64_t)s * 1000000ull;
        if (profiler_steps) { /* ProfilerStep [-5 us, 405 us] around attn_fwd */
            prof_test_range("ProfilerStep*", 2, -1, B - 5000, B + 405000, s);
            idx++;
        }
        const int fwd = idx, mm = idx + 1, mf = idx + 2, sm = idx + 3;
        idx += 4;
        prof_test_range("attn_fwd", 1, profiler_steps ? fwd - 1 : -1, B, B + 400000, s);
        prof_test_range("matmul", 0, fwd, B + 10000, B + 30000, s);
        prof_test_range("masked_fill", 0, fwd, B + 30000, B + 50000, s);
        prof_test_range("softmax", 0, fwd, B + 50000, B + 70000, s);

        feed_api(0, "cudaLaunchKernel", B + 12000, B + 17000, corr, s, mm);
        gpu_activity g = kernel_act("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", B + 40000,
                                    B + 90000, corr);
        g.grid[0] = 128; g.grid[1] = 16;
        g.block[0] = 128;
        g.registers = 255;
        g.dynamic_smem = 49152;
        prof_test_activity(&g);
        corr++;

        feed_api(0, "cudaMemcpyAsync", B + 32000, B + 36000, corr, s, mf);
        gpu_activity c = copy_act(ACT_MEMCPY, "Memcpy DtoD (Device -> Device)", B + 95000,
                                  B + 105000, corr, 268435456ull);
        prof_test_activity(&c);
        corr++;

        feed_api(1, "cuLaunchKernelEx", B + 52000, B + 60000, corr, s, sm);
        gpu_activity x = kernel_act("_ZN12_GLOBAL__N_120softmax_warp_forwardIfEEvPfPKfi",
                                    B + 110000, B + 140000, corr);
        x.grid[0] = 132;
        x.block[0] = 384;
        x.registers = 168;
        x.dynamic_smem = 134144;
        x.smem_optin = 1;
        prof_test_activity(&x);
        corr++;

        feed_api(0, "cudaMemsetAsync", B + 61000, B + 63000, corr, s, sm);
        gpu_activity z = copy_act(ACT_MEMSET, "Memset (Device)", B + 140000, B + 140875, corr, 4);
        prof_test_activity(&z);
        corr++;
    }
    prof_test_assemble(p, T0 + 5000000ull);
    p->cupti_version = 130001;
    p->cuda_runtime_version = 13000;
    p->cuda_driver_version = 13000;
}

static void synthetic_profile(profile *p) { synthetic_profile_steps(p, 0); }

static void synthetic_report(report_info *info, struct cudaDeviceProp *prop)
{
    unit_h200_props(prop);
    memset(info, 0, sizeof *info);
    info->stage = "01_naive";
    info->idea = "cuBLAS GEMMs with the scores S in memory";
    info->shape.batch = 8;
    info->shape.heads = 16;
    info->shape.seq = 1024;
    info->shape.head_dim = 64;
    info->prop = prop;
}

int unit_table(int argc, char **argv)
{
    (void)argc; (void)argv;
    profile p;
    synthetic_profile(&p);
    struct cudaDeviceProp prop;
    report_info info;
    synthetic_report(&info, &prop);
    table_print(stdout, &p, &info);
    prof_free(&p);
    return 0;
}

int unit_trace(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "trace: PATH\n"); return 2; }
    profile p;
    synthetic_profile(&p);
    struct cudaDeviceProp prop;
    report_info info;
    synthetic_report(&info, &prop);
    trace_write(argv[1], &p, &info);
    prof_free(&p);
    return 0;
}

/* trace-check PATH: trace_check_path's verdict, "none" (write no trace) or "ok"; exit 2 with its
 * one line for a refused path. */
int unit_trace_check(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "trace-check: PATH\n"); return 2; }
    printf("%s\n", trace_check_path(argv[1]) == 1 ? "none" : "ok");
    return 0;
}

/* The synthetic profile with a ProfilerStep range around each step's attn_fwd, and its report
 * (counters_tests.c adds the counters). */
void unit_kineto_profile(profile *p, report_info *info, struct cudaDeviceProp *prop)
{
    synthetic_profile_steps(p, 1);
    synthetic_report(info, prop);
}
