/* pm_metrics.c: what the device's CUPTI offers for the metric table (common/metrics.h). Host API
 * only (no kernel); tests/probes/pm_metrics.sh builds and runs it. Prints, for the Range
 * Profiler and for PM sampling: the base metrics whose names contain "stall" or "pipe_tensor";
 * each metric-table row of that pass that the host object refuses; and the passes the whole
 * set needs (counter pass: MP_RANGE + MP_STALL rows; timeline: MP_PM rows, which must be 1). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "metrics.h"

#define CK(call) do { CUptiResult r_ = (call); if (r_ != CUPTI_SUCCESS) { const char *m_ = NULL; \
    cuptiGetResultString(r_, &m_); printf("FAIL %s: %s\n", #call, m_ ? m_ : "?"); return 1; } } while (0)

static CUpti_Profiler_Host_Object *host_new(CUpti_ProfilerType type, const char *chip,
                                            uint8_t *avail)
{
    CUpti_Profiler_Host_Initialize_Params h = { .structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE };
    h.profilerType = type;
    h.pChipName = chip;
    h.pCounterAvailabilityImage = avail;
    return cuptiProfilerHostInitialize(&h) == CUPTI_SUCCESS ? h.pHostObject : NULL;
}

static void host_free(CUpti_Profiler_Host_Object *h)
{
    CUpti_Profiler_Host_Deinitialize_Params d = { .structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE };
    d.pHostObject = h;
    (void)cuptiProfilerHostDeinitialize(&d);
}

static void list_base(const char *what, CUpti_Profiler_Host_Object *h)
{
    for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; t++) {
        CUpti_Profiler_Host_GetBaseMetrics_Params b = { .structSize = CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE };
        b.pHostObject = h;
        b.metricType = (CUpti_MetricType)t;
        if (cuptiProfilerHostGetBaseMetrics(&b) != CUPTI_SUCCESS) continue;
        for (size_t i = 0; i < b.numMetrics; i++)
            if (strstr(b.ppMetricNames[i], "stall") || strstr(b.ppMetricNames[i], "pipe_tensor"))
                printf("%s base metric: %s\n", what, b.ppMetricNames[i]);
    }
}

/* Rows of the passes in mask, each alone (refusals printed), then together: the passes. */
static void try_set(const char *what, CUpti_ProfilerType type, const char *chip, uint8_t *avail,
                    int mask)
{
    const char *names[CTR_N];
    size_t n = 0;
    for (int m = 0; m < CTR_N; m++) {
        if (!(mask & (1 << METRICS[m].pass))) continue;
        CUpti_Profiler_Host_Object *h = host_new(type, chip, avail);
        if (!h) { printf("%s: host init failed\n", what); return; }
        CUpti_Profiler_Host_ConfigAddMetrics_Params a = { .structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE };
        a.pHostObject = h;
        const char *one = METRICS[m].cupti;
        a.ppMetricNames = &one;
        a.numMetrics = 1;
        if (cuptiProfilerHostConfigAddMetrics(&a) == CUPTI_SUCCESS) names[n++] = METRICS[m].cupti;
        else printf("%s refuses: %s\n", what, METRICS[m].cupti);
        host_free(h);
    }
    CUpti_Profiler_Host_Object *h = host_new(type, chip, avail);
    CUpti_Profiler_Host_ConfigAddMetrics_Params a = { .structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE };
    a.pHostObject = h;
    a.ppMetricNames = names;
    a.numMetrics = n;
    CUptiResult r = cuptiProfilerHostConfigAddMetrics(&a);
    CUpti_Profiler_Host_GetConfigImageSize_Params cs = { .structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE };
    cs.pHostObject = h;
    if (r == CUPTI_SUCCESS) r = cuptiProfilerHostGetConfigImageSize(&cs);
    uint8_t *img = calloc(cs.configImageSize + 1, 1);
    CUpti_Profiler_Host_GetConfigImage_Params ci = { .structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE };
    ci.pHostObject = h;
    ci.configImageSize = cs.configImageSize;
    ci.pConfigImage = img;
    if (r == CUPTI_SUCCESS) r = cuptiProfilerHostGetConfigImage(&ci);
    CUpti_Profiler_Host_GetNumOfPasses_Params np = { .structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE };
    np.configImageSize = cs.configImageSize;
    np.pConfigImage = img;
    if (r == CUPTI_SUCCESS) r = cuptiProfilerHostGetNumOfPasses(&np);
    if (r == CUPTI_SUCCESS) printf("%s: %zu metrics accepted, %zu pass(es)\n", what, n, np.numOfPasses);
    else printf("%s: config of %zu metrics failed (CUPTI error %d)\n", what, n, (int)r);
    free(img);
    host_free(h);
}

int main(void)
{
    CUcontext ctx = NULL;
    if (cudaFree(0) != cudaSuccess) { printf("FAIL no CUDA device\n"); return 1; }
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q);
    if (fn) ((CUresult (*)(CUcontext *))fn)(&ctx);
    Dl_info info;
    if (dladdr((void *)&cuptiGetVersion, &info) && info.dli_fname) {
        char path[4096];
        snprintf(path, sizeof path, "%s", info.dli_fname);
        char *slash = strrchr(path, '/');
        if (slash) { strcpy(slash + 1, "libnvperf_host.so"); dlopen(path, RTLD_NOW | RTLD_GLOBAL); }
    }
    CUpti_Profiler_Initialize_Params init = { .structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE };
    CK(cuptiProfilerInitialize(&init));
    CUpti_Device_GetChipName_Params chip = { .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE };
    CK(cuptiDeviceGetChipName(&chip));
    printf("chip %s\n", chip.pChipName);

    CUpti_Profiler_GetCounterAvailability_Params av = { .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE };
    av.ctx = ctx;
    CK(cuptiProfilerGetCounterAvailability(&av));
    uint8_t *ravail = calloc(av.counterAvailabilityImageSize + 1, 1);
    av.pCounterAvailabilityImage = ravail;
    CK(cuptiProfilerGetCounterAvailability(&av));
    CUpti_PmSampling_GetCounterAvailability_Params pav = { .structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE };
    CK(cuptiPmSamplingGetCounterAvailability(&pav));
    uint8_t *pavail = calloc(pav.counterAvailabilityImageSize + 1, 1);
    pav.pCounterAvailabilityImage = pavail;
    CK(cuptiPmSamplingGetCounterAvailability(&pav));

    CUpti_Profiler_Host_Object *h = host_new(CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip.pChipName, ravail);
    if (h) { list_base("range", h); host_free(h); }
    h = host_new(CUPTI_PROFILER_TYPE_PM_SAMPLING, chip.pChipName, pavail);
    if (h) { list_base("pm", h); host_free(h); }
    try_set("range core", CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip.pChipName, ravail, 1 << MP_RANGE);
    try_set("range stall", CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip.pChipName, ravail, 1 << MP_STALL);
    try_set("range core+stall", CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip.pChipName, ravail,
            (1 << MP_RANGE) | (1 << MP_STALL));
    try_set("pm timeline", CUPTI_PROFILER_TYPE_PM_SAMPLING, chip.pChipName, pavail, 1 << MP_PM);
    CUpti_Profiler_DeInitialize_Params de = { .structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE };
    cuptiProfilerDeInitialize(&de);
    return 0;
}
