/* pm_sampling.c: the timeline pass (timeline.h) with CUPTI PM sampling and the Profiler Host
 * API, CUDA 13.0, plain C.
 *
 * Call sequence (CUPTI docs, "CUPTI PM Sampling API"; NVIDIA's pm_sampling sample; measured on
 * the H200 in ../shared/notes/cupti-pm-sampling.md): cuptiProfilerInitialize ->
 * cuptiDeviceGetChipName -> cuptiPmSamplingGetCounterAvailability (size, then image) ->
 * cuptiProfilerHostInitialize (CUPTI_PROFILER_TYPE_PM_SAMPLING) -> ConfigAddMetrics ->
 * GetConfigImage -> GetNumOfPasses (must be 1) -> cuptiPmSamplingEnable -> SetConfig (GPU time
 * interval trigger, keep-oldest hardware buffer) -> GetCounterDataSize + CounterDataImage
 * Initialize -> Start, the forward, synchronize, Stop -> DecodeData -> GetCounterDataInfo ->
 * per completed sample GetSampleInfo (window, %globaltimer ns) + EvaluateToGpuValues ->
 * Disable, HostDeinitialize, cuptiProfilerDeInitialize. Every params struct is zeroed,
 * structSize set, pPriv NULL. Sampling runs from Start to Stop: the samples before the first
 * kernel and after the last are idle; timeline_align drops them. The Profiler Host API side
 * (initialize, chip name, host object, config image, teardown) is cupti_host.c's, shared with the
 * counter pass.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>

#include "check.h"
#include "cupti_host.h"
#include "timeline.h"

/* The PM hardware buffer (the size measured to work on the H200) and the counter data image's
 * sample bounds: enough for twice the forward's wall time at the interval, plus slack for the
 * idle samples around it; at most MAX_SAMPLES (a sample of five metrics takes tens of kB). */
enum { HW_BUFFER_BYTES = 512 << 20, MIN_SAMPLES = 1024, MAX_SAMPLES = 16384 };

/* A failed CUPTI call: its reason into h, then the pass's end. */
#define TRY(call, name) do { CUptiResult r_ = (call); if (r_ != CUPTI_SUCCESS) { \
    cupti_host_failed(&h, name, r_); goto done; } } while (0)
/* A reason of the pass's own, printf-style. */
#define FAIL(...) do { cupti_host_whyf(&h, __VA_ARGS__); goto done; } while (0)

