/* harness.h: the contract between the common run harness and one stage of the course.
 *
 * A stage (01_naive/naive.cu, ..., 06_cudnn/cudnn.c) defines exactly one
 *     const attn_stage ATTN_STAGE_SYMBOL = { ... };
 * holding its name, its one-line idea and its set-up / forward / tear-down functions. The harness
 * (common/run.c) owns everything else: flags, tensors, the float64 reference check, the profiler,
 * the table, the trace and the summary line.
 *
 * Tensors: Q, K, V, O are bf16, shape [batch, heads, seq, head_dim], row-major and contiguous on
 * the device. O = softmax(Q·Kᵀ·scale + causal) · V with scale = 1/sqrt(head_dim), causal mask
 * top-left (query row i sees keys 0..i).
 *
 * This header is C11 and C++ (nvcc compiles the stages as CUDA C++; only C-style code is used).
 */
#ifndef ATTN_HARNESS_H
#define ATTN_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Problem shape. All four are >= 1 once the CLI has validated them. */
typedef struct {
    int batch, heads, seq, head_dim;
} attn_shape;

/* What a stage gets on every call. Device pointers are bf16 (__nv_bfloat16 in the .cu files;
 * the C harness sees them as void*). */
typedef struct {
    attn_shape shape;
    float scale;               /* 1/sqrt(head_dim) */
    const void *q, *k, *v;     /* device, bf16 [batch, heads, seq, head_dim] */
    void *o;                   /* device, bf16 [batch, heads, seq, head_dim] */
    cudaStream_t stream;       /* every launch of the stage goes on this stream */
    const struct cudaDeviceProp *prop;
    void *state;               /* the stage's own, returned by setup */
    size_t extra_bytes;        /* device bytes beyond Q, K, V, O; setup may raise it (a workspace) */
    int quiet;                 /* --quiet: the stage prints nothing on stdout (the summary line is
                                * the harness's) */
    const struct attn_regions_arg *regions;   /* the regions pass's record buffer (regions.h),
                                * read by a regions build's forward; NULL otherwise */
} attn_problem;

typedef struct {
    const char *name;          /* "01_naive": directory name, trace path, summary line */
    const char *idea;          /* one line, printed over the table */
    /* 0 if the stage runs this shape on this device; else write one line (no newline) into why
     * naming the limit, e.g. "head_dim 96 is not supported (supported: 64, 128)"; exit 2 follows.
     * Called twice: first with prop = NULL, before the harness looks for a GPU (check what does
     * not depend on the device, e.g. head_dim, so a refusal reads the same with or without a
     * GPU), then with the device's properties. --help also calls it with prop = NULL for every
     * head_dim the flags allow (1 to 1024) to list the ones the stage runs, so it only answers:
     * no output, no exit, no CUDA call. */
    int (*supports)(const attn_shape *s, const struct cudaDeviceProp *prop, char *why, size_t why_len);
    /* Device bytes the stage will allocate beyond Q, K, V, O (checked against free memory
     * before anything is allocated). */
    size_t (*extra_bytes)(const attn_shape *s);
    /* Once, before the checked forward: allocate buffers, build plans. May be NULL. Returns the
     * stage state (stored in attn_problem.state). Runs inside the profiler (set-up phase). */
    void *(*setup)(attn_problem *p);
    /* One forward: enqueue the work on p->stream and return without synchronizing. */
    void (*forward)(attn_problem *p);
    /* Frees what setup made. May be NULL. */
    void (*teardown)(attn_problem *p);
    /* Optional stage-only flags, e.g. "--rebuild-plan". The harness calls parse_flag(flag, value)
     * for a flag it does not know: flag is the argument up to any '=' ("--tile" of "--tile=64"),
     * value the text after the '=', else the next argument (NULL if there is none). Return 0 if
     * the flag is not the stage's (the harness says "unknown flag"), 1 if it is one that takes no
     * value (the harness refuses "--flag=value" for it), 2 if it took value. An integer value
     * goes through attn_flag_uint below, the one number rule of every flag. May be NULL.
     * cli_parse first calls parse_flag(NULL, NULL): set every stage flag back to its default
     * (one process parses many runs' flags under --cases) and return 0.
     * flag_help: the flags' lines for --help ("  --rebuild-plan    what it does"), or NULL. */
    int (*parse_flag)(const char *flag, const char *value);
    const char *flag_help;
    /* Relative L2 error bound against the float64 reference; 0 means the bf16 default 1e-2. */
    double tolerance;
    /* The environment settings the stage reads, for --help: one "  NAME=VALUES  what it does"
     * line each, separated by newlines (no final one), or NULL. The harness's own (ATTN_SANITIZE)
     * are listed for every stage. */
    const char *env_help;
    /* Validates every environment setting env_help lists, fully, at start-up: cli_parse calls it
     * after the flags, before the harness looks for a GPU (so a bad value reads the same with or
     * without one); --help does not call it. Unset means the default; any other value the setting
     * does not accept: one line on stderr naming the variable and the accepted forms, exit 2
     * (die_usage). No CUDA call. May be NULL. */
    void (*check_env)(void);
} attn_stage;

/* Each stage defines the one stage object the harness runs. Its regions build (the same file
 * compiled with -DATTN_REGIONS=1, common/regions.cuh) defines attn_stage_regions_def instead and
 * publishes it as attn_regions_build_def (ATTN_REGIONS_REGISTER): who stamps ("warp" or
 * "warpgroup", with their roles if they differ) and the instrumented stage, whose forward
 * launches the stamping kernel. */
#if defined(ATTN_REGIONS) && ATTN_REGIONS
#define ATTN_STAGE_SYMBOL attn_stage_regions_def
#else
#define ATTN_STAGE_SYMBOL attn_stage_def
#endif
extern const attn_stage ATTN_STAGE_SYMBOL;

typedef struct {
    const attn_stage *stage;   /* the regions build's stage object */
    const char *unit;          /* "warp" or "warpgroup" */
    const char *const *roles;  /* each unit index's role ("producer", "consumer 0", ...), ending
                                * in NULL; NULL: the units have no roles (every warp alike) */
} attn_regions_build;

/* ---- a stage's own integer flag -------------------------------------------------------------
 * value as an integer in [lo, hi] by the rule every flag follows: decimal digits only (no sign,
 * no space, no '+'). Anything else (or value NULL) prints one line naming flag and the range on
 * stderr and exits 2: "--tile: 99 is out of range (expected 16 to 64)". For parse_flag. */
uint64_t attn_flag_uint(const char *flag, const char *value, uint64_t lo, uint64_t hi);

/* ---- host ranges (profiler): name the stage's host ops like the blog's CPU lane ---------------
 * prof_range_push("matmul"); cublas...; prof_range_pop();
 * Timed with cuptiGetTimestamp (same clock as the GPU records), also pushed as NVTX ranges so
 * Nsight Systems shows them. Category "cpu_op" in the trace; rows of the table. Nesting allowed.
 * The name must be a string literal or otherwise outlive the program. */
void prof_range_push(const char *name);
void prof_range_pop(void);

/* ---- device memory ------------------------------------------------------------------------------
 * cudaMalloc that turns out-of-memory into one line on stderr ("<what>: <bytes> bytes do not fit
 * in device memory (<free> free)") and exit 2; any other error is a CUDA failure (exit 1). */
void *dev_alloc(size_t bytes, const char *what);
void dev_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif
