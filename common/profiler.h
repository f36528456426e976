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
 * Attribution (as Kineto does it: libkineto/src/CuptiActivityApi.cpp and PyTorch's
 * torch/csrc/profiler/collection.cpp push CUSTOM0/CUSTOM1 ids): prof_step_begin pushes the
 * step as a CUSTOM0 external-correlation id; every recorded host range pushes its own CUSTOM1 id.
 * CUPTI tags each traced launch/copy API record with both, and each GPU activity carries its
 * launching API record's correlation id, so an activity maps to its step and to the innermost
 * host range (matmul, softmax, ...) whose code launched it.
 *
 * Clock: ns, CUPTI's timestamp domain (CLOCK_REALTIME on Linux) for host and GPU records alike.
 * Threads: ranges and steps are host-thread calls from the one thread that runs the stage.
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
    const char *name;          /* kernel: demangled with the C++ ABI demangler when CUPTI gives a
                                  mangled (_Z...) name, else as CUPTI gives it; memcpy:
                                  "Memcpy DtoD (Device -> Device)"; memset: "Memset (Device)"
                                  (Kineto's names) */
    uint64_t start_ns, end_ns;
    uint32_t correlation;      /* = the launching API record's correlation id */
    uint32_t stream, device, context;
    int step;                  /* 0 set-up, >= 1 active step */
    int range;                 /* index in profile.ranges of the innermost host range whose code
                                  launched it, -1 if none */
    /* kernels only */
    int grid[3], block[3];
    int registers;             /* per thread */
    int static_smem, dynamic_smem;   /* bytes per block */
    int smem_optin;            /* 1 if the record's shared-memory limit config is opt-in */
    const char *launch_api;    /* "cudaLaunchKernel", "cuLaunchKernelEx", ... (from the API record;
                                  NULL if that record was not traced). Set for memcpy/memset too. */
    /* memcpy / memset only */
    uint64_t bytes;
    int copy_kind;             /* CUpti_ActivityMemcpyKind for memcpy */
} gpu_activity;

/* One runtime or driver API call (launches and copies only). */
typedef struct {
    const char *name;          /* "cudaLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync", ...
                                  (CUPTI's name without its "_v7000"-style version suffix) */
    int is_driver;
    uint32_t cbid;             /* CUPTI callback id in its domain (runtime or driver) */
    uint64_t start_ns, end_ns;
    uint32_t correlation;
    uint32_t thread_id;        /* gettid() of the calling thread */
    int step;
    int range;                 /* innermost host range around the call, -1 if none */
} api_call;

/* One host range: "ProfilerStep*" around each active step and "attn_fwd" inside it (category
 * user_annotation), stage host ops (cpu_op), "set-up" ranges such as "cudnn_build_plan"
 * (cpu_op, step 0). */
typedef struct {
    const char *name;          /* "ProfilerStep*" for every step's ProfilerStep range (the table's
                                  row; the trace names it "ProfilerStep#<step + 1>") */
    int is_step;               /* 1 for the attn_fwd range of a step, 2 for its ProfilerStep
                                  range (no NVTX range), 3 for the "timeline pass" range,
                                  0 otherwise */
    int depth;                 /* nesting level, attn_fwd = 0 */
    int parent;                /* index in profile.ranges of the enclosing range, -1 if none */
    uint64_t start_ns, end_ns;
    int step;
} host_range;

typedef struct {
    gpu_activity *acts; size_t n_acts;   /* sorted by start */
    api_call *apis;     size_t n_apis;   /* sorted by start */
    host_range *ranges; size_t n_ranges; /* sorted by start (= push order) */
    int active_steps;          /* n */
    uint32_t pid, tid;         /* process and the profiled host thread (gettid) */
    uint64_t dropped;          /* records CUPTI dropped (0 in a complete profile) */
    int cupti_version, cuda_runtime_version, cuda_driver_version;   /* 0 if unknown */
    char **strings; size_t n_strings;    /* names owned by the profile (freed by prof_free) */
} profile;

/* Subscribes to CUPTI, registers the buffer callbacks and enables the activity kinds. Call after
 * cudaGetDeviceCount and before the first context-creating CUDA call of the process. When
 * another CUPTI client owns CUPTI (Nsight Compute, Nsight Systems, cuda-gdb:
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) it prints one line on stderr and records
 * nothing (prof_cupti_owner says who); other CUPTI failures exit 1 via CUPTI_CHECK. Without
 * prof_init, steps and ranges only push NVTX ranges. After prof_finish, prof_init starts the
 * next run's profile in the same process (--cases): the kinds on again, nothing carried over. */
void prof_init(void);

/* The CUPTI client that made prof_init step aside ("CUPTI for Nsight Compute", ...), or NULL. */
const char *prof_cupti_owner(void);

/* The timeline pass's step (timeline.h): recorded like the set-up phase (trace only, never in
 * the table), inside a "timeline pass" user_annotation range (host_range.is_step 3). */
#define PROF_STEP_TIMELINE (-2)

/* Steps. prof_step_begin(0, 1) opens the set-up phase (no attn_fwd range);
 * prof_step_begin(PROF_STEP_TIMELINE, 1) the timeline pass's forward. Any other step is a
 * forward: it opens the "attn_fwd" NVTX range; when active (step >= 1, active = 1) it also opens
 * the recorded "ProfilerStep*" and "attn_fwd" host ranges (one inside the other) and pushes the
 * step's external-correlation id. Inactive steps
 * (active = 0, any step number) are run but their records dropped. Steps do not nest; host
 * ranges still open at prof_step_end are closed there (with a warning). */
void prof_step_begin(int step, int active);
void prof_step_end(void);

/* Synchronizes the device, flushes CUPTI, disables the kinds, and moves the kept records into
 * *out (sorted by start time). After this no CUDA work is recorded (timing runs unprofiled;
 * ranges only push NVTX). Warns on stderr when CUPTI dropped records or when GPU activities
 * came from API calls the profiler does not trace. */
void prof_finish(profile *out);
void prof_free(profile *p);

/* GPU activities of active step `step` (kernels + memcpys + memsets), by kind. Any output
 * pointer may be NULL. */
void prof_count_step(const profile *p, int step, int *kernels, int *memcpys, int *memsets);

/* ---- unit-test hooks: prof_finish's join on synthetic records, no CUPTI, no GPU -------------
 * Feed records as CUPTI's buffer callback and the range calls would, then assemble. The
 * external-correlation ids follow the profiler's scheme: custom = 0 (CUSTOM0) carries step + 1,
 * custom = 1 (CUSTOM1) carries range index + 1. Names are copied. prof_test_assemble moves what
 * was fed into *out (free it with prof_free); t_end closes ranges fed with end 0. */
void prof_test_api(int is_driver, const char *name, uint64_t start, uint64_t end, uint32_t corr,
                   uint32_t tid);
void prof_test_ext(int custom, uint64_t ext, uint32_t corr);
void prof_test_activity(const gpu_activity *a);
void prof_test_range(const char *name, int is_step, int parent, uint64_t start, uint64_t end,
                     int step);
void prof_test_assemble(profile *out, uint64_t t_end);

#ifdef __cplusplus
}
#endif
#endif
