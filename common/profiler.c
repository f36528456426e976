/* profiler.c: CUPTI activity tracing from C (CUDA 13.0), host ranges, and the join that turns
 * CUPTI's records into one `profile` (profiler.h).
 *
 * Records (CUPTI docs, "Activity API"; cupti_activity.h): CONCURRENT_KERNEL, MEMCPY, MEMSET and
 * EXTERNAL_CORRELATION kinds, plus API records for launch, graph-launch, memcpy and memset calls
 * only, enabled one callback id at a time (cuptiActivityEnableRuntimeApi/DriverApi; the RUNTIME
 * and DRIVER kinds are left off so that cudaGetDevice-style calls are never traced).
 *
 * Threads: CUPTI hands filled buffers to buffer_completed, on its own worker thread or inside
 * cuptiActivityFlushAll. That callback parses with CUPTI calls outside our lock and takes the lock
 * only to append (Kineto documents an ABBA deadlock with CUPTI's lock otherwise). Steps and
 * ranges run on the stage's host thread and touch only main-thread state.
 *
 * Join (prof_finish): external-correlation records give, per correlation id, the step (CUSTOM0 =
 * step + 1) and the innermost host range (CUSTOM1 = range index + 1); a GPU activity carries its
 * launching API record's correlation id. A driver call made inside a runtime call on the same
 * thread (e.g. cudart calling a traced cuMemcpy) is folded into that runtime call.
 */
#define _GNU_SOURCE /* syscall(SYS_gettid) */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include "check.h"
#include "harness.h"
#include "profiler.h"

/* The C++ ABI demangler (libstdc++, which nvcc's g++ link step always links); its symbol is
 * extern "C" by the Itanium C++ ABI. Gives the names Kineto shows, e.g.
 * "void (anonymous namespace)::softmax_warp_forward<...>(...)". CUPTI itself gives mangled names. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

enum { BUF_BYTES = 4 << 20, MAX_DEPTH = 64 };

typedef struct { uint32_t corr; uint32_t kind; uint64_t ext; } raw_ext;
typedef struct {
    uint64_t start, end;
    uint32_t cbid, corr, tid;
    int is_driver;
    const char *name;          /* NULL: resolve from cbid at the join */
} raw_api;
typedef struct { char *key, *value; } name_entry;

static struct {
    /* --- shared with CUPTI's thread: under lock --- */
    pthread_mutex_t lock;
    gpu_activity *acts; size_t n_acts, cap_acts;
    raw_api *apis;      size_t n_apis, cap_apis;
    raw_ext *exts;      size_t n_exts, cap_exts;
    name_entry *names;  size_t n_names, cap_names;
    size_t no_timestamp, lost_buffers;
    /* --- main thread only --- */
    int enabled;                       /* prof_init done, prof_finish not yet */
    int subscribed;                    /* our subscriber holds CUPTI (kept to the process's end) */
    host_range *ranges; size_t n_ranges, cap_ranges;
    int stack[MAX_DEPTH], depth;       /* open ranges: index in ranges, or -1 if not recorded */
    int in_step, step, recording, step_range, step_base;
    int warned_nesting;
    CUpti_SubscriberHandle subscriber;
    char owner[160];                   /* set when another CUPTI client owns CUPTI */
    uint8_t rt_on[CUPTI_RUNTIME_TRACE_CBID_SIZE], drv_on[CUPTI_DRIVER_TRACE_CBID_SIZE];
} g = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint32_t gettid_(void) { return (uint32_t)syscall(SYS_gettid); }

static void *grow(void *p, size_t *cap, size_t elem)
{
    size_t n = *cap ? *cap * 2 : 256;
    void *q = realloc(p, n * elem);
    if (!q) {
        fprintf(stderr, "profiler: out of host memory (%zu records)\n", n);
        attn_exit(1);
    }
    *cap = n;
    return q;
}
#define APPEND(arr, n, cap, val) do { if ((n) == (cap)) (arr) = grow((arr), &(cap), sizeof *(arr)); \
                                      (arr)[(n)++] = (val); } while (0)

