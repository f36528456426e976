/* regions_pass.h: the --regions pass on the device (run.c calls it after the counter pass). */
#ifndef ATTN_REGIONS_PASS_H
#define ATTN_REGIONS_PASS_H

#include <stddef.h>

#include "harness.h"
#include "reference.h"
#include "regions.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the check of the regions build compares against: the host Q, K, V, the sampled rows and
 * the stage's bound, exactly as the plain build's check. */
typedef struct {
    const bf16_bits *q, *k, *v;
    const size_t *rows;
    size_t n_rows;
    double tol;
} regions_check_input;

typedef struct {
    regions_result decoded;
    check_result check;
    int pass;                    /* the regions build passed the same check */
    char check_line[1024];
    double plain_us, regions_us; /* median of single forwards, CUDA events, after a sync each */
} regions_pass_result;

/* Records per recorded SM in the buffer (16 bytes each), at most ATTN_REGIONS_MAX_RECORDS. */
#define ATTN_REGIONS_RECORDS_PER_SM 65536u

/* The pass, on plain's tensors and stream: the regions build's set-up; the overhead (single
 * forwards of the plain and of the regions build, timed with CUDA events, median of 5 each);
 * then one recorded forward of the regions build with only SMs 0 .. sm_limit-1 stamping, on an
 * O poisoned with NaN, checked as the plain build was; the records decoded; the build's
 * tear-down. Device memory: ATTN_REGIONS_RECORDS_PER_SM * 16 bytes per recorded SM (dev_alloc:
 * exit 2 when it does not fit). CUDA failures exit 1. */
void regions_pass_run(const attn_regions_build *rb, const attn_stage *plain_stage,
                      const attn_problem *plain, int sm_limit,
                      const regions_check_input *in, regions_pass_result *out);

#ifdef __cplusplus
}
#endif
#endif
