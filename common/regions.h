/* regions.h: region timelines inside our own kernels, the host side (C11, also read by nvcc).
 *
 * A regions build of a kernel (common/regions.cuh, compiled with -DATTN_REGIONS=1) has one leader
 * lane per warp or warpgroup stamp %globaltimer at the start and end of each region (S = Q.K^T,
 * softmax, P.V, a wait for a tile, ...) into a bounded global buffer; `--regions N` runs one such
 * forward after the timed, traced and counter passes, and this file turns the records into
 * regions (begin/end pairs), a per-region summary for the terminal and trace tracks.
 * The idea is that of TVM TIRx's CudaProfiler, warpscope, IKET and Triton Proton's intra-kernel
 * mode: a leader thread stamps a clock at region boundaries into a buffer passed as a kernel
 * argument, decoded on the host into a timeline.
 *
 * Record: 16 bytes, one 16-byte store on the device. Little-endian words:
 *   t_ns   %globaltimer (ns, the GPU's global clock, Unix epoch) at the marker; 0 = empty slot
 *   block  the linear block index (x + y*gridDim.x + z*gridDim.x*gridDim.y)
 *   sm     %smid of the block
 *   unit   the warp or warpgroup index in the block (the stage says which)
 *   tag    the region id (attn_region below) | ATTN_REGION_END for an end marker
 * Buffer: a head (the kernel's span, the slots claimed, the capacity) and `capacity` records. A
 * leader claims ATTN_REGIONS_CHUNK slots at a time with one atomicAdd on head.claimed, so the
 * records of one (block, unit) stream appear in the buffer in the order they were stamped,
 * interleaved with other streams; a chunk that does not fit is not written and its unit stamps
 * no more (claimed > capacity: the buffer was full, later regions are missing).
 */
#ifndef ATTN_REGIONS_H
#define ATTN_REGIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The regions of the course's kernels, one id each, shared by every stage so that a name means
 * one thing on every timeline. A stage stamps the ones its chapter talks about. */
typedef enum {
    ATTN_REGION_LOAD = 0,    /* "load": wait for this tile's copies, barrier, issue the next (04, 05) */
    ATTN_REGION_S,           /* "S=QK^T": the scores of one key tile (07: from the wgmma's issue
                              * until the scores are in registers) */
    ATTN_REGION_SOFTMAX,     /* "softmax": mask + (online) softmax of one key tile */
    ATTN_REGION_PV,          /* "O+=PV": the product with V of one key tile (07 rungs 2+: its
                              * issue; it completes under the next softmax, or the epilogue) */
    ATTN_REGION_EPILOGUE,    /* "epilogue": O / l, to bf16, to global memory (07 rungs 2+: from
                              * the wait for the last O+=PV) */
    ATTN_REGION_STATS,       /* "row stats": 04's sweep 1 on one key tile (row max and sum) */
    ATTN_REGION_TMA_Q,       /* "TMA Q": the producer issues a Q tile's TMA load (07) */
    ATTN_REGION_TMA_K,       /* "TMA K": the producer issues a K tile's TMA load (07) */
    ATTN_REGION_TMA_V,       /* "TMA V": the producer issues a V tile's TMA load (07) */
    ATTN_REGION_WAIT_FREE,   /* "wait free": the producer waits for a free stage or Q buffer (07) */
    ATTN_REGION_WAIT_Q,      /* "wait Q": a consumer waits for its work item's Q tile (07) */
    ATTN_REGION_WAIT_K,      /* "wait K": a consumer waits for its K tile (07) */
    ATTN_REGION_WAIT_V,      /* "wait V": a consumer waits for its V tile (07) */
    ATTN_REGION_WAIT_TURN,   /* "wait turn": a consumer waits for its turn to issue (07 ping-pong) */
    ATTN_REGION_HANDOVER,    /* "hand-over": a persistent block's consumers hand an item's Q
                              * buffer back to the producer (07) */
    ATTN_REGION_COUNT
} attn_region;

#define ATTN_REGION_END   0x80u  /* tag bit: an end marker */
#define ATTN_REGIONS_CHUNK 32u   /* slots claimed per atomicAdd */
#define ATTN_REGIONS_MAX_RECORDS (1u << 24)   /* capacity limit (the device packs a slot in 24 bits) */

typedef struct {
    uint64_t t_ns;
    uint32_t block;
    uint16_t sm;
    uint8_t unit;
    uint8_t tag;
} attn_region_rec;