static char *dup_or_die(const char *s)
{
    char *d = strdup(s);
    if (!d) { fprintf(stderr, "profiler: out of host memory\n"); attn_exit(1); }
    return d;
}

/* The profile-owned copy of a name (lock held). Kernel names (demangle = 1) are demangled once. */
static const char *intern(const char *key, int demangle)
{
    for (size_t i = g.n_names; i-- > 0;)
        if (strcmp(g.names[i].key, key) == 0) return g.names[i].value;
    name_entry e;
    e.key = dup_or_die(key);
    e.value = e.key;
    if (demangle && key[0] == '_' && key[1] == 'Z') {
        int status = -1;
        char *d = __cxa_demangle(key, NULL, NULL, &status);
        if (d && status == 0) e.value = d;
        else free(d);
    }
    APPEND(g.names, g.n_names, g.cap_names, e);
    return e.value;
}

/* ---- CUPTI records ------------------------------------------------------------------------- */

static const char *memcpy_kind_name(int k)
{
    static const char *names[] = { "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD",
                                   "DtoA", "DtoD", "HtoH", "PtoP" };
    return k >= 0 && k < (int)(sizeof names / sizeof *names) ? names[k] : "Unknown";
}

static const char *memory_kind_name(int k)
{
    static const char *names[] = { "Unknown", "Pageable", "Pinned", "Device", "Array", "Managed",
                                   "Device Static", "Managed Static" };
    return k >= 0 && k < (int)(sizeof names / sizeof *names) ? names[k] : "Unknown";
}

static void add_activity(gpu_activity *a, const char *name, int demangle)
{
    pthread_mutex_lock(&g.lock);
    a->name = intern(name, demangle);
    APPEND(g.acts, g.n_acts, g.cap_acts, *a);
    pthread_mutex_unlock(&g.lock);
}

static void take_record(const CUpti_Activity *rec)
{
    gpu_activity a;
    memset(&a, 0, sizeof a);
    a.step = -1;
    a.range = -1;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        if (k->start == 0 && k->end == 0) { /* "no timestamp" (cupti_activity.h) */
            pthread_mutex_lock(&g.lock);
            g.no_timestamp++;
            pthread_mutex_unlock(&g.lock);
            return;
        }
        a.kind = ACT_KERNEL;
        a.start_ns = k->start; a.end_ns = k->end;
        a.correlation = k->correlationId;
        a.stream = k->streamId; a.device = k->deviceId; a.context = k->contextId;
        a.grid[0] = k->gridX; a.grid[1] = k->gridY; a.grid[2] = k->gridZ;
        a.block[0] = k->blockX; a.block[1] = k->blockY; a.block[2] = k->blockZ;
        a.registers = k->registersPerThread;
        a.static_smem = k->staticSharedMemory;
        a.dynamic_smem = k->dynamicSharedMemory;
        a.smem_optin = k->shmemLimitConfig == CUPTI_FUNC_SHMEM_LIMIT_OPTIN;
        add_activity(&a, k->name ? k->name : "(unnamed kernel)", 1);
        return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
        char name[96];
        snprintf(name, sizeof name, "Memcpy %s (%s -> %s)", memcpy_kind_name(m->copyKind),
                 memory_kind_name(m->srcKind), memory_kind_name(m->dstKind));
        a.kind = ACT_MEMCPY;
        a.start_ns = m->start; a.end_ns = m->end;
        a.correlation = m->correlationId;
        a.stream = m->streamId; a.device = m->deviceId; a.context = m->contextId;
        a.bytes = m->bytes;
        a.copy_kind = m->copyKind;
        add_activity(&a, name, 0);
        return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
        char name[64];
        snprintf(name, sizeof name, "Memset (%s)", memory_kind_name(m->memoryKind));
        a.kind = ACT_MEMSET;
        a.start_ns = m->start; a.end_ns = m->end;
        a.correlation = m->correlationId;
        a.stream = m->streamId; a.device = m->deviceId; a.context = m->contextId;
        a.bytes = m->bytes;
        add_activity(&a, name, 0);
        return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *r = (const CUpti_ActivityAPI *)rec;
        raw_api x = { r->start, r->end, r->cbid, r->correlationId, r->threadId,
                      rec->kind == CUPTI_ACTIVITY_KIND_DRIVER, NULL };
        pthread_mutex_lock(&g.lock);
        APPEND(g.apis, g.n_apis, g.cap_apis, x);
        pthread_mutex_unlock(&g.lock);
        return;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *e = (const CUpti_ActivityExternalCorrelation *)rec;
        if (e->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 &&
            e->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1) return;
        raw_ext x = { e->correlationId, (uint32_t)e->externalKind, e->externalId };
        pthread_mutex_lock(&g.lock);
        APPEND(g.exts, g.n_exts, g.cap_exts, x);
        pthread_mutex_unlock(&g.lock);
        return;
    }
    default:
        return;
    }
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *max_records = 0;                 /* as many as fit */
    *buffer = malloc(BUF_BYTES);      /* malloc aligns to 16; CUPTI needs 8 */
    *size = *buffer ? BUF_BYTES : 0;
    if (!*buffer) {                   /* CUPTI drops records; reported at prof_finish */
        pthread_mutex_lock(&g.lock);
        g.lost_buffers++;
        pthread_mutex_unlock(&g.lock);
    }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)ctx; (void)stream; (void)size;
    CUpti_Activity *rec = NULL;
    for (;;) {
        CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break; /* end of the buffer */
        if (r != CUPTI_SUCCESS) {
            const char *m = NULL;
            cuptiGetResultString(r, &m);
            check_fail("CUPTI", "cuptiActivityGetNextRecord", __FILE__, __LINE__,
                       m ? m : "unknown", NULL);
        }
        take_record(rec);
    }
    free(buffer);
}

