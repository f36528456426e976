/* counters.c: the counter pass (counters.h) with CUPTI's Range Profiler and Profiler Host API,
 * CUDA 13.0, plain C.
 *
 * Call sequence (CUPTI docs, "CUPTI Range Profiling API" and "Profiler Host API"; NVIDIA's
 * range_profiling sample): cuptiProfilerInitialize -> cuptiProfilerDeviceSupported ->
 * cuptiDeviceGetChipName -> cuptiProfilerGetCounterAvailability -> cuptiProfilerHostInitialize ->
 * ConfigAddMetrics -> GetConfigImage -> GetNumOfPasses -> cuptiRangeProfilerEnable ->
 * GetCounterDataSize + CounterDataImageInitialize -> SetConfig (auto range, kernel replay) ->
 * Start, the forward, synchronize, Stop (until all passes are submitted) -> DecodeData ->
 * GetCounterDataInfo -> EvaluateToGpuValues per range -> Disable, HostDeinitialize,
 * cuptiProfilerDeInitialize. Every params struct is zeroed, structSize set, pPriv NULL.
 *
 * The Profiler Host API side (initialize, chip name, host object, config image, teardown) is
 * cupti_host.c's, shared with the timeline pass.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>

#include "check.h"
#include "counters.h"
#include "cupti_host.h"

/* Ranges the counter data image holds: more kernels than this in one forward are dropped (and
 * reported). 03_math launches 20 activities per forward. */
enum { MAX_RANGES = 256 };

void counters_set_state(counter_pass *c, counters_state state, const char *why)
{
    memset(c, 0, sizeof *c);
    c->state = state;
    snprintf(c->why, sizeof c->why, "%s", why ? why : "");
}

void counters_free(counter_pass *c)
{
    if (!c) return;
    free(c->k);
    memset(c, 0, sizeof *c);
}

/* The current context, through the runtime's driver entry point (the harness links no -lcuda). */
static CUcontext current_context(void)
{
    typedef CUresult (*ctx_get_fn)(CUcontext *);
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    CUDA_CHECK(cudaFree(0)); /* the primary context exists and is current */
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q));
    CUcontext ctx = NULL;
    if (q != cudaDriverEntryPointSuccess || !fn || ((ctx_get_fn)fn)(&ctx) != CUDA_SUCCESS) return NULL;
    return ctx;
}

/* The pass's CUPTI state: the host side (cupti_host.h), the Range Profiler object, the counter
 * data image. */
typedef struct {
    cupti_host h;
    CUpti_RangeProfiler_Object *rp;
    uint8_t *data;
    size_t data_size;
} session;

static void session_end(session *s)
{
    if (s->rp) {
        CUpti_RangeProfiler_Disable_Params d = { .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE };
        d.pRangeProfilerObject = s->rp;
        (void)cuptiRangeProfilerDisable(&d); /* teardown: nothing left to report */
        s->rp = NULL;
    }
    cupti_host_end(&s->h);
    free(s->data);
    s->data = NULL;
}

/* A failed CUPTI call: its reason into the session, then the pass's end. */
#define TRY(call, name) do { CUptiResult r_ = (call); if (r_ != CUPTI_SUCCESS) { \
    cupti_host_failed(&s.h, name, r_); goto done; } } while (0)
/* A reason of the pass's own, printf-style. */
#define FAIL(...) do { cupti_host_whyf(&s.h, __VA_ARGS__); goto done; } while (0)

