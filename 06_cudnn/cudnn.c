/* 06_cudnn: hand the whole problem to NVIDIA's library and let it generate the kernel.
 *
 * The stage describes causal SDPA to cuDNN 9 as an operation graph through the raw backend C API
 * (sdpa_graph.c, built with the small helpers in builder.c), asks cuDNN's heuristics (mode A) for
 * engine configs, finalizes the first one that works into an execution plan (cuDNN generates and
 * compiles a fused flash-attention kernel here) and sizes its workspace. That costs milliseconds
 * of host time, so it happens once, at set-up, in its own host range "cudnn_build_plan"; the plan
 * is cached for the run's shape and every forward only executes it: cudnnBackendExecute on the
 * problem's stream, which launches the kernel through the driver's cuLaunchKernelEx.
 *
 * --rebuild-plan rebuilds graph and plan inside every forward call (again in a
 * "cudnn_build_plan" range): the cost a caller pays without a plan cache. The set-up builds one
 * plan in both modes (it sizes the workspace and prints the engine), so a traced run shows
 * 1 "cudnn_build_plan" range with the cache and 1 + (active steps) with --rebuild-plan. The set-up
 * prints the chosen engine on two "cudnn: " lines, except under --quiet.
 *
 * Supported: compute capability 8.0+, head_dim a multiple of 8 up to 256 (cuDNN's SDPA support
 * matrix), cuDNN 9 except 9.10.0/9.10.1 (known-bad SDPA forward, blocked by cudnn-frontend).
 *
 * No kernels here: this file is host code, C11, built with gcc like builder.c and sdpa_graph.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudnn.h>

#include "harness.h"
#include "check.h"
#include "sdpa_graph.h"

/* Set by --rebuild-plan (parse_flag runs before set-up). */
static int g_rebuild_plan = 0;

typedef struct {
    cudnnHandle_t handle;
    sdpa_plan plan;                  /* the cached plan for the run's shape */
    void *workspace;                 /* device, workspace_cap bytes; NULL if 0 */
    size_t workspace_cap;
    /* The variant pack binds uids to this call's pointers; rebuilt only when one of them moves. */
    be_arena pack_arena;
    cudnnBackendDescriptor_t pack;
    void *bound[SDPA_N_IO];          /* pointers the pack holds, in SDPA_UID_* order */
    void *bound_workspace;
    float scale, neg_inf;            /* host memory the by-value scalars point at */
} cudnn_state;

/* ---- helpers ---------------------------------------------------------------------------------- */

/* Builds graph + plan for shape s inside a "cudnn_build_plan" host range, so the trace shows the
 * CPU cost of graph construction, heuristics and kernel generation. Exits 2 if cuDNN refuses. */
static void build_plan(sdpa_plan *plan, cudnnHandle_t handle, const attn_shape *s)
{
    prof_range_push("cudnn_build_plan");
    sdpa_plan_build(plan, handle, s);
    prof_range_pop();
}

/* Grows the device workspace to at least bytes. */
static void ensure_workspace(cudnn_state *st, int64_t bytes)
{
    if ((size_t)bytes <= st->workspace_cap)
        return;
    dev_free(st->workspace);
    st->workspace = dev_alloc((size_t)bytes, "06_cudnn: cuDNN workspace");
    st->workspace_cap = (size_t)bytes;
}

/* Makes st->pack bind this call's Q, K, V, O, the two host scalars and the workspace; reuses the
 * finalized pack while nothing moved (the harness passes the same buffers every call). */