/* ---- which API calls are traced ------------------------------------------------------------ */

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* Runtime calls that put work on the GPU: launches, graph launches, copies, memsets. */
static int traced_runtime(const char *n)
{
    if (has_prefix(n, "cudaLaunchHostFunc")) return 0;
    return has_prefix(n, "cudaLaunch") || has_prefix(n, "__cudaLaunch") ||
           has_prefix(n, "cudaGraphLaunch") || has_prefix(n, "cudaMemcpy") ||
           has_prefix(n, "cudaMemset");
}

/* Driver calls that put work on the GPU (cuBLAS and cuDNN launch with cuLaunchKernelEx). */
static int traced_driver(const char *n)
{
    if (has_prefix(n, "cuLaunchHostFunc")) return 0;
    return has_prefix(n, "cuLaunch") || has_prefix(n, "cuGraphLaunch") ||
           has_prefix(n, "cuMemcpy") || has_prefix(n, "cuMemset");
}

/* Enables (on = 1) or disables the traced cbids of both domains. */
static void set_api_tracing(int on)
{
    for (uint32_t cb = 1; cb < CUPTI_RUNTIME_TRACE_CBID_SIZE; cb++) {
        if (on) {
            const char *n = NULL;
            if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cb, &n) != CUPTI_SUCCESS || !n)
                continue; /* an unused id */
            g.rt_on[cb] = (uint8_t)traced_runtime(n);
        }
        if (g.rt_on[cb]) CUPTI_CHECK(cuptiActivityEnableRuntimeApi(cb, (uint8_t)on));
    }
    for (uint32_t cb = 1; cb < CUPTI_DRIVER_TRACE_CBID_SIZE; cb++) {
        if (on) {
            const char *n = NULL;
            if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cb, &n) != CUPTI_SUCCESS || !n)
                continue;
            g.drv_on[cb] = (uint8_t)traced_driver(n);
        }
        if (g.drv_on[cb]) CUPTI_CHECK(cuptiActivityEnableDriverApi(cb, (uint8_t)on));
    }
}

static const CUpti_ActivityKind KINDS[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};

static void CUPTIAPI no_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)userdata; (void)domain; (void)cbid; (void)data;
}

