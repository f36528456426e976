/* profiler.h: a small Kineto in C. CUPTI activity records (kernels, memcpy, memset, launch and
 * copy runtime/driver calls, external correlation) plus host ranges timed with cuptiGetTimestamp,
 * gathered into one `profile` that the table (table.h) and the trace (trace.h) read.
 *
 * Phases, as torch.profiler's schedule: records made during the set-up phase (step 0) are kept
 * for the trace only (e.g. cuDNN's plan build); records of steps marked inactive (the checked
 * forward, warm-up, the schedule's wait and warm-up steps) are dropped; records of active steps
 * (1..n) fill the table and the trace. Each step is an external-correlation id, so every GPU
 * activity belongs to the step whose host code launched it.
 *
 * Clock: ns, CUPTI's timestamp domain (CLOCK_REALTIME on Linux) for host and GPU records alike.
 */
#ifndef ATTN_PROFILER_H
#define ATTN_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { ACT_KERNEL, ACT_MEMCPY, ACT_MEMSET } gpu_act_kind;

/* One GPU activity (CUpti_ActivityKernel10 / Memcpy6 / Memset4). */
typedef struct {
    gpu_act_kind kind;
    const char *name;          /* kernel: the mangled-or-plain name as CUPTI gives it, demangled when
                                  possible; memcpy: "Memcpy DtoD (Device -> Device)"; memset:
                                  "Memset (Device)" (Kineto's names) */
    uint64_t start_ns, end_ns;
    uint32_t correlation;      /* = the launching API record's correlation id */
    uint32_t stream, device;
    int step;                  /* 0 set-up, >= 1 active step */
    /* kernels only */
    int grid[3], block[3];
    int registers;             /* per thread */
    int static_smem, dynamic_smem;   /* bytes per block */
    int smem_optin;            /* 1 if the record's shared-memory limit config is opt-in */
    const char *launch_api;    /* "cudaLaunchKernel", "cuLaunchKernelEx", ... (from the API record) */
    /* memcpy / memset only */
    uint64_t bytes;
    int copy_kind;             /* CUpti_ActivityMemcpyKind for memcpy */
} gpu_activity;

/* One runtime or driver API call (launches and copies only). */
typedef struct {
    const char *name;          /* "cudaLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync", ... */
    int is_driver;
    uint64_t start_ns, end_ns;
    uint32_t correlation;
    uint32_t thread_id;
    int step;
} api_call;

/* One host range: "attn_fwd" (category user_annotation), stage host ops (cpu_op), "set-up"
 * ranges such as "cudnn_build_plan" (cpu_op, step 0). */
typedef struct {
    const char *name;
    int is_step;               /* 1 for the attn_fwd range of a step */
    int depth;                 /* nesting level, attn_fwd = 0 */
    uint64_t start_ns, end_ns;
    int step;
} host_range;

typedef struct {
    gpu_activity *acts; size_t n_acts;
    api_call *apis;     size_t n_apis;
    host_range *ranges; size_t n_ranges;
    int active_steps;          /* n */
    uint32_t pid, tid;
} profile;

/* Registers the buffer callbacks and enables the activity kinds. Call before the first CUDA
 * call of the process. CUPTI failures exit 1 via CUPTI_CHECK. */
void prof_init(void);

/* Steps. prof_step_begin(0, 1) opens the set-up phase (no attn_fwd range). For step >= 1:
 * opens the "attn_fwd" host range + NVTX range and pushes the step's external-correlation id;
 * inactive steps (active = 0) are run but their records dropped. */
void prof_step_begin(int step, int active);
void prof_step_end(void);

/* Synchronizes the device, flushes CUPTI, disables the kinds, and moves the kept records into
 * *out (sorted by start time). After this no CUDA work is recorded (timing runs unprofiled). */
void prof_finish(profile *out);
void prof_free(profile *p);

/* GPU activities of active step `step` (kernels + memcpys + memsets), by kind. */
void prof_count_step(const profile *p, int step, int *kernels, int *memcpys, int *memsets);

#ifdef __cplusplus
}
#endif
#endif
