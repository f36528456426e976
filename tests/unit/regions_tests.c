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
 *
 * Case "pingpong" (07's units: block 0 on SM 0, warpgroup 0 the producer, 1 and 2 the consumers;
 * regions nested as 07's overlapped rungs stamp them, "{...}" inside the region before it):
 *   producer:   TMA Q 100-110, wait free 110-120, TMA K 120-130, wait free 130-140, TMA V 140-150
 *   consumer 0: wait Q 100-300, wait K 300-310, wait turn 310-320,
 *               S 320-600 {wait V 400-420, O+=PV 420-450}, softmax 600-900, wait K 900-910,
 *               S 910-1050 {wait V 920-950, O+=PV 950-980}, softmax 1050-1250, epilogue 1250-1300
 *   consumer 1: wait Q 100-300, wait K 300-310, wait turn 310-450,
 *               S 450-800 {wait V 460-470, O+=PV 470-500}, softmax 800-1200, epilogue 1200-1300
 *   No two O+=PV of the consumers overlap; consumer 0's softmax (500 ns) overlaps consumer 1's
 *   products (S with what it holds) 600-800, consumer 1's (400 ns) consumer 0's 910-1050.
 * Case "pingpong-overlap": the same but the producer waits 110-400 and issues K at 400-410
 *   (after consumer 0's first S began at 320), then waits free 410-420 and issues V at 420-430;
 *   consumer 1 waits for its turn 310-430, S 430-800 {wait V 435-440, O+=PV 440-460}
 *   (overlapping consumer 0's O+=PV 420-450).
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
    } else if (!strcmp(name, "pingpong") || !strcmp(name, "pingpong-overlap")) {
        const int bad = !strcmp(name, "pingpong-overlap");
        /* the producer */
        recs[n++] = R(100, 0, 0, 0, ATTN_REGION_TMA_Q, 0);
        recs[n++] = R(110, 0, 0, 0, ATTN_REGION_TMA_Q, 1);
        recs[n++] = R(110, 0, 0, 0, ATTN_REGION_WAIT_FREE, 0);
        recs[n++] = R(bad ? 400 : 120, 0, 0, 0, ATTN_REGION_WAIT_FREE, 1);
        recs[n++] = R(bad ? 400 : 120, 0, 0, 0, ATTN_REGION_TMA_K, 0);
        recs[n++] = R(bad ? 410 : 130, 0, 0, 0, ATTN_REGION_TMA_K, 1);
        recs[n++] = R(bad ? 410 : 130, 0, 0, 0, ATTN_REGION_WAIT_FREE, 0);
        recs[n++] = R(bad ? 420 : 140, 0, 0, 0, ATTN_REGION_WAIT_FREE, 1);
        recs[n++] = R(bad ? 420 : 140, 0, 0, 0, ATTN_REGION_TMA_V, 0);
        recs[n++] = R(bad ? 430 : 150, 0, 0, 0, ATTN_REGION_TMA_V, 1);
        /* consumer 0 */
        static const struct { int t, region, end; } c0[] = {
            { 100, ATTN_REGION_WAIT_Q, 0 }, { 300, ATTN_REGION_WAIT_Q, 1 },
            { 300, ATTN_REGION_WAIT_K, 0 }, { 310, ATTN_REGION_WAIT_K, 1 },
            { 310, ATTN_REGION_WAIT_TURN, 0 }, { 320, ATTN_REGION_WAIT_TURN, 1 },
            { 320, ATTN_REGION_S, 0 },
            { 400, ATTN_REGION_WAIT_V, 0 }, { 420, ATTN_REGION_WAIT_V, 1 },
            { 420, ATTN_REGION_PV, 0 }, { 450, ATTN_REGION_PV, 1 },
            { 600, ATTN_REGION_S, 1 },
            { 600, ATTN_REGION_SOFTMAX, 0 }, { 900, ATTN_REGION_SOFTMAX, 1 },
            { 900, ATTN_REGION_WAIT_K, 0 }, { 910, ATTN_REGION_WAIT_K, 1 },
            { 910, ATTN_REGION_S, 0 },
            { 920, ATTN_REGION_WAIT_V, 0 }, { 950, ATTN_REGION_WAIT_V, 1 },
            { 950, ATTN_REGION_PV, 0 }, { 980, ATTN_REGION_PV, 1 },
            { 1050, ATTN_REGION_S, 1 },
            { 1050, ATTN_REGION_SOFTMAX, 0 }, { 1250, ATTN_REGION_SOFTMAX, 1 },
            { 1250, ATTN_REGION_EPILOGUE, 0 }, { 1300, ATTN_REGION_EPILOGUE, 1 },
        };
        for (size_t i = 0; i < sizeof c0 / sizeof c0[0]; i++)
            recs[n++] = R((uint64_t)c0[i].t, 0, 0, 1, c0[i].region, c0[i].end);
        /* consumer 1 */
        const struct { int t, region, end; } c1[] = {
            { 100, ATTN_REGION_WAIT_Q, 0 }, { 300, ATTN_REGION_WAIT_Q, 1 },
            { 300, ATTN_REGION_WAIT_K, 0 }, { 310, ATTN_REGION_WAIT_K, 1 },
            { 310, ATTN_REGION_WAIT_TURN, 0 }, { bad ? 430 : 450, ATTN_REGION_WAIT_TURN, 1 },
            { bad ? 430 : 450, ATTN_REGION_S, 0 },
            { bad ? 435 : 460, ATTN_REGION_WAIT_V, 0 }, { bad ? 440 : 470, ATTN_REGION_WAIT_V, 1 },
            { bad ? 440 : 470, ATTN_REGION_PV, 0 }, { bad ? 460 : 500, ATTN_REGION_PV, 1 },
            { 800, ATTN_REGION_S, 1 },
            { 800, ATTN_REGION_SOFTMAX, 0 }, { 1200, ATTN_REGION_SOFTMAX, 1 },
            { 1200, ATTN_REGION_EPILOGUE, 0 }, { 1300, ATTN_REGION_EPILOGUE, 1 },
        };
        for (size_t i = 0; i < sizeof c1 / sizeof c1[0]; i++)
            recs[n++] = R((uint64_t)c1[i].t, 0, 0, 2, c1[i].region, c1[i].end);
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

/* The cases with 07_hopper's units. */
static int is_07(const char *name)
{
    return !strncmp(name, "pingpong", 8);
}

static int decode_case(const char *name, regions_result *r)
{
    attn_region_rec recs[MAX_RECS];
    attn_regions_head head;
    const int n = make_case(name, recs, &head);
    if (n < 0) {
        fprintf(stderr, "unknown case %s (pairs, full, missing-end, nested, stray, out-of-order, "
                "pingpong, pingpong-overlap)\n", name);
        return 2;
    }
    if (regions_decode(recs, (size_t)n, &head, head.capacity, r) != 0) return 1;
    r->sm_limit = 2;
    r->unit_name = "warp";
    r->kernel = "regions pass";
    if (is_07(name)) {                   /* 07's units and roles (07_hopper/hopper.cu) */
        static const char *const roles[] = { "producer", "consumer 0", "consumer 1", NULL };
        r->unit_name = "warpgroup";
        r->roles = roles;
    }
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
    regions_print_summary(stdout, &r, is_07(argv[1]) ? "07_hopper" : "05_flash");
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
    info.stage = is_07(argv[1]) ? "07_hopper" : "05_flash";
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