/* The activity kinds and the API records on: prof_finish turns them off again. */
static void enable_recording(void)
{
    for (size_t i = 0; i < sizeof KINDS / sizeof *KINDS; i++)
        CUPTI_CHECK(cuptiActivityEnable(KINDS[i]));
    set_api_tracing(1);
    g.enabled = 1;
}

void prof_init(void)
{
    if (g.enabled || g.owner[0]) return;
    /* Under compute-sanitizer (make sanitize) CUPTI belongs to the sanitizer: record nothing. */
    const char *sanitize = getenv("ATTN_SANITIZE");
    if (sanitize && strcmp(sanitize, "1") == 0) return;
    if (g.subscribed) { /* a later run of the same process (--cases): CUPTI is ours already */
        enable_recording();
        return;
    }
    /* The first CUPTI call: a subscriber (no callback enabled) claims CUPTI for us. Under Nsight
     * Compute, Nsight Systems, cuda-gdb or another CUPTI client CUPTI allows one subscriber only
     * (cupti_callbacks.h, cuptiSubscribe_v2): then our profiler steps aside and makes no further
     * CUPTI call; the forwards, the check and the NVTX ranges run as always. */
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN > 128 ? CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN : 128];
    memset(old, 0, sizeof old);
    CUpti_SubscriberParams sp;
    memset(&sp, 0, sizeof sp);
    sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    sp.subscriberName = "attention-profiling";
    sp.oldSubscriberName = old;
    sp.oldSubscriberSize = sizeof old;
    CUptiResult r = cuptiSubscribe_v2(&g.subscriber, no_callback, NULL, &sp);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        snprintf(g.owner, sizeof g.owner, "%s", old[0] ? old : "another CUPTI client");
        fprintf(stderr, "profiler: CUPTI is in use by %s (Nsight Compute, Nsight Systems or a "
                "debugger): our table, trace and counters are off; the NVTX ranges remain\n",
                g.owner);
        return;
    }
    CUPTI_CHECK(r);
    g.subscribed = 1;
    /* API records' threadId = gettid(), as in the trace's CPU lane. */
    CUPTI_CHECK(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
    CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    enable_recording();
}

const char *prof_cupti_owner(void) { return g.owner[0] ? g.owner : NULL; }

/* ---- steps and host ranges ----------------------------------------------------------------- */

/* is_step: 0 host op, 1 attn_fwd, 2 ProfilerStep (recorded only, no NVTX range), 3 the timeline
 * pass. */
static void range_push(const char *name, int is_step)
{
    if (is_step != 2) nvtxRangePushA(name);
    if (g.depth >= MAX_DEPTH) {
        fprintf(stderr, "profiler: host ranges nested deeper than %d (at \"%s\")\n", MAX_DEPTH, name);
        attn_exit(1);
    }
    int idx = -1;
    if (g.recording) {
        host_range r;
        memset(&r, 0, sizeof r);
        r.name = name;
        r.is_step = is_step;
        r.depth = g.depth - g.step_base;
        r.parent = -1;
        for (int d = g.depth - 1; d >= 0 && r.parent < 0; d--) r.parent = g.stack[d];
        r.step = g.step;
        idx = (int)g.n_ranges;
        APPEND(g.ranges, g.n_ranges, g.cap_ranges, r);
        CUPTI_CHECK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1,
                                                           (uint64_t)idx + 1));
        uint64_t t = 0;
        CUPTI_CHECK(cuptiGetTimestamp(&t));
        g.ranges[idx].start_ns = t;
    }
    g.stack[g.depth++] = idx;
}

static void range_pop(void)
{
    if (g.depth == 0) {
        fprintf(stderr, "profiler: warning: prof_range_pop without a matching push (ignored)\n");
        return;
    }
    int idx = g.stack[--g.depth];
    const int nvtx = idx < 0 || g.ranges[idx].is_step != 2;
    if (idx >= 0) {
        uint64_t t = 0, last = 0;
        CUPTI_CHECK(cuptiGetTimestamp(&t));
        g.ranges[idx].end_ns = t;
        CUPTI_CHECK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1,
                                                          &last));
    }
    if (nvtx) nvtxRangePop();
}

