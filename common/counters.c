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
 * libcupti loads libnvperf_host.so with dlopen when the host object is made; libcupti has no
 * RPATH, and our binaries' RUNPATH does not apply to its dlopen. So we load it first, from the
 * directory libcupti itself was loaded from (dladdr), with the bare name as the fallback: once
 * loaded, the dynamic linker hands libcupti the same object by its soname.
 *
 * cupti_profiler_host.h includes C++'s <string> (it uses nothing from it): the C build puts an
 * empty `string` on its include path (common/c_shim, CFLAGS only).
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
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
#include <cupti_target.h>

#include "check.h"
#include "counters.h"

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

/* One reason, then UNAVAILABLE. printf-style. */
static void unavailable(counter_pass *c, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void unavailable(counter_pass *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char why[sizeof c->why];
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    free(c->k);
    c->k = NULL;
    c->n = 0;
    c->state = COUNTERS_UNAVAILABLE;
    snprintf(c->why, sizeof c->why, "%s", why);
}

/* "cuptiX failed: CUPTI_ERROR_Y (message)" into c, for a failed call. */
static void cupti_failed(counter_pass *c, const char *call, CUptiResult r)
{
    const char *m = NULL;
    cuptiGetResultString(r, &m);
    const char *hint = "";
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        hint = "; the driver restricts GPU performance counters to admin users "
               "(NVreg_RestrictProfilingToAdminUsers)";
    else if (r == CUPTI_ERROR_NOT_INITIALIZED)
        hint = "; libnvperf_host.so could not be loaded?";
    unavailable(c, "%s failed: %s%s", call, m ? m : "unknown CUPTI error", hint);
}

/* Loads libnvperf_host.so from libcupti's directory (see the file comment). Best effort. */
void counters_preload_nvperf_host(void)
{
    Dl_info info;
    memset(&info, 0, sizeof info);
    if (dladdr((void *)&cuptiGetVersion, &info) && info.dli_fname) {
        char path[4096];
        snprintf(path, sizeof path, "%s", info.dli_fname);
        char *slash = strrchr(path, '/');
        if (slash) {
            snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "libnvperf_host.so");
            if (dlopen(path, RTLD_NOW | RTLD_GLOBAL)) return;
        }
    }
    (void)dlopen("libnvperf_host.so", RTLD_NOW | RTLD_GLOBAL);
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

typedef struct {
    CUpti_Profiler_Host_Object *host;
    CUpti_RangeProfiler_Object *rp;
    uint8_t *avail, *config, *data;
    size_t config_size, data_size;
    int initialized;
} session;

static void session_end(session *s)
{
    if (s->rp) {
        CUpti_RangeProfiler_Disable_Params d = { .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE };
        d.pRangeProfilerObject = s->rp;
        (void)cuptiRangeProfilerDisable(&d);
    }
    if (s->host) {
        CUpti_Profiler_Host_Deinitialize_Params d = { .structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE };
        d.pHostObject = s->host;
        (void)cuptiProfilerHostDeinitialize(&d);
    }
    if (s->initialized) {
        CUpti_Profiler_DeInitialize_Params d = { .structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE };
        (void)cuptiProfilerDeInitialize(&d);
    }
    free(s->avail);
    free(s->config);
    free(s->data);
    memset(s, 0, sizeof *s);
}

static CUptiResult host_init(session *s, const char *chip)
{
    CUpti_Profiler_Host_Initialize_Params h = { .structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE };
    h.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    h.pChipName = chip;
    h.pCounterAvailabilityImage = s->avail;
    CUptiResult r = cuptiProfilerHostInitialize(&h);
    s->host = r == CUPTI_SUCCESS ? h.pHostObject : NULL;
    return r;
}

static CUptiResult add_metrics(session *s, const char **names, size_t n)
{
    CUpti_Profiler_Host_ConfigAddMetrics_Params a = { .structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE };
    a.pHostObject = s->host;
    a.ppMetricNames = names;
    a.numMetrics = n;
    return cuptiProfilerHostConfigAddMetrics(&a);
}

#define TRY(call, name) do { CUptiResult r_ = (call); if (r_ != CUPTI_SUCCESS) { \
    cupti_failed(out, name, r_); goto done; } } while (0)

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
    const char *names[CTR_N];
    int index[CTR_N];          /* names[j] is metric index[j] */
    size_t n_names = 0;

    CUDA_CHECK(cudaDeviceSynchronize());
    CUcontext ctx = current_context();
    if (!ctx) {
        unavailable(out, "no current CUDA context for the counter pass");
        goto done;
    }
    counters_preload_nvperf_host();

    CUpti_Profiler_Initialize_Params init = { .structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE };
    TRY(cuptiProfilerInitialize(&init), "cuptiProfilerInitialize");
    s.initialized = 1;

    CUpti_Profiler_DeviceSupported_Params sup = { .structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE };
    sup.cuDevice = (CUdevice)device;
    sup.api = CUPTI_PROFILER_RANGE_PROFILING;
    TRY(cuptiProfilerDeviceSupported(&sup), "cuptiProfilerDeviceSupported");
    if (sup.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
        unavailable(out, "the Range Profiler does not support this device or configuration "
                    "(architecture %d, SLI %d, vGPU %d, confidential compute %d, CMP %d, WSL %d; "
                    "3 = supported)", sup.architecture, sup.sli, sup.vGpu, sup.confidentialCompute,
                    sup.cmp, sup.wsl);
        goto done;
    }

    CUpti_Device_GetChipName_Params chip = { .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE };
    chip.deviceIndex = (size_t)device;
    TRY(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");

    CUpti_Profiler_GetCounterAvailability_Params av = { .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE };
    av.ctx = ctx;
    TRY(cuptiProfilerGetCounterAvailability(&av), "cuptiProfilerGetCounterAvailability");
    s.avail = calloc(av.counterAvailabilityImageSize ? av.counterAvailabilityImageSize : 1, 1);
    if (!s.avail) { unavailable(out, "out of host memory"); goto done; }
    av.pCounterAvailabilityImage = s.avail;
    TRY(cuptiProfilerGetCounterAvailability(&av), "cuptiProfilerGetCounterAvailability");

    /* The metric names this device knows (the rows of the counter pass's two passes): each
     * tried alone on a scratch host object; the refused ones read NaN, named on one line. */
    char refused[1024] = "";
    int n_refused = 0;
    for (int m = 0; m < CTR_N; m++) {
        if (METRICS[m].pass != MP_RANGE && METRICS[m].pass != MP_STALL) continue;
        TRY(host_init(&s, chip.pChipName), "cuptiProfilerHostInitialize");
        const char *one = METRICS[m].cupti;
        if (add_metrics(&s, &one, 1) == CUPTI_SUCCESS) {
            index[n_names] = m;
            names[n_names++] = one;
        } else {
            const size_t used = strlen(refused);
            snprintf(refused + used, sizeof refused - used, "%s%s", n_refused ? ", " : "", one);
            n_refused++;
        }
        CUpti_Profiler_Host_Deinitialize_Params d = { .structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE };
        d.pHostObject = s.host;
        (void)cuptiProfilerHostDeinitialize(&d);
        s.host = NULL;
    }
    if (n_refused)
        fprintf(stderr, "counters: note: %d metric%s not available on %s (read -): %s\n", n_refused,
                n_refused == 1 ? "" : "s", chip.pChipName, refused);
    if (n_names == 0) {
        unavailable(out, "none of the metrics is available on %s", chip.pChipName);
        goto done;
    }
    TRY(host_init(&s, chip.pChipName), "cuptiProfilerHostInitialize");
    TRY(add_metrics(&s, names, n_names), "cuptiProfilerHostConfigAddMetrics");

    CUpti_Profiler_Host_GetConfigImageSize_Params cs = { .structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE };
    cs.pHostObject = s.host;
    TRY(cuptiProfilerHostGetConfigImageSize(&cs), "cuptiProfilerHostGetConfigImageSize");
    s.config_size = cs.configImageSize;
    s.config = calloc(s.config_size ? s.config_size : 1, 1);
    if (!s.config) { unavailable(out, "out of host memory"); goto done; }
    CUpti_Profiler_Host_GetConfigImage_Params ci = { .structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE };
    ci.pHostObject = s.host;
    ci.configImageSize = s.config_size;
    ci.pConfigImage = s.config;
    TRY(cuptiProfilerHostGetConfigImage(&ci), "cuptiProfilerHostGetConfigImage");
    CUpti_Profiler_Host_GetNumOfPasses_Params np = { .structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE };
    np.configImageSize = s.config_size;
    np.pConfigImage = s.config;
    TRY(cuptiProfilerHostGetNumOfPasses(&np), "cuptiProfilerHostGetNumOfPasses");
    out->passes = (int)np.numOfPasses;

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
    if (!s.data) { unavailable(out, "out of host memory"); goto done; }
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = { .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE };
    di.pRangeProfilerObject = s.rp;
    di.counterDataSize = s.data_size;
    di.pCounterData = s.data;
    TRY(cuptiRangeProfilerCounterDataImageInitialize(&di), "cuptiRangeProfilerCounterDataImageInitialize");

    CUpti_RangeProfiler_SetConfig_Params sc = { .structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE };
    sc.pRangeProfilerObject = s.rp;
    sc.configSize = s.config_size;
    sc.pConfig = s.config;
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
        if (iter + 1 >= 16) {
            unavailable(out, "the Range Profiler still wanted passes after %d forwards", iter + 1);
            goto done;
        }
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
    if (!out->k) { unavailable(out, "out of host memory"); goto done; }
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
        ev.pHostObject = s.host;
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
    if (out->state == COUNTERS_UNAVAILABLE)
        fprintf(stderr, "counters: unavailable: %s; the counter columns read -\n", out->why);
}
