/* regions_tests.c: the regions decoder, summary and trace tracks on synthetic records
 * (tests/regions_cpu.bats). Times are ns after T0 = 1 s.
 *
 * Case "pairs" (the records interleaved across streams in the buffer, as leaders claim chunks):
 *   block 0, SM 0, warp 0: load 100-300, S 300-500, softmax 500-900, O+=PV 900-1000
 *   block 0, SM 0, warp 1: load 100-400, S 400-600
 *   block 2, SM 0, warp 0: load 200-700      (runs beside block 0: slot 1)
 *   block 1, SM 0, warp 0: S 1100-1300        (after block 0 and block 2: slot 0 again)
 *   block 3, SM 1, warp 0: epilogue 150-250
 *   head: t_first 100, t_last 1350, 64 of 64 slots claimed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler.h"
#include "regions.h"
#include "report.h"
#include "trace.h"
#include "unit.h"

#define T0 1000000000ull

static attn_region_rec R(uint64_t t, uint32_t block, uint16_t sm, uint8_t unit, int region, int end)
{
    attn_region_rec r;
    r.t_ns = T0 + t;
    r.block = block;
    r.sm = sm;
    r.unit = unit;
    r.tag = (uint8_t)(region | (end ? ATTN_REGION_END : 0));
    return r;
}

enum { MAX_RECS = 64 };

/* Fills recs with the case's records; returns their count, and the head. -1: unknown case. */
static int make_case(const char *name, attn_region_rec *recs, attn_regions_head *head)
{
    int n = 0;
    memset(head, 0, sizeof *head);
    head->t_first = T0 + 100;
    head->t_last = T0 + 1350;
    head->claimed = 64;
    head->capacity = 64;
    if (!strcmp(name, "pairs") || !strcmp(name, "full")) {
        recs[n++] = R(100, 0, 0, 0, ATTN_REGION_LOAD, 0);
        recs[n++] = R(100, 0, 0, 1, ATTN_REGION_LOAD, 0);
        recs[n++] = R(150, 3, 1, 0, ATTN_REGION_EPILOGUE, 0);
        recs[n++] = R(300, 0, 0, 0, ATTN_REGION_LOAD, 1);
        recs[n++] = R(200, 2, 0, 0, ATTN_REGION_LOAD, 0);
        recs[n++] = R(300, 0, 0, 0, ATTN_REGION_S, 0);
        recs[n++] = R(400, 0, 0, 1, ATTN_REGION_LOAD, 1);
        recs[n++] = R(250, 3, 1, 0, ATTN_REGION_EPILOGUE, 1);
        recs[n++] = R(400, 0, 0, 1, ATTN_REGION_S, 0);
        recs[n++] = R(500, 0, 0, 0, ATTN_REGION_S, 1);
        recs[n++] = R(500, 0, 0, 0, ATTN_REGION_SOFTMAX, 0);
        recs[n++] = R(700, 2, 0, 0, ATTN_REGION_LOAD, 1);
        recs[n++] = R(600, 0, 0, 1, ATTN_REGION_S, 1);
        recs[n++] = R(900, 0, 0, 0, ATTN_REGION_SOFTMAX, 1);
        recs[n++] = R(900, 0, 0, 0, ATTN_REGION_PV, 0);
        recs[n++] = R(1000, 0, 0, 0, ATTN_REGION_PV, 1);
        recs[n++] = R(1100, 1, 0, 0, ATTN_REGION_S, 0);
        recs[n++] = R(1300, 1, 0, 0, ATTN_REGION_S, 1);
        if (!strcmp(name, "full")) head->claimed = 96;   /* a chunk did not fit */
        memset(&recs[n++], 0, sizeof *recs);             /* an empty slot (claimed, unwritten) */
    } else if (!strcmp(name, "missing-end")) {           /* S never ends */
        recs[n++] = R(100, 0, 0, 0, ATTN_REGION_LOAD, 0);
        recs[n++] = R(200, 0, 0, 0, ATTN_REGION_LOAD, 1);
        recs[n++] = R(200, 0, 0, 0, ATTN_REGION_S, 0);
    } else if (!strcmp(name, "nested")) {                /* S inside softmax, S never ends */
        recs[n++] = R(100, 0, 0, 0, ATTN_REGION_SOFTMAX, 0);
        recs[n++] = R(150, 0, 0, 0, ATTN_REGION_WAIT_K, 0);
        recs[n++] = R(160, 0, 0, 0, ATTN_REGION_WAIT_K, 1);
        recs[n++] = R(200, 0, 0, 0, ATTN_REGION_S, 0);
        recs[n++] = R(400, 0, 0, 0, ATTN_REGION_SOFTMAX, 1);
    } else if (!strcmp(name, "stray")) {                 /* an end with no begin */
        recs[n++] = R(100, 0, 0, 0, ATTN_REGION_PV, 1);
        recs[n++] = R(200, 0, 0, 0, ATTN_REGION_S, 0);
        recs[n++] = R(300, 0, 0, 0, ATTN_REGION_S, 1);
    } else if (!strcmp(name, "out-of-order")) {
        /* two streams, the later one first in the buffer; in stream (5, 0) the end is stamped
         * earlier than its begin (one clock cannot do that: clamped, counted) */
        recs[n++] = R(800, 7, 2, 1, ATTN_REGION_PV, 0);
        recs[n++] = R(900, 7, 2, 1, ATTN_REGION_PV, 1);
        recs[n++] = R(100, 5, 2, 0, ATTN_REGION_S, 0);
        recs[n++] = R(300, 5, 2, 0, ATTN_REGION_S, 1);
        recs[n++] = R(400, 5, 2, 0, ATTN_REGION_SOFTMAX, 0);
        recs[n++] = R(350, 5, 2, 0, ATTN_REGION_SOFTMAX, 1);
    } else {
        return -1;
    }
    return n;
}