void prof_range_push(const char *name) { range_push(name, 0); }

void prof_range_pop(void)
{
    if (g.in_step && g.depth <= g.step_base + g.step_range) {
        fprintf(stderr, "profiler: warning: prof_range_pop would close the step's attn_fwd range "
                "(ignored)\n");
        return;
    }
    range_pop();
}

void prof_step_begin(int step, int active)
{
    if (g.in_step) {
        fprintf(stderr, "profiler: warning: step %d begins inside step %d (closed first)\n",
                step, g.step);
        prof_step_end();
    }
    g.in_step = 1;
    g.step = step;
    g.recording = g.enabled && (step == 0 || (step >= 1 && active) ||
                                (step == PROF_STEP_TIMELINE && active));
    g.step_base = g.depth;
    if (g.recording)
        CUPTI_CHECK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                                           (uint64_t)step + 1));
    /* An active step is also a "ProfilerStep#N" range around attn_fwd, as torch.profiler's
     * schedule writes it (the trace numbers it step + 1: wait and warm-up are torch's steps 0
     * and 1); its table row is "ProfilerStep*", as key_averages() groups them. */
    g.step_range = 0;
    if (g.recording && step >= 1) {
        range_push("ProfilerStep*", 2);
        g.step_range++;
    }
    if (step == PROF_STEP_TIMELINE) {
        range_push("timeline pass", 3);
        g.step_range++;
    }
    if (step != 0) {
        range_push("attn_fwd", 1);
        g.step_range++;
    }
}

void prof_step_end(void)
{
    if (!g.in_step) {
        fprintf(stderr, "profiler: warning: prof_step_end outside a step (ignored)\n");
        return;
    }
    while (g.depth > g.step_base + g.step_range) {
        if (!g.warned_nesting) {
            fprintf(stderr, "profiler: warning: step %d ends with host ranges still open "
                    "(closed here)\n", g.step);
            g.warned_nesting = 1;
        }
        range_pop();
    }
    while (g.step_range-- > 0) range_pop();
    if (g.recording) {
        uint64_t last = 0;
        CUPTI_CHECK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                                          &last));
    }
    g.in_step = g.recording = g.step_range = 0;
}

/* ---- the join ------------------------------------------------------------------------------ */

typedef struct { uint32_t corr; uint64_t step_ext, range_ext; } corr_info;
typedef struct { uint32_t from, to; } corr_alias;

static int cmp_ext(const void *a, const void *b)
{
    const raw_ext *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}
static int cmp_corr_info(const void *a, const void *b)
{
    const corr_info *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}
static int cmp_alias(const void *a, const void *b)
{
    const corr_alias *x = a, *y = b;
    return (x->from > y->from) - (x->from < y->from);
}
static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}
static int cmp_raw_api_start(const void *a, const void *b)
{
    const raw_api *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->is_driver != y->is_driver) return x->is_driver - y->is_driver; /* runtime first */
    return (x->corr > y->corr) - (x->corr < y->corr);
}
static int cmp_api_start(const void *a, const void *b)
{
    const api_call *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return (x->correlation > y->correlation) - (x->correlation < y->correlation);
}
static int cmp_act_start(const void *a, const void *b)
{
    const gpu_activity *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return (x->correlation > y->correlation) - (x->correlation < y->correlation);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) { fprintf(stderr, "profiler: out of host memory\n"); attn_exit(1); }
    return p;
}

/* CUPTI's name of a callback id without its "_v7000"-style version suffix (Kineto keeps "_v2"). */
static const char *api_name(int is_driver, uint32_t cbid)
{
    const char *n = NULL;
    char buf[160];
    if (cuptiGetCallbackName(is_driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API,
                             cbid, &n) != CUPTI_SUCCESS || !n) {
        snprintf(buf, sizeof buf, "%s cbid %u", is_driver ? "driver" : "runtime", cbid);
    } else {
        snprintf(buf, sizeof buf, "%s", n);
        char *v = strrchr(buf, '_');
        if (v && v[1] == 'v' && strlen(v + 2) >= 4 && strspn(v + 2, "0123456789") == strlen(v + 2))
            *v = '\0';
    }
    pthread_mutex_lock(&g.lock);
    const char *s = intern(buf, 0);
    pthread_mutex_unlock(&g.lock);
    return s;
}