void counters_run(counter_pass *out, int device, void (*forward)(void *arg), void *arg)
{
    counters_set_state(out, COUNTERS_NOT_RUN, NULL);
    const char *owner = prof_cupti_owner();
    if (owner) {
        counters_set_state(out, COUNTERS_OFF, owner);
        return;
    }
    session s;
    memset(&s, 0, sizeof s);
    cupti_host_init(&s.h, CUPTI_ERROR_NOT_INITIALIZED, "; libnvperf_host.so could not be loaded?");
    const char *names[CTR_N];
    int index[CTR_N];          /* names[j] is metric index[j] */
    size_t n_names = 0;

    CUDA_CHECK(cudaDeviceSynchronize());
    CUcontext ctx = current_context();
    if (!ctx) FAIL("no current CUDA context for the counter pass");
    if (cupti_host_begin(&s.h) != 0) goto done;

    CUpti_Profiler_DeviceSupported_Params sup = { .structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE };
    sup.cuDevice = (CUdevice)device;
    sup.api = CUPTI_PROFILER_RANGE_PROFILING;
    TRY(cuptiProfilerDeviceSupported(&sup), "cuptiProfilerDeviceSupported");
    if (sup.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        FAIL("the Range Profiler does not support this device or configuration (architecture %d, "
             "SLI %d, vGPU %d, confidential compute %d, CMP %d, WSL %d; 3 = supported)",
             sup.architecture, sup.sli, sup.vGpu, sup.confidentialCompute, sup.cmp, sup.wsl);
    if (cupti_host_chip(&s.h, device) != 0) goto done;

    CUpti_Profiler_GetCounterAvailability_Params av = { .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE };
    av.ctx = ctx;
    TRY(cuptiProfilerGetCounterAvailability(&av), "cuptiProfilerGetCounterAvailability");
    if (cupti_host_alloc_avail(&s.h, av.counterAvailabilityImageSize) != 0) goto done;
    av.pCounterAvailabilityImage = s.h.avail;
    TRY(cuptiProfilerGetCounterAvailability(&av), "cuptiProfilerGetCounterAvailability");

    /* The metric names this device knows (the rows of the counter pass's two passes): each
     * tried alone on a scratch host object; the refused ones read NaN, named on one line. */
    char refused[1024] = "";
    int n_refused = 0;
    for (int m = 0; m < CTR_N; m++) {
        if (METRICS[m].pass != MP_RANGE && METRICS[m].pass != MP_STALL) continue;
        if (cupti_host_object(&s.h, CUPTI_PROFILER_TYPE_RANGE_PROFILER) != 0) goto done;
        const char *one = METRICS[m].cupti;
        if (cupti_host_add_metrics(&s.h, &one, 1) == CUPTI_SUCCESS) {
            index[n_names] = m;
            names[n_names++] = one;
        } else {
            const size_t used = strlen(refused);
            snprintf(refused + used, sizeof refused - used, "%s%s", n_refused ? ", " : "", one);
            n_refused++;
        }
        cupti_host_object_end(&s.h);
    }
    if (n_refused)
        fprintf(stderr, "counters: note: %d metric%s not available on %s (read -): %s\n", n_refused,
                n_refused == 1 ? "" : "s", s.h.chip, refused);
    if (n_names == 0) FAIL("none of the metrics is available on %s", s.h.chip);
    if (cupti_host_object(&s.h, CUPTI_PROFILER_TYPE_RANGE_PROFILER) != 0) goto done;
    TRY(cupti_host_add_metrics(&s.h, names, n_names), "cuptiProfilerHostConfigAddMetrics");
    if (cupti_host_config(&s.h) != 0) goto done;
    out->passes = (int)s.h.passes;

    CUpti_RangeProfiler_Enable_Params en = { .structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE };
    en.ctx = ctx;
    TRY(cuptiRangeProfilerEnable(&en), "cuptiRangeProfilerEnable");
    s.rp = en.pRangeProfilerObject;

    CUpti_RangeProfiler_GetCounterDataSize_Params ds = { .structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE };
    ds.pRangeProfilerObject = s.rp;
    ds.pMetricNames = names;
    ds.numMetrics = n_names;
    ds.maxNumOfRanges = MAX_RANGES;
    ds.maxNumRangeTreeNodes = MAX_RANGES;
    TRY(cuptiRangeProfilerGetCounterDataSize(&ds), "cuptiRangeProfilerGetCounterDataSize");
    s.data_size = ds.counterDataSize;
    s.data = calloc(s.data_size ? s.data_size : 1, 1);
    if (!s.data) FAIL("out of host memory");
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = { .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE };
    di.pRangeProfilerObject = s.rp;
    di.counterDataSize = s.data_size;
    di.pCounterData = s.data;
    TRY(cuptiRangeProfilerCounterDataImageInitialize(&di), "cuptiRangeProfilerCounterDataImageInitialize");

    CUpti_RangeProfiler_SetConfig_Params sc = { .structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE };
    sc.pRangeProfilerObject = s.rp;
    sc.configSize = s.h.config_size;
    sc.pConfig = s.h.config;
    sc.counterDataImageSize = s.data_size;
    sc.pCounterDataImage = s.data;
    sc.range = CUPTI_AutoRange;
    sc.replayMode = CUPTI_KernelReplay;
    sc.maxRangesPerPass = MAX_RANGES;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    TRY(cuptiRangeProfilerSetConfig(&sc), "cuptiRangeProfilerSetConfig");

    /* Kernel replay replays each kernel inside its launch: one iteration submits every pass. The
     * loop bound guards against a CUPTI that asks for more. */
    for (int iter = 0;; iter++) {
        CUpti_RangeProfiler_Start_Params st = { .structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE };
        st.pRangeProfilerObject = s.rp;
        TRY(cuptiRangeProfilerStart(&st), "cuptiRangeProfilerStart");
        forward(arg);
        CUDA_CHECK(cudaDeviceSynchronize());
        CUpti_RangeProfiler_Stop_Params sp = { .structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };
        sp.pRangeProfilerObject = s.rp;
        TRY(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop");
        if (sp.isAllPassSubmitted) break;
        if (iter + 1 >= 16) FAIL("the Range Profiler still wanted passes after %d forwards", iter + 1);
    }

    CUpti_RangeProfiler_DecodeData_Params dd = { .structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE };
    dd.pRangeProfilerObject = s.rp;
    TRY(cuptiRangeProfilerDecodeData(&dd), "cuptiRangeProfilerDecodeData");
    if (dd.numOfRangeDropped)
        fprintf(stderr, "counters: warning: %zu kernel ranges dropped (more than %d kernels in "
                "one forward)\n", dd.numOfRangeDropped, (int)MAX_RANGES);

    CUpti_RangeProfiler_GetCounterDataInfo_Params info = { .structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE };
    info.pCounterDataImage = s.data;
    info.counterDataImageSize = s.data_size;
    TRY(cuptiRangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo");

    out->k = calloc(info.numTotalRanges ? info.numTotalRanges : 1, sizeof *out->k);
    if (!out->k) FAIL("out of host memory");
    out->n = info.numTotalRanges;
    for (size_t i = 0; i < out->n; i++) {
        double values[CTR_N];
        for (int m = 0; m < CTR_N; m++) out->k[i].v[m] = NAN;
        /* Auto ranges are named by launch order, "0", "1", ...: place range i by its name. */
        size_t slot = i;
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri = { .structSize = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE };
        ri.pCounterDataImage = s.data;
        ri.counterDataImageSize = s.data_size;
        ri.rangeIndex = i;
        ri.rangeDelimiter = "/";
        if (cuptiRangeProfilerCounterDataGetRangeInfo(&ri) == CUPTI_SUCCESS && ri.rangeName) {
            char *end = NULL;
            unsigned long v = strtoul(ri.rangeName, &end, 10);
            if (end && end != ri.rangeName && *end == '\0' && v < out->n) slot = v;
        }
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = { .structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE };
        ev.pHostObject = s.h.host;
        ev.pCounterDataImage = s.data;
        ev.counterDataImageSize = s.data_size;
        ev.rangeIndex = i;
        ev.ppMetricNames = names;
        ev.numMetrics = n_names;
        ev.pMetricValues = values;
        TRY(cuptiProfilerHostEvaluateToGpuValues(&ev), "cuptiProfilerHostEvaluateToGpuValues");
        for (size_t j = 0; j < n_names; j++) out->k[slot].v[index[j]] = values[j];
    }
    out->state = COUNTERS_ON;
    out->why[0] = '\0';

done:
    session_end(&s);
    if (out->state != COUNTERS_ON) {
        free(out->k);
        out->k = NULL;
        out->n = 0;
        out->state = COUNTERS_UNAVAILABLE;
        snprintf(out->why, sizeof out->why, "%s", s.h.why);
        fprintf(stderr, "counters: unavailable: %s; the counter columns read -\n", out->why);
    }
}