static int decode_case(const char *name, regions_result *r)
{
    attn_region_rec recs[MAX_RECS];
    attn_regions_head head;
    const int n = make_case(name, recs, &head);
    if (n < 0) {
        fprintf(stderr, "unknown case %s (pairs, full, missing-end, nested, stray, out-of-order)\n", name);
        return 2;
    }
    if (regions_decode(recs, (size_t)n, &head, head.capacity, r) != 0) return 1;
    r->sm_limit = 2;
    r->unit_name = "warp";
    r->kernel = "regions pass";
    return 0;
}

int unit_regions_decode(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: regions-decode CASE\n"); return 2; }
    regions_result r;
    const int rc = decode_case(argv[1], &r);
    if (rc) return rc;
    printf("events=%zu records=%zu streams=%zu units=%d missing_end=%zu stray_end=%zu "
           "backwards=%zu full=%d\n", r.n_events, r.n_records, r.n_streams, r.n_units,
           r.missing_end, r.stray_end, r.backwards, r.full);
    for (size_t i = 0; i < r.n_events; i++) {
        const region_event *e = &r.events[i];
        printf("sm=%u slot=%d warp=%u block=%u %s %llu-%llu depth=%d\n", (unsigned)e->sm, e->slot,
               (unsigned)e->unit, e->block, attn_region_name(e->region),
               (unsigned long long)(e->start_ns - T0), (unsigned long long)(e->end_ns - T0), e->depth);
    }
    regions_free(&r);
    return 0;
}

int unit_regions_summary(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: regions-summary CASE\n"); return 2; }
    regions_result r;
    const int rc = decode_case(argv[1], &r);
    if (rc) return rc;
    regions_print_summary(stdout, &r, "05_flash");
    regions_free(&r);
    return 0;
}

int unit_regions_trace(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: regions-trace CASE PATH\n"); return 2; }
    regions_result r;
    const int rc = decode_case(argv[1], &r);
    if (rc) return rc;
    profile p;
    memset(&p, 0, sizeof p);
    report_info info;
    memset(&info, 0, sizeof info);
    info.stage = "05_flash";
    info.shape.batch = info.shape.heads = info.shape.seq = 1;
    info.shape.head_dim = 64;
    info.regions = &r;
    FILE *f = fopen(argv[2], "w");
    if (!f) { perror(argv[2]); return 1; }
    const int w = trace_write_stream(f, &p, &info, argv[2]);
    const int c = fclose(f);
    regions_free(&r);
    return w || c ? 1 : 0;
}