/* Builds *out from the raw records now in g (which it empties). t_end closes unclosed ranges. */
static void assemble(profile *out, uint64_t t_end, int resolve_names)
{
    pthread_mutex_lock(&g.lock);
    gpu_activity *acts = g.acts; size_t n_acts = g.n_acts;
    raw_api *apis = g.apis;      size_t n_apis = g.n_apis;
    raw_ext *exts = g.exts;      size_t n_exts = g.n_exts;
    g.acts = NULL; g.apis = NULL; g.exts = NULL;
    g.n_acts = g.n_apis = g.n_exts = g.cap_acts = g.cap_apis = g.cap_exts = 0;
    pthread_mutex_unlock(&g.lock);

    /* 1. correlation id -> (step, range) */
    qsort(exts, n_exts, sizeof *exts, cmp_ext);
    corr_info *ci = xcalloc(n_exts, sizeof *ci);
    size_t n_ci = 0;
    for (size_t i = 0; i < n_exts; i++) {
        if (n_ci == 0 || ci[n_ci - 1].corr != exts[i].corr) {
            ci[n_ci].corr = exts[i].corr;
            ci[n_ci].step_ext = ci[n_ci].range_ext = 0;
            n_ci++;
        }
        if (exts[i].kind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) ci[n_ci - 1].step_ext = exts[i].ext;
        else ci[n_ci - 1].range_ext = exts[i].ext;
    }

    /* 2. driver calls inside a runtime call of the same thread fold into it */
    qsort(apis, n_apis, sizeof *apis, cmp_raw_api_start);
    corr_alias *alias = xcalloc(n_apis, sizeof *alias);
    size_t n_alias = 0;
    uint8_t *folded = xcalloc(n_apis, 1);
    uint32_t *all_corr = xcalloc(n_apis, sizeof *all_corr);
    for (size_t i = 0; i < n_apis; i++) {
        all_corr[i] = apis[i].corr;
        if (!apis[i].is_driver) continue;
        for (size_t j = i; j-- > 0;) {
            if (apis[j].is_driver || apis[j].tid != apis[i].tid) continue;
            if (apis[j].start <= apis[i].start && apis[j].end >= apis[i].end) {
                alias[n_alias].from = apis[i].corr;
                alias[n_alias].to = apis[j].corr;
                n_alias++;
                folded[i] = 1;
            }
            break; /* only the latest runtime call of this thread can enclose it */
        }
    }
    qsort(alias, n_alias, sizeof *alias, cmp_alias);
    qsort(all_corr, n_apis, sizeof *all_corr, cmp_u32);

    size_t n_ranges = g.n_ranges;
    int max_step = 0;

    /* 3. API calls of kept steps */
    out->apis = xcalloc(n_apis, sizeof *out->apis);
    for (size_t i = 0; i < n_apis; i++) {
        if (folded[i]) continue;
        corr_info key = { apis[i].corr, 0, 0 };
        const corr_info *c = bsearch(&key, ci, n_ci, sizeof *ci, cmp_corr_info);
        if (!c || c->step_ext == 0) continue; /* inactive step or outside any step */
        api_call a;
        memset(&a, 0, sizeof a);
        a.name = apis[i].name ? apis[i].name
               : resolve_names ? api_name(apis[i].is_driver, apis[i].cbid) : "unknown";
        a.is_driver = apis[i].is_driver;
        a.cbid = apis[i].cbid;
        a.start_ns = apis[i].start;
        a.end_ns = apis[i].end;
        a.correlation = apis[i].corr;
        a.thread_id = apis[i].tid;
        a.step = (int)(c->step_ext - 1);
        a.range = c->range_ext >= 1 && c->range_ext <= n_ranges ? (int)(c->range_ext - 1) : -1;
        if (a.step > max_step) max_step = a.step;
        out->apis[out->n_apis++] = a;
    }
    /* kept calls by correlation id, for the launch-API lookup */
    api_call *by_corr = xcalloc(out->n_apis, sizeof *by_corr);
    memcpy(by_corr, out->apis, out->n_apis * sizeof *by_corr);
    for (size_t i = 1; i < out->n_apis; i++) { /* insertion sort on correlation (nearly sorted) */
        api_call x = by_corr[i];
        size_t j = i;
        while (j > 0 && by_corr[j - 1].correlation > x.correlation) { by_corr[j] = by_corr[j - 1]; j--; }
        by_corr[j] = x;
    }

    /* 4. GPU activities of kept steps */
    size_t unattributed = 0;
    out->acts = xcalloc(n_acts, sizeof *out->acts);
    for (size_t i = 0; i < n_acts; i++) {
        gpu_activity a = acts[i];
        corr_alias ak = { a.correlation, 0 };
        const corr_alias *al = bsearch(&ak, alias, n_alias, sizeof *alias, cmp_alias);
        if (al) a.correlation = al->to;
        if (!bsearch(&a.correlation, all_corr, n_apis, sizeof *all_corr, cmp_u32)) {
            unattributed++; /* launched by a call we do not trace */
            continue;
        }
        corr_info key = { a.correlation, 0, 0 };
        const corr_info *c = bsearch(&key, ci, n_ci, sizeof *ci, cmp_corr_info);
        if (!c || c->step_ext == 0) continue;
        a.step = (int)(c->step_ext - 1);
        a.range = c->range_ext >= 1 && c->range_ext <= n_ranges ? (int)(c->range_ext - 1) : -1;
        a.launch_api = NULL;
        size_t lo = 0, hi = out->n_apis;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (by_corr[mid].correlation < a.correlation) lo = mid + 1;
            else hi = mid;
        }
        if (lo < out->n_apis && by_corr[lo].correlation == a.correlation)
            a.launch_api = by_corr[lo].name;
        if (a.step > max_step) max_step = a.step;
        out->acts[out->n_acts++] = a;
    }
    qsort(out->acts, out->n_acts, sizeof *out->acts, cmp_act_start);
    qsort(out->apis, out->n_apis, sizeof *out->apis, cmp_api_start);

    /* 5. host ranges (already in start order: stamped at push, one thread) */
    out->ranges = g.ranges;
    out->n_ranges = g.n_ranges;
    g.ranges = NULL; g.n_ranges = g.cap_ranges = 0;
    for (size_t i = 0; i < out->n_ranges; i++) {
        if (out->ranges[i].end_ns == 0) out->ranges[i].end_ns = t_end;
        if (out->ranges[i].step > max_step) max_step = out->ranges[i].step;
    }
    out->active_steps = max_step;

    /* 6. names: the profile owns them */
    pthread_mutex_lock(&g.lock);
    out->strings = xcalloc(2 * g.n_names, sizeof *out->strings);
    for (size_t i = 0; i < g.n_names; i++) {
        out->strings[out->n_strings++] = g.names[i].key;
        if (g.names[i].value != g.names[i].key) out->strings[out->n_strings++] = g.names[i].value;
    }
    free(g.names);
    g.names = NULL; g.n_names = g.cap_names = 0;
    size_t no_ts = g.no_timestamp, lost = g.lost_buffers;
    g.no_timestamp = g.lost_buffers = 0;
    pthread_mutex_unlock(&g.lock);

    if (unattributed)
        fprintf(stderr, "profiler: warning: %zu GPU activities were launched by API calls the "
                "profiler does not trace; they are left out of the table and trace\n", unattributed);
    if (no_ts)
        fprintf(stderr, "profiler: warning: %zu kernel records had no timestamp (left out)\n", no_ts);
    if (lost)
        fprintf(stderr, "profiler: warning: %zu CUPTI buffers could not be allocated\n", lost);

    free(by_corr); free(all_corr); free(folded); free(alias); free(ci);
    free(acts); free(apis); free(exts);
}

