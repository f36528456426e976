/* cupti_host.h: the host side that the two hardware-counter passes share, CUDA 13.0, plain C:
 * the counter pass (counters.c, CUPTI's Range Profiler) and the timeline pass (pm_sampling.c,
 * CUPTI PM sampling).
 *
 * Both follow the Profiler Host API's sequence (CUPTI docs, "Profiler Host API";
 * cupti_profiler_host.h): cuptiProfilerInitialize -> cuptiDeviceGetChipName -> the counter
 * availability image (each pass's own call, into h->avail) -> cuptiProfilerHostInitialize for the
 * pass's profiler type -> ConfigAddMetrics -> GetConfigImageSize, GetConfigImage ->
 * GetNumOfPasses; at the end, after the pass has disabled its own object, HostDeinitialize and
 * cuptiProfilerDeInitialize. Every params struct is zeroed, structSize set, pPriv NULL.
 *
 * libcupti loads libnvperf_host.so with dlopen when the host object is made; libcupti has no
 * RPATH, and our binaries' RUNPATH does not apply to its dlopen. So cupti_host_begin loads it
 * first, from the directory libcupti itself was loaded from (dladdr), with the bare name as the
 * fallback: once loaded, the dynamic linker hands libcupti the same object by its soname.
 *
 * Errors: the int functions return 0, or -1 with one line in h->why; a CUPTI failure reads
 * "cuptiX failed: CUPTI_ERROR_Y (message)" plus a hint (no permission to read the counters, and
 * the one result code the pass names in cupti_host_init). No function exits: the pass reports
 * h->why as its reason for being UNAVAILABLE.
 *
 * cupti_profiler_host.h includes C++'s <string> (it uses nothing from it): the C build puts an
 * empty `string` on its include path (common/c_shim, CFLAGS only).
 */
#ifndef ATTN_CUPTI_HOST_H
#define ATTN_CUPTI_HOST_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>
#include <cupti_profiler_host.h>

typedef struct {
    CUptiResult hint_code;            /* the result code that gets the pass's own hint */
    const char *hint;                 /* "; ..." appended to that code's line */
    int initialized;                  /* cuptiProfilerInitialize succeeded */
    const char *chip;                 /* the chip's name (CUPTI's string), after cupti_host_chip */
    uint8_t *avail;                   /* the counter availability image (cupti_host_alloc_avail) */
    CUpti_Profiler_Host_Object *host; /* after cupti_host_object */
    uint8_t *config;                  /* the config image, after cupti_host_config */
    size_t config_size;
    size_t passes;                    /* replay passes the config needs, after cupti_host_config */
    char why[256];                    /* the reason, after a failure (one line) */
} cupti_host;

/* Zeroes h; hint (starting "; ") is appended to the line of a failure with result hint_code. */
void cupti_host_init(cupti_host *h, CUptiResult hint_code, const char *hint);

/* The reason for a failed call into h->why (see the file comment). Returns -1. */
int cupti_host_failed(cupti_host *h, const char *call, CUptiResult r);

/* A reason of the pass's own, printf-style, into h->why. Returns -1. */
int cupti_host_whyf(cupti_host *h, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* libnvperf_host.so loaded (see above), then cuptiProfilerInitialize. */
int cupti_host_begin(cupti_host *h);

/* h->chip: cuptiDeviceGetChipName of CUDA ordinal device. */
int cupti_host_chip(cupti_host *h, int device);

/* h->avail: size zeroed bytes for the pass's counter availability call ("out of host memory"). */
int cupti_host_alloc_avail(cupti_host *h, size_t size);

/* cuptiProfilerHostInitialize: a host object of the given type for h->chip and h->avail. */
int cupti_host_object(cupti_host *h, CUpti_ProfilerType type);

/* cuptiProfilerHostConfigAddMetrics of n metric names on the host object: CUPTI's result, h->why
 * untouched (the counter pass probes one name at a time). */
CUptiResult cupti_host_add_metrics(cupti_host *h, const char **names, size_t n);

/* The config image of the metrics added (h->config, h->config_size) and its pass count. */
int cupti_host_config(cupti_host *h);

/* cuptiProfilerHostDeinitialize of the host object, if any (h->host NULL after). */
void cupti_host_object_end(cupti_host *h);

/* The host object ended, cuptiProfilerDeInitialize if initialized, the images freed; h->why is
 * kept. Call after the pass has disabled its own object. */
void cupti_host_end(cupti_host *h);

#endif
