/* cupti_host.c: the Profiler Host API side of the counter pass and the timeline pass
 * (cupti_host.h), CUDA 13.0, plain C. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "cupti_host.h"

void cupti_host_init(cupti_host *h, CUptiResult hint_code, const char *hint)
{
    memset(h, 0, sizeof *h);
    h->hint_code = hint_code;
    h->hint = hint;
}

int cupti_host_whyf(cupti_host *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->why, sizeof h->why, fmt, ap);
    va_end(ap);
    return -1;
}

int cupti_host_failed(cupti_host *h, const char *call, CUptiResult r)
{
    const char *m = NULL;
    cuptiGetResultString(r, &m);
    const char *hint = "";
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        hint = "; the driver restricts GPU performance counters to admin users "
               "(NVreg_RestrictProfilingToAdminUsers)";
    else if (h->hint && r == h->hint_code)
        hint = h->hint;
    return cupti_host_whyf(h, "%s failed: %s%s", call, m ? m : "unknown CUPTI error", hint);
}

/* Loads libnvperf_host.so from libcupti's directory (see cupti_host.h). Best effort. */
static void preload_nvperf_host(void)
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

int cupti_host_begin(cupti_host *h)
{
    preload_nvperf_host();
    CUpti_Profiler_Initialize_Params init = { .structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE };
    const CUptiResult r = cuptiProfilerInitialize(&init);
    if (r != CUPTI_SUCCESS) return cupti_host_failed(h, "cuptiProfilerInitialize", r);
    h->initialized = 1;
    return 0;
}

int cupti_host_chip(cupti_host *h, int device)
{
    CUpti_Device_GetChipName_Params chip = { .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE };
    chip.deviceIndex = (size_t)device;
    const CUptiResult r = cuptiDeviceGetChipName(&chip);
    if (r != CUPTI_SUCCESS) return cupti_host_failed(h, "cuptiDeviceGetChipName", r);
    h->chip = chip.pChipName;
    return 0;
}

int cupti_host_alloc_avail(cupti_host *h, size_t size)
{
    free(h->avail);
    h->avail = calloc(size ? size : 1, 1);
    return h->avail ? 0 : cupti_host_whyf(h, "out of host memory");
}

int cupti_host_object(cupti_host *h, CUpti_ProfilerType type)
{
    CUpti_Profiler_Host_Initialize_Params p = { .structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE };
    p.profilerType = type;
    p.pChipName = h->chip;
    p.pCounterAvailabilityImage = h->avail;
    const CUptiResult r = cuptiProfilerHostInitialize(&p);
    if (r != CUPTI_SUCCESS) {
        h->host = NULL;
        return cupti_host_failed(h, "cuptiProfilerHostInitialize", r);
    }
    h->host = p.pHostObject;
    return 0;
}

CUptiResult cupti_host_add_metrics(cupti_host *h, const char **names, size_t n)
{
    CUpti_Profiler_Host_ConfigAddMetrics_Params p = { .structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE };
    p.pHostObject = h->host;
    p.ppMetricNames = names;
    p.numMetrics = n;
    return cuptiProfilerHostConfigAddMetrics(&p);
}

int cupti_host_config(cupti_host *h)
{
    CUpti_Profiler_Host_GetConfigImageSize_Params cs = { .structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE };
    cs.pHostObject = h->host;
    CUptiResult r = cuptiProfilerHostGetConfigImageSize(&cs);
    if (r != CUPTI_SUCCESS) return cupti_host_failed(h, "cuptiProfilerHostGetConfigImageSize", r);
    free(h->config);
    h->config_size = cs.configImageSize;
    h->config = calloc(h->config_size ? h->config_size : 1, 1);
    if (!h->config) return cupti_host_whyf(h, "out of host memory");
    CUpti_Profiler_Host_GetConfigImage_Params ci = { .structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE };
    ci.pHostObject = h->host;
    ci.configImageSize = h->config_size;
    ci.pConfigImage = h->config;
    r = cuptiProfilerHostGetConfigImage(&ci);
    if (r != CUPTI_SUCCESS) return cupti_host_failed(h, "cuptiProfilerHostGetConfigImage", r);
    CUpti_Profiler_Host_GetNumOfPasses_Params np = { .structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE };
    np.configImageSize = h->config_size;
    np.pConfigImage = h->config;
    r = cuptiProfilerHostGetNumOfPasses(&np);
    if (r != CUPTI_SUCCESS) return cupti_host_failed(h, "cuptiProfilerHostGetNumOfPasses", r);
    h->passes = np.numOfPasses;
    return 0;
}

void cupti_host_object_end(cupti_host *h)
{
    if (!h->host) return;
    CUpti_Profiler_Host_Deinitialize_Params d = { .structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE };
    d.pHostObject = h->host;
    (void)cuptiProfilerHostDeinitialize(&d); /* teardown: nothing left to report */
    h->host = NULL;
}

void cupti_host_end(cupti_host *h)
{
    cupti_host_object_end(h);
    if (h->initialized) {
        CUpti_Profiler_DeInitialize_Params d = { .structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE };
        (void)cuptiProfilerDeInitialize(&d);
        h->initialized = 0;
    }
    free(h->avail);
    free(h->config);
    h->avail = h->config = NULL;
    h->config_size = h->passes = 0;
    h->chip = NULL;
}