static void bind_pointers(cudnn_state *st, const attn_problem *p)
{
    const int64_t uids[SDPA_N_IO] = {SDPA_UID_Q, SDPA_UID_K, SDPA_UID_V, SDPA_UID_O,
                                     SDPA_UID_SCALE, SDPA_UID_NEG_INF};
    void *ptrs[SDPA_N_IO] = {
        (void *)p->q,
        (void *)p->k,          /* the [B,H,S,D] buffer itself: the graph reads it as Kᵀ */
        (void *)p->v,
        p->o,
        &st->scale,            /* by value: host pointers, read at execute */
        &st->neg_inf,
    };
    if (st->pack && st->bound_workspace == st->workspace && memcmp(ptrs, st->bound, sizeof ptrs) == 0)
        return;
    be_arena_free(&st->pack_arena);
    st->pack = be_variant_pack(&st->pack_arena, SDPA_N_IO, uids, ptrs, st->workspace);
    memcpy(st->bound, ptrs, sizeof ptrs);
    st->bound_workspace = st->workspace;
}

/* cudnnGetVersion(), asked once per process: --help asks supports about every head_dim from 1
 * to 1024, and each call into cuDNN writes its API log lines when CUDNN_LOGLEVEL_DBG is set. */
static size_t cudnn_version(void)
{
    static size_t version;
    if (!version) version = cudnnGetVersion();
    return version;
}

/* Two "cudnn: " lines on stdout: what cuDNN chose, read back from the engine config. Not called
 * under --quiet (p->quiet), where the stage prints nothing on stdout. */
static void print_plan(const sdpa_plan *plan)
{
    const size_t v = cudnn_version();
    printf("cudnn: cuDNN %zu.%zu.%zu, %d-op causal SDPA graph, heuristics mode A returned %d engine "
           "config%s (of %lld announced), #%d finalized\n",
           v / 10000, v % 10000 / 100, v % 100, SDPA_N_OPS, plan->returned,
           plan->returned == 1 ? "" : "s", (long long)plan->offered, plan->chosen);
    printf("cudnn: engine %lld, knobs", (long long)plan->engine.engine);
    if (plan->engine.n_knobs == 0)
        printf(" none");
    for (int i = 0; i < plan->engine.n_knobs; i++) {
        const char *name = be_knob_name(plan->engine.knob_type[i]);
        if (name)
            printf("%s %s=%lld", i ? "," : "", name, (long long)plan->engine.knob_value[i]);
        else
            printf("%s knob%d=%lld", i ? "," : "", plan->engine.knob_type[i],
                   (long long)plan->engine.knob_value[i]);
    }
    printf(", workspace %lld B%s%s\n", (long long)plan->workspace_bytes,
           plan->engine.tensor_core ? ", tensor cores" : "",
           plan->engine.runtime_compiled ? ", runtime-compiled (NVRTC at plan build)" : "");
    fflush(stdout);
}

/* ---- the stage -------------------------------------------------------------------------------- */

/* Compute capability 8.0+, head_dim % 8 == 0 and <= 256, a usable cuDNN 9. */
static int cudnn_supports(const attn_shape *s, const struct cudaDeviceProp *prop, char *why, size_t why_len)
{
    if (s->head_dim % 8 != 0 || s->head_dim > 256) {
        snprintf(why, why_len, "head_dim %d is not supported by 06_cudnn (cuDNN's SDPA needs a multiple "
                 "of 8, at most 256)", s->head_dim);
        return 1;
    }
    const size_t v = cudnn_version();
    if (v < 90000 || v == 91000 || v == 91001) {
        snprintf(why, why_len, "06_cudnn needs cuDNN 9 other than 9.10.0/9.10.1 (their bf16 SDPA forward "
                 "is known bad), found %zu.%zu.%zu", v / 10000, v % 10000 / 100, v % 100);
        return 1;
    }
    if (prop && prop->major < 8) {
        snprintf(why, why_len, "06_cudnn needs compute capability 8.0 or newer for cuDNN's fused SDPA "
                 "(%s is %d.%d)", prop->name, prop->major, prop->minor);
        return 1;
    }
    return 0;
}

/* Before set-up the workspace is unknown (cuDNN sizes it with the plan: 256 B on the H200, 0 at
 * seq 1); set-up stores the real size in p->extra_bytes. */