void prof_finish(profile *out)
{
    memset(out, 0, sizeof *out);
    out->pid = (uint32_t)getpid();
    out->tid = gettid_();
    if (g.in_step) prof_step_end();
    while (g.depth > 0) range_pop();
    if (!g.enabled) return;

    CUDA_CHECK(cudaDeviceSynchronize());
    CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    for (size_t i = 0; i < sizeof KINDS / sizeof *KINDS; i++)
        CUPTI_CHECK(cuptiActivityDisable(KINDS[i]));
    set_api_tracing(0);
    CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    g.enabled = 0;

    size_t dropped = 0;
    CUPTI_CHECK(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped));
    uint64_t t_end = 0;
    CUPTI_CHECK(cuptiGetTimestamp(&t_end));
    uint32_t cupti_v = 0;
    int rt_v = 0, drv_v = 0;
    CUPTI_CHECK(cuptiGetVersion(&cupti_v));
    CUDA_CHECK(cudaRuntimeGetVersion(&rt_v));
    CUDA_CHECK(cudaDriverGetVersion(&drv_v));

    assemble(out, t_end, 1);
    out->dropped = dropped;
    out->cupti_version = (int)cupti_v;
    out->cuda_runtime_version = rt_v;
    out->cuda_driver_version = drv_v;
    if (dropped)
        fprintf(stderr, "profiler: warning: CUPTI dropped %zu records; the table and trace are "
                "incomplete\n", dropped);
}