void timeline_run(timeline *out, int device, uint64_t interval_ns, double forward_us,
                  void (*forward)(void *arg), void *arg)
{
    timeline_set_state(out, TIMELINE_NOT_RUN, NULL);
    out->interval_ns = interval_ns;
    const char *owner = prof_cupti_owner();
    if (owner) {
        timeline_set_state(out, TIMELINE_OFF, owner);
        return;
    }
    const char *names[TL_N];
    for (int j = 0; j < TL_N; j++) names[j] = METRICS[TL_FIRST + j].cupti;
    cupti_host h;
    cupti_host_init(&h, CUPTI_ERROR_NOT_SUPPORTED,
                    "; PM sampling needs compute capability 7.5+ (GPU time interval: not GA100)");
    CUpti_PmSampling_Object *pm = NULL;
    uint8_t *data = NULL;

    CUDA_CHECK(cudaDeviceSynchronize());
    if (cupti_host_begin(&h) != 0 || cupti_host_chip(&h, device) != 0) goto done;

    CUpti_PmSampling_GetCounterAvailability_Params av = { .structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE };
    av.deviceIndex = (size_t)device;
    TRY(cuptiPmSamplingGetCounterAvailability(&av), "cuptiPmSamplingGetCounterAvailability");
    if (cupti_host_alloc_avail(&h, av.counterAvailabilityImageSize) != 0) goto done;
    av.pCounterAvailabilityImage = h.avail;
    TRY(cuptiPmSamplingGetCounterAvailability(&av), "cuptiPmSamplingGetCounterAvailability");

    if (cupti_host_object(&h, CUPTI_PROFILER_TYPE_PM_SAMPLING) != 0) goto done;
    TRY(cupti_host_add_metrics(&h, names, TL_N), "cuptiProfilerHostConfigAddMetrics (the MP_PM rows)");
    if (cupti_host_config(&h) != 0) goto done;
    if (h.passes != 1)
        FAIL("the timeline's metrics (the MP_PM rows of metrics.h) need %zu passes on %s; PM "
             "sampling takes one", h.passes, h.chip);

    CUpti_PmSampling_Enable_Params en = { .structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE };
    en.deviceIndex = (size_t)device;
    TRY(cuptiPmSamplingEnable(&en), "cuptiPmSamplingEnable");
    pm = en.pPmSamplingObject;
    CUpti_PmSampling_SetConfig_Params sc = { .structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE };
    sc.pPmSamplingObject = pm;
    sc.configSize = h.config_size;
    sc.pConfig = h.config;
    sc.hardwareBufferSize = HW_BUFFER_BYTES;
    sc.samplingInterval = interval_ns;
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    TRY(cuptiPmSamplingSetConfig(&sc), "cuptiPmSamplingSetConfig");

    /* The counter data image, sized from the forward's wall time. */
    double want = 2.0 * forward_us * 1e3 / (double)interval_ns + MIN_SAMPLES;
    if (!(want <= MAX_SAMPLES)) want = MAX_SAMPLES;
    CUpti_PmSampling_GetCounterDataSize_Params ds = { .structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE };
    ds.pPmSamplingObject = pm;
    ds.pMetricNames = names;
    ds.numMetrics = TL_N;
    ds.maxSamples = (uint32_t)want;
    TRY(cuptiPmSamplingGetCounterDataSize(&ds), "cuptiPmSamplingGetCounterDataSize");
    data = calloc(ds.counterDataSize ? ds.counterDataSize : 1, 1);
    if (!data) FAIL("out of host memory (%zu bytes of counter data)", ds.counterDataSize);
    CUpti_PmSampling_CounterDataImage_Initialize_Params di = { .structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE };
    di.pPmSamplingObject = pm;
    di.counterDataSize = ds.counterDataSize;
    di.pCounterData = data;
    TRY(cuptiPmSamplingCounterDataImageInitialize(&di), "cuptiPmSamplingCounterDataImageInitialize");

    CUpti_PmSampling_Start_Params st = { .structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE };
    st.pPmSamplingObject = pm;
    TRY(cuptiPmSamplingStart(&st), "cuptiPmSamplingStart");
    forward(arg);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUpti_PmSampling_Stop_Params sp = { .structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE };
    sp.pPmSamplingObject = pm;
    TRY(cuptiPmSamplingStop(&sp), "cuptiPmSamplingStop");

    CUpti_PmSampling_DecodeData_Params dd = { .structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE };
    dd.pPmSamplingObject = pm;
    dd.pCounterDataImage = data;
    dd.counterDataImageSize = ds.counterDataSize;
    /* Decode until the records end (one call, as measured; bounded in case CUPTI stops early). */
    for (int k = 0; k < 8; k++) {
        TRY(cuptiPmSamplingDecodeData(&dd), "cuptiPmSamplingDecodeData");
        if (dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_OTHER) break;
    }
    out->overflow = dd.overflow || dd.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
    CUpti_PmSampling_GetCounterDataInfo_Params info = { .structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE };
    info.pCounterDataImage = data;
    info.counterDataImageSize = ds.counterDataSize;
    TRY(cuptiPmSamplingGetCounterDataInfo(&info), "cuptiPmSamplingGetCounterDataInfo");

    out->s = calloc(info.numCompletedSamples ? info.numCompletedSamples : 1, sizeof *out->s);
    if (!out->s) FAIL("out of host memory");
    for (size_t i = 0; i < info.numCompletedSamples; i++) {
        CUpti_PmSampling_CounterData_GetSampleInfo_Params si = { .structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE };
        si.pPmSamplingObject = pm;
        si.pCounterDataImage = data;
        si.counterDataImageSize = ds.counterDataSize;
        si.sampleIndex = i;
        TRY(cuptiPmSamplingCounterDataGetSampleInfo(&si), "cuptiPmSamplingCounterDataGetSampleInfo");
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = { .structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE };
        tl_sample *s = &out->s[out->n];
        ev.pHostObject = h.host;
        ev.pCounterDataImage = data;
        ev.counterDataImageSize = ds.counterDataSize;
        ev.rangeIndex = i;
        ev.ppMetricNames = names;
        ev.numMetrics = TL_N;
        ev.pMetricValues = s->v;
        TRY(cuptiProfilerHostEvaluateToGpuValues(&ev), "cuptiProfilerHostEvaluateToGpuValues");
        s->start_ns = si.startTimestamp;
        s->end_ns = si.endTimestamp;
        out->n++;
    }
    out->state = TIMELINE_ON;
    out->why[0] = '\0';

done:
    if (pm) {
        CUpti_PmSampling_Disable_Params d = { .structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE };
        d.pPmSamplingObject = pm;
        (void)cuptiPmSamplingDisable(&d); /* teardown: nothing left to report */
    }
    cupti_host_end(&h);
    free(data);
    if (out->state != TIMELINE_ON) {
        free(out->s);
        out->s = NULL;
        out->n = 0;
        out->state = TIMELINE_UNAVAILABLE;
        snprintf(out->why, sizeof out->why, "%s", h.why);
        fprintf(stderr, "timeline: unavailable: %s; the timeline reads -\n", out->why);
    }
}