static size_t cudnn_extra_bytes(const attn_shape *s)
{
    (void)s;
    return 0;
}

/* Handle on the problem's stream, the plan for the run's shape, its workspace, the variant pack. */
static void *cudnn_setup(attn_problem *p)
{
    cudnn_state *st = (cudnn_state *)calloc(1, sizeof *st);
    if (!st) {
        fprintf(stderr, "06_cudnn: out of host memory\n");
        attn_exit(1);
    }
    st->scale = p->scale;
    st->neg_inf = -INFINITY;

    prof_range_push("cudnn_create_handle");   /* loads cuDNN's sub-libraries: a one-time cost */
    CUDNN_CHECK(cudnnCreate(&st->handle));
    CUDNN_CHECK(cudnnSetStream(st->handle, p->stream));
    prof_range_pop();

    build_plan(&st->plan, st->handle, &p->shape);
    if (!p->quiet)            /* --quiet: only the harness's summary line on stdout */
        print_plan(&st->plan);

    ensure_workspace(st, st->plan.workspace_bytes);
    p->extra_bytes = (size_t)st->plan.workspace_bytes;
    bind_pointers(st, p);
    return st;
}

/* One forward: cudnnBackendExecute of the cached plan (with --rebuild-plan: a freshly built one). */
static void cudnn_forward(attn_problem *p)
{
    cudnn_state *st = (cudnn_state *)p->state;
    if (g_rebuild_plan) {
        sdpa_plan fresh;
        build_plan(&fresh, st->handle, &p->shape);
        /* The previous call's kernel may still be running from the old plan's module: let it finish
         * before destroying the plan. (The build took far longer than the kernel, so this waits
         * for nothing in practice.) */
        CUDA_CHECK(cudaStreamSynchronize(p->stream));
        sdpa_plan_free(&st->plan);
        st->plan = fresh;
        ensure_workspace(st, st->plan.workspace_bytes);
    }
    bind_pointers(st, p);
    prof_range_push("cudnn_execute");
    CUDNN_CHECK(cudnnBackendExecute(st->handle, st->plan.plan, st->pack));
    prof_range_pop();
}

static void cudnn_teardown(attn_problem *p)
{
    cudnn_state *st = (cudnn_state *)p->state;
    if (!st)
        return;
    CUDA_CHECK(cudaStreamSynchronize(p->stream));
    be_arena_free(&st->pack_arena);
    sdpa_plan_free(&st->plan);
    dev_free(st->workspace);
    CUDNN_CHECK(cudnnDestroy(st->handle));
    free(st);
    p->state = NULL;
}

/* --rebuild-plan takes no value: 1 (the harness's parse_flag contract); (NULL, NULL) resets it. */
static int cudnn_parse_flag(const char *flag, const char *value)
{
    (void)value;
    if (!flag) {
        g_rebuild_plan = 0;
        return 0;
    }
    if (strcmp(flag, "--rebuild-plan") == 0) {
        g_rebuild_plan = 1;
        return 1;
    }
    return 0;
}

const attn_stage ATTN_STAGE_SYMBOL = {
    "06_cudnn",
    "cuDNN 9 backend API: a 14-op SDPA operation graph, fused into one generated kernel; plan built once",
    cudnn_supports,
    cudnn_extra_bytes,
    cudnn_setup,
    cudnn_forward,
    cudnn_teardown,
    cudnn_parse_flag,
    "  --rebuild-plan    rebuild the cuDNN graph and plan on every forward call (no plan cache)",
    0.0,                 /* the bf16 bound, 1e-2 */
    /* env_help: cuDNN's own settings, read by cuDNN */
    "  CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=stderr  cuDNN's own log (cuDNN reads them): why\n"
    "                    each engine config was refused, on stderr",
    NULL,                /* check_env: the CUDNN_* settings are cuDNN's, read by cuDNN */
};
