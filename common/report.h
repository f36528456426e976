/* report.h: what the table (table.h) and the trace (trace.h) print besides the profile itself:
 * the stage, its idea, the shape and the device. Filled by run.c; unset fields may stay 0/NULL.
 */
#ifndef ATTN_REPORT_H
#define ATTN_REPORT_H

#include <cuda_runtime_api.h>

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

struct counter_pass;
struct timeline;
struct regions_result;

typedef struct {
    const char *stage;             /* "05_flash" */
    const char *idea;              /* the stage's one-line idea */
    attn_shape shape;              /* batch x heads x seq x head_dim */
    const struct cudaDeviceProp *prop;    /* the device the stage ran on (NULL: no device lines, no
                                      occupancy) */
    int device;                    /* its ordinal (GPU lane pid in the trace) */
    const struct counter_pass *counters;  /* the counter pass (counters.h); NULL: none was made */
    const struct timeline *timeline;      /* the timeline pass (timeline.h); NULL: none was made */
    const struct regions_result *regions; /* the regions pass (regions.h); NULL: none was made */
} report_info;

#ifdef __cplusplus
}
#endif
#endif