void prof_free(profile *p)
{
    if (!p) return;
    free(p->acts);
    free(p->apis);
    free(p->ranges);
    for (size_t i = 0; i < p->n_strings; i++) free(p->strings[i]);
    free(p->strings);
    memset(p, 0, sizeof *p);
}

void prof_count_step(const profile *p, int step, int *kernels, int *memcpys, int *memsets)
{
    int k = 0, c = 0, s = 0;
    for (size_t i = 0; i < p->n_acts; i++) {
        if (p->acts[i].step != step) continue;
        if (p->acts[i].kind == ACT_KERNEL) k++;
        else if (p->acts[i].kind == ACT_MEMCPY) c++;
        else s++;
    }
    if (kernels) *kernels = k;
    if (memcpys) *memcpys = c;
    if (memsets) *memsets = s;
}

/* ---- unit-test hooks (profiler.h) ----------------------------------------------------- */

void prof_test_api(int is_driver, const char *name, uint64_t start, uint64_t end, uint32_t corr,
                   uint32_t tid)
{
    raw_api x = { start, end, 0, corr, tid, is_driver, NULL };
    pthread_mutex_lock(&g.lock);
    x.name = intern(name, 0);
    APPEND(g.apis, g.n_apis, g.cap_apis, x);
    pthread_mutex_unlock(&g.lock);
}

void prof_test_ext(int custom, uint64_t ext, uint32_t corr)
{
    raw_ext x = { corr, custom ? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1
                               : CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, ext };
    pthread_mutex_lock(&g.lock);
    APPEND(g.exts, g.n_exts, g.cap_exts, x);
    pthread_mutex_unlock(&g.lock);
}

void prof_test_activity(const gpu_activity *a)
{
    gpu_activity x = *a;
    add_activity(&x, a->name, a->kind == ACT_KERNEL);
}

void prof_test_range(const char *name, int is_step, int parent, uint64_t start, uint64_t end,
                     int step)
{
    host_range r;
    memset(&r, 0, sizeof r);
    pthread_mutex_lock(&g.lock);
    r.name = intern(name, 0);
    pthread_mutex_unlock(&g.lock);
    r.is_step = is_step;
    r.parent = parent;
    r.depth = parent < 0 ? 0 : g.ranges[parent].depth + 1;
    r.start_ns = start;
    r.end_ns = end;
    r.step = step;
    APPEND(g.ranges, g.n_ranges, g.cap_ranges, r);
}

void prof_test_assemble(profile *out, uint64_t t_end)
{
    memset(out, 0, sizeof *out);
    out->pid = (uint32_t)getpid();
    out->tid = gettid_();
    assemble(out, t_end, 0);
}