typedef struct {
    unsigned long long t_first;  /* the earliest unit start of the kernel (all SMs), ns */
    unsigned long long t_last;   /* the latest unit finish, ns */
    unsigned int claimed;        /* slots claimed; > capacity: the buffer was full */
    unsigned int capacity;       /* records after the head (set by the host) */
    unsigned long long unused;   /* 32 bytes in all: the records after it are 16-byte aligned */
} attn_regions_head;

/* The kernel argument of a regions build: one device buffer, the head then `capacity` records
 * ((attn_region_rec *)(head + 1) is record 0). */
typedef struct attn_regions_arg {
    attn_regions_head *head;
    uint32_t sm_limit;           /* only blocks on SMs 0 .. sm_limit-1 stamp regions */
} attn_regions_arg;

/* Name of a region id ("S=QK^T"), "?" out of range. */
const char *attn_region_name(int region);
/* 1 if the region is a wait (load, wait free, wait Q, wait K, wait V, wait turn): the summary's
 * waited share. */
int attn_region_is_wait(int region);

/* ---- the decoder --------------------------------------------------------------------------- */

typedef struct {
    uint64_t start_ns, end_ns;
    uint32_t block;
    uint16_t sm;
    uint8_t unit, region;
    int slot;                    /* the block's slot on its SM (blocks on one SM that never run
                                  * at the same time share a slot): one track per (sm, slot, unit) */
    int depth;                   /* nesting depth in its unit (0 = outermost) */
} region_event;

typedef struct regions_result {
    region_event *events;        /* sorted by (sm, slot, unit, start) */
    size_t n_events;
    size_t n_records;            /* non-empty records read */
    size_t missing_end;          /* begins never closed (dropped) */
    size_t stray_end;            /* ends with no open begin of that region (ignored) */
    size_t backwards;            /* records earlier than their stream's previous one (clamped) */
    int full;                    /* the buffer overflowed: records were dropped */
    uint64_t claimed, capacity;
    uint64_t t_first, t_last;    /* the kernel's span (all SMs): the pass's kernel event */
    int n_units;                 /* 1 + the largest unit index seen */
    size_t n_streams;            /* (block, unit) streams */
    uint32_t sm_limit;
    const char *unit_name;       /* "warp" or "warpgroup" */
    const char *const *roles;    /* each unit index's role, ending in NULL; may be NULL */
    const char *kernel;          /* the instrumented kernel's name, for the trace (may be NULL) */
} regions_result;

/* Decodes n records (empty slots, t_ns == 0, skipped) and the head into *out:
 *   - records are grouped into (block, unit) streams in buffer order (= stamp order);
 *   - in a stream, a begin opens its region (regions nest, up to 16 deep); an end closes the
 *     innermost open region of its id, and any region opened inside it is dropped as a missing
 *     end; an end with no open begin of its id is a stray end; begins still open when the stream
 *     ends are missing ends;
 *   - a record earlier than its stream's previous one (it cannot happen with one clock; counted)
 *     is clamped to it;
 *   - blocks get slots per SM (first fit by start time) so that one track holds one block at a time.
 * capacity: the buffer's records; claimed > capacity marks the result full. Returns 0, -1 when
 * out of host memory. Free with regions_free. */
int regions_decode(const attn_region_rec *rec, size_t n, const attn_regions_head *head,
                   uint32_t capacity, regions_result *out);
void regions_free(regions_result *r);

/* The terminal summary: one line on what was recorded (SMs, blocks, units, regions, kernel span,
 * the decoder's findings), then per region the mean duration (us) and count per unit index (a
 * column per unit, headed by its role where the build names one), and per unit index the share
 * of its lifetime (first begin to last end, summed over its blocks) spent in waits (a wait at
 * any depth; one nested in another wait counted once, in the outer one). */
void regions_print_summary(FILE *f, const regions_result *r, const char *stage);

/* The trace events (Chrome trace JSON, after the others in traceEvents; first: no event written
 * yet, updated): one process "GPU <device> regions", one kernel event spanning the pass's
 * kernel (t_first .. t_last) on tid 0, and one track per (SM, slot, unit), tid 1.., named
 * "SM <sm> slot <slot> <unit> <u>" (+ " (<role>)" where the build names one), holding its
 * regions as complete events (cat "gpu_region").
 * ts relative to base_ns, µs with 3 decimals. */
void regions_trace_events(FILE *f, const regions_result *r, uint64_t base_ns, int device, int *first);

#ifdef __cplusplus
}
#endif
#endif
