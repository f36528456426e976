/* flash3.cuh: what every rung of the 07_hopper ladder shares, written once, so that two
 * consecutive rung files (rung1_tma_wgmma.cu ... rung6_tma_store.cu) differ by their one idea.
 *
 *   flash3_params      the kernel arguments (four TMA tensor maps, O, the shape, the sections)
 *   H3_SMEM_BYTES      the block's shared memory: Q buffers, 2 K and 2 V stages, mbarriers
 *                      (H3_SMEM_BYTES_VS: VS V stages, rung 14)
 *   flash3_mbar_slot   the mbarriers, an enum of slots; k_full(b, s) ... their addresses
 *   flash3_named_bar   the named-barrier ids (0 is __syncthreads')
 *   flash3_item        one work item (query tile of one (batch, head)) and its causal bounds:
 *                      flash3_tile_item (one per block), flash3_persistent_item (longest-first),
 *                      flash3_section_item (longest-first in sections of heads that share the
 *                      L2; H3_L2_KV_BUDGET, flash3_l2_sections on the host)
 *   kv_stage, kv_phase the pipeline's stage / phase bookkeeping of the block's u-th key tile
 *                      (v_stage, v_phase: of its V tile where V has VS stages, rung 14)
 *   warp_release       the release sequence of a stage (one arrival per consumer warp);
 *                      hand_back (a Q buffer back to the producer), skip_turn (a turn with
 *                      nothing to issue)
 *   mask_tile, mask_rows, online_softmax, online_softmax_lazy, pack_p, rescale_o   the softmax
 *                      of one S tile in registers
 *   issue_qk, issue_pv the two products as wgmma groups
 *   store_o            the epilogue: O / l -> bf16 -> the item's Q buffer -> global memory;
 *                      store_o_tma the same with a TMA store from the Q buffer
 *   flash3_regions_start, FLASH3_KERNEL, FLASH3_RUNG   the regions build (below)
 *
 * Register layout of a consumer thread (warp w of its warpgroup, lane = 4g + t), from the wgmma
 * accumulator layout (common/sm90/wgmma.cuh): it owns rows 16w + g + 8h (h = 0, 1) of the
 * warpgroup's 64 and, in each 8-column group j, columns 8j + 2t and 8j + 2t + 1:
 *   sacc[4j + 2h + e]  S of (row h, key 8j + 2t + e) of the current key tile
 *   o[4j + 2h + e]     O of (row h, column 8j + 2t + e)
 *   pk[k][i]           P as the A operand of k-step k (keys 16k..16k+15): i = 0, 1 the keys of
 *                      group 2k for rows h = 0, 1; i = 2, 3 those of group 2k + 1
 *   m_run[h]           running max of row h (raw Q.K units), l_run[h] this lane's part of its sum
 *
 * Shared memory (dynamic, from a 1024-byte boundary; each tile as TMA writes it with 128-byte
 * swizzle: [head_dim/64 panels][rows][64 bf16], 16-byte chunk c of row r at c ^ (r % 8)):
 *   QB x Q (BLOCK_M x head_dim; each item's O tile at its end), 2 x K, 2 x V (128 x head_dim),
 *   then the mbarriers.
 * Region markers (./07_hopper/run --regions, common/regions.cuh). Every rung file is compiled
 * twice: as is, and with -DATTN_REGIONS=1 (the Makefile's REGIONS_STAGES), where the markers
 * stamp %globaltimer; in the plain build they are empty and the kernels compile to the same
 * code as without them. A rung file follows one pattern, which a new rung copies:
 *   - its kernels are named FLASH3_KERNEL(flash3_fwd_..._r<N>_sm90a) and its rung object
 *     FLASH3_RUNG(N) (the regions build's copies get the suffix _regions);
 *   - fwd_block gives the producer's thread and each consumer thread a context,
 *     `attn_regions_ctx rg = flash3_regions_start(p);` (unit = the warpgroup: 0 the producer,
 *     stamped by its one thread, 1 and 2 (and 3 with three consumer warpgroups) the consumers, stamped by their thread 0), passes it
 *     down by reference and ends with attn_regions_finish(rg);
 *   - attn_region_begin(rg, ATTN_REGION_...) / attn_region_end around each step, properly
 *     nested (common/regions.h lists the ids):
 *       producer:  wait free (an empty mbarrier) | TMA Q | TMA K | TMA V (expect_tx + the copy)
 *       consumer:  wait Q | per key tile: wait K | wait turn (ping-pong) | S=QK^T (from the issue
 *                  until the scores are in registers) | softmax (mask, online softmax, P packed,
 *                  O rescaled) | wait V | O+=PV | then epilogue | hand-over (persistent rungs:
 *                  the item's Q buffer handed back)
 *     On rung 1 O+=PV runs from the product's issue to its completion. With the overlap (rung 2
 *     on) O+=PV is the issue alone: a tile's S=QK^T region holds the previous tile's wait V and
 *     O+=PV, whose product completes under the softmax (the softmax region ends once O is
 *     rescaled); the item's last product completes at the start of the epilogue region.
 *   The markers in the producer must stay cheap: its warpgroup has 24 registers (40 in rung 15's
 *   regions build; CI=true make 07_hopper fails on a spill or a setmaxnreg that ptxas ignores).
 *   hopper.cu registers the build once, with the units' roles (ATTN_REGIONS_REGISTER_ROLES);
 *   tests/regions.bats runs every rung file's regions build (rung 15's at head_dim 128).
 * Sources: Shah et al. 2024, "FlashAttention-3" (arXiv 2407.08608), its hopper/ sources (mask,
 * softmax, named barriers, tile scheduler, epilogue each in one place); the PTX ISA sections
 * named in common/sm90/.
 */
#ifndef ATTN_07_FLASH3_CUH
#define ATTN_07_FLASH3_CUH

#include <cuda.h>              /* CUtensorMap (types only: no -lcuda) */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include <string.h>            /* memset (flash3_l2_sections, host) */

#include "causal.cuh"
#include "regions.cuh"
#include "sm80/mma_sm80.cuh"   /* smem_addr, bf16x2_bits, exp2_approx, st_shared_b32, ld_shared_v4 */
#include "sm90/mbarrier.cuh"
#include "sm90/named_barrier.cuh"
#include "sm90/setmaxnreg.cuh"
#include "sm90/tma.cuh"
#include "sm90/wgmma.cuh"

#define H3_BLOCK_N     128                    /* keys per key tile */
#define H3_STAGES      2                      /* K/V tiles in flight */
#define H3_CONSUMERS   2                      /* consumer warpgroups: BLOCK_M = 128 query rows */
#define H3_BLOCK_M     (64 * H3_CONSUMERS)
#define H3_THREADS     (128 * (1 + H3_CONSUMERS))  /* + the producer warpgroup */
#define H3_BLOCK_M3    (64 * 3)               /* rung 10: three consumer warpgroups, 192 rows */
/* setmaxnreg budgets filling the SM's 65536 registers as FlashAttention-3 splits them:
 * 128 x 24 + 256 x 240 = 64512. */
#define H3_PRODUCER_REGS 24
#define H3_CONSUMER_REGS 240

/* One work item of a split over the keys (rungs 8-13, flash3_split.h): query tile m_blk of (batch,
 * head) bh against key tiles n_begin .. n_end-1 only. slot < 0: the item is the tile's whole key
 * range, and its O goes to p.o as in rung 7; else its partial O (fp32, divided by its own row
 * sums) and log-sum-exp go to slot `slot` of p.o_part and p.lse_part, and the combine kernel
 * writes O. */
typedef struct {
    int bh, m_blk, n_begin, n_end, slot;
} flash3_work;

/* Kernel arguments. The tensor maps describe Q, K, V as 4-D tensors {64, seq, head_dim/64,
 * batch*heads} (innermost first; hopper.cu's encode_tile_map) with a box of {64, rows,
 * head_dim/64, 1}, rows = BLOCK_M for Q and 128 for K and V: one box is one tile. o_map
 * describes O the same way with a box of {64, 64, 1, 1}: one 64-column panel of one consumer
 * warpgroup's 64 rows (the TMA store of rung 6). They live in the parameter space
 * (__grid_constant__), where TMA reads them. */
typedef struct {
    CUtensorMap q_map, k_map, v_map, o_map;
    __nv_bfloat16 *o;          /* bf16 [batch, heads, seq, head_dim] */
    int seq;
    int bh_count, q_tiles;     /* batch*heads; query tiles per head (persistent grid's work) */
    int l2_sections;           /* 1 .. bh_count: the sections of heads of flash3_section_item */
    float scale_log2;          /* scale * log2(e): exp(x*scale) = 2^(x*scale_log2) */
    /* rungs 8-13 with a split over the keys (NULL otherwise): block b's items are
     * work[work_first[b] .. work_first[b+1]-1], in that order; partial O
     * [slot][BLOCK_M][head_dim] and log-sum-exp (log2 units) [slot][BLOCK_M], fp32 */
    const flash3_work *work;
    const int *work_first;
    float *o_part, *lse_part;
    attn_regions_param regions;   /* the regions build's record buffer; empty otherwise */
} flash3_params;

/* The mbarriers, 8 bytes each after the tiles, by slot: per stage s, K full, V full (one
 * arrival: the producer's expect_tx, plus the tile's bytes) and K empty, V empty (one arrival
 * per consumer warp once its wgmma reading the tile have completed); per Q buffer q, Q full and
 * (2 buffers) Q empty (one arrival per consumer warp once the epilogue is done with it). The enum
 * is the layout with as many V stages as K stages (H3_STAGES); with VS V stages (rung 14) each
 * slot after the V full ones moves up by VS - H3_STAGES, twice after the V empty ones: the
 * helpers below take VS as a template argument, H3_STAGES unless given. */
enum flash3_mbar_slot {
    MBAR_K_FULL  = 0,
    MBAR_V_FULL  = H3_STAGES,
    MBAR_K_EMPTY = 2 * H3_STAGES,
    MBAR_V_EMPTY = 3 * H3_STAGES,
    MBAR_Q_FULL  = 4 * H3_STAGES,             /* + q, q < QB */
    MBAR_Q_EMPTY = 4 * H3_STAGES + 2          /* + q, only with 2 Q buffers */
};
/* mbarriers of a block with QB Q buffers: 1 -> K/V full/empty + 1 Q full, 2 -> + 2 Q full and
 * 2 Q empty. */
#define H3_BARRIERS_VS(QB, VS) (2 * H3_STAGES + 2 * (VS) + ((QB) == 1 ? 1 : 2 * (QB)))
#define H3_BARRIERS(QB)        H3_BARRIERS_VS(QB, H3_STAGES)

/* Named barriers (bar.sync ids; 0 is __syncthreads'): the epilogue's, one per consumer
 * warpgroup c (128 threads), and the ping-pong's, one per consumer warpgroup (256 threads). */
enum flash3_named_bar {
    NBAR_EPILOGUE = 1,                        /* + c */
    NBAR_PINGPONG = 4                         /* + c */
};

/* Bytes of one tile of ROWS rows, and of the block's dynamic shared memory with QB Q buffers
 * (1: one query tile per block; 2: a persistent block loads the next tile's Q while it computes
 * the current one). */
#define H3_TILE_BYTES(D, ROWS) ((ROWS) * (D) * 2)
#define H3_SMEM_BYTES_VS(D, BM, QB, VS) \
    ((size_t)1024 + (QB) * H3_TILE_BYTES(D, BM) + (H3_STAGES + (VS)) * H3_TILE_BYTES(D, H3_BLOCK_N) + \
     8 * H3_BARRIERS_VS(QB, VS))
#define H3_SMEM_BYTES(D, BM, QB) H3_SMEM_BYTES_VS(D, BM, QB, H3_STAGES)

/* Shared-memory layout of one block (offsets from the 1024-byte-aligned start). */
typedef struct {
    uint32_t sQ, sK, sV, bar;  /* .shared addresses: Q buffers, K stages, V stages, mbarriers */
} flash3_block;

static __device__ __forceinline__ uint32_t mbar_at(const flash3_block &b, int slot)
{
    return b.bar + 8u * (uint32_t)slot;
}
#define H3_VS_SHIFT(VS) ((VS) - H3_STAGES)   /* 0 but on rungs 14-15 */
static __device__ __forceinline__ uint32_t k_full(const flash3_block &b, int s)  { return mbar_at(b, MBAR_K_FULL + s); }
static __device__ __forceinline__ uint32_t v_full(const flash3_block &b, int s)  { return mbar_at(b, MBAR_V_FULL + s); }
template <int VS = H3_STAGES>
static __device__ __forceinline__ uint32_t k_empty(const flash3_block &b, int s) { return mbar_at(b, MBAR_K_EMPTY + H3_VS_SHIFT(VS) + s); }
template <int VS = H3_STAGES>
static __device__ __forceinline__ uint32_t v_empty(const flash3_block &b, int s) { return mbar_at(b, MBAR_V_EMPTY + H3_VS_SHIFT(VS) + s); }
template <int VS = H3_STAGES>
static __device__ __forceinline__ uint32_t q_full(const flash3_block &b, int q)  { return mbar_at(b, MBAR_Q_FULL + 2 * H3_VS_SHIFT(VS) + q); }
template <int VS = H3_STAGES>
static __device__ __forceinline__ uint32_t q_empty(const flash3_block &b, int q) { return mbar_at(b, MBAR_Q_EMPTY + 2 * H3_VS_SHIFT(VS) + q); }

/* The block's shared memory, and (thread 0) its mbarriers armed: full barriers for one arrival,
 * empty ones for one arrival per consumer warp (of each of the CTAS blocks that share the K and V
 * stages: rung 15's cluster of two); then the block's one __syncthreads(). VS: the V stages
 * (rungs 14-15: more than the K stages). */
template <int D, int QB, int BM = H3_BLOCK_M, int VS = H3_STAGES, int CTAS = 1>
static __device__ __forceinline__ flash3_block flash3_block_init(const flash3_params &p)
{
    constexpr int CONSUMERS = BM / 64;        /* consumer warpgroups, 64 query rows each */
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    extern __shared__ uint8_t smem_raw[];
    flash3_block b;
    b.sQ = (smem_addr(smem_raw) + 1023u) & ~1023u;               /* 128B swizzle: 1024-B aligned */
    b.sK = b.sQ + QB * H3_TILE_BYTES(D, BM);
    b.sV = b.sK + H3_STAGES * KV_BYTES;
    b.bar = b.sV + VS * KV_BYTES;
    if (threadIdx.x == 0) {
        tma_prefetch_map(&p.q_map);
        tma_prefetch_map(&p.k_map);
        tma_prefetch_map(&p.v_map);
        for (int q = 0; q < QB; ++q) {
            mbar_init(q_full<VS>(b, q), 1);
            if (QB > 1) mbar_init(q_empty<VS>(b, q), 4 * CONSUMERS);
        }
        for (int s = 0; s < (VS > H3_STAGES ? VS : H3_STAGES); ++s) {
            if (s < H3_STAGES) mbar_init(k_full(b, s), 1);
            if (s < VS) mbar_init(v_full(b, s), 1);
            if (s < H3_STAGES) mbar_init(k_empty<VS>(b, s), 4 * CONSUMERS * CTAS);
            if (s < VS) mbar_init(v_empty<VS>(b, s), 4 * CONSUMERS * CTAS);
        }
        mbar_fence_init();
    }
    __syncthreads();                          /* the last block-wide barrier */
    return b;
}

/* ---- work items and causal bounds ------------------------------------------------------------ */

/* One work item: one query tile of one (batch, head). Producer and consumers compute the same
 * items in the same order and the same causal bounds (they must agree on the number of key
 * tiles, or the producer waits for a release that never comes). */
typedef struct {
    int bh, m0, n_end;         /* (batch, head), first query row, key tiles 0..n_end-1 */
} flash3_item;

/* The first row of query tile m_blk of bm rows. With bm = H3_BLOCK_M: m_blk * bm. With bm = 192
 * (rung 10, rungs 11-13 at head_dim 64), where seq is rarely a multiple of the tile, the tiles are
 * shifted up by the largest multiple of 64 rows that the last one would hang past seq: tile 0
 * then starts before row 0 (a warpgroup whose 64 rows all lie before it has nothing to do; TMA
 * fills rows outside the tensor with zeros and does not store them), so that the rows with no work sit in the cheapest tile,
 * the first (causal: one key tile), not in the most expensive one. Host and device. */
static __host__ __device__ __forceinline__ int flash3_tile_m0(int m_blk, int bm, int seq)
{
    if (bm == H3_BLOCK_M) return m_blk * bm;
    const int q_tiles = (seq + bm - 1) / bm;
    return m_blk * bm - (bm * q_tiles - seq) / 64 * 64;
}

/* Causal bounds: key tiles 0 .. n_end-1 reach the tile's last row (or seq); none past that is
 * ever loaded. With BLOCK_M == BLOCK_N both consumers need every one of them. (Host too: the
 * host weighs an order by its items' n_end, flash3_l2_sections.) */
template <int BM = H3_BLOCK_M>
static __host__ __device__ __forceinline__ void flash3_item_bounds(const flash3_params &p,
                                                                   int m_blk, flash3_item &w)
{
    w.m0 = flash3_tile_m0(m_blk, BM, p.seq);
    w.n_end = causal_key_tiles(w.m0, BM, H3_BLOCK_N, p.seq);
}

/* One tile per block: grid (batch*heads, query tiles), the heaviest (last) query tile first in
 * launch order. */
static __device__ __forceinline__ flash3_item flash3_tile_item(const flash3_params &p)
{
    flash3_item w;
    w.bh = (int)blockIdx.x;
    flash3_item_bounds(p, (int)(gridDim.y - 1 - blockIdx.y), w);
    return w;
}

/* Persistent grid (min(SMs, tiles) blocks): the j-th item of this block (j = 0, 1, ...), false
 * when it has no more. The tiles in longest-first order, i = 0 .. total-1 with query tile
 * q_tiles - 1 - i / bh_count of head i % bh_count (causal: the last query tile has the most key
 * tiles); round r hands items r*G .. r*G + G-1 to the G blocks, forward in even rounds and
 * backward in odd ones (a block that got a long item in one round gets a short one in the
 * next). */
static __device__ __forceinline__ bool flash3_persistent_item(const flash3_params &p, int j,
                                                              flash3_item &w)
{
    const int G = (int)gridDim.x, blk = (int)blockIdx.x;
    const long long i = (long long)j * G + ((j & 1) ? G - 1 - blk : blk);
    if (i >= (long long)p.q_tiles * p.bh_count) return false;
    w.bh = (int)(i % p.bh_count);
    flash3_item_bounds(p, p.q_tiles - 1 - (int)(i / p.bh_count), w);
    return true;
}

/* ---- the L2-aware order (rungs 5-7) ----------------------------------------------------------
 * flash3_persistent_item walks the query tiles of all (batch, head)s level by level: at any
 * moment the blocks work on nearly every head, and the K and V of all heads are in use at once
 * (2 * seq * head_dim * 2 bytes a head; 32 MiB in all at 8x16x1024x64, 64 MiB at 2x16x4096x128). When
 * that is more than the L2 keeps, a key tile one query tile read is gone from L2 before the next
 * query tile of its head reads it, and comes from DRAM again. FlashAttention-3's
 * DynamicPersistentTileScheduler (its hopper/tile_scheduler.hpp) works in "sections" of heads
 * instead: as many heads as keep their K and V in L2, longest-first within a section, one
 * section after another; its tiles go to whichever SM is free first, by an atomic counter. Ours
 * are fixed in advance (no counter, no memory to reset before each launch), so the order itself
 * must keep the blocks' work even:
 *   - the bh_count (batch, head)s are cut into p.l2_sections sections of consecutive heads, as
 *     equal as they go (the first bh_count % l2_sections sections have one head more);
 *   - within a section, longest-first: the last query tile of each of its heads, then the one
 *     before, ...; round r hands the section's items rG .. rG + G-1 to the G blocks, forward in
 *     even rounds and backward in odd ones, as flash3_persistent_item does with all of them;
 *   - each section starts at round 0: a forward and a backward round even each other out over a
 *     run of decreasing lengths, not over a section's short last tiles next to the next one's
 *     long first tiles;
 *   - odd sections are handed out mirrored (block G-1-blk takes blk's place), so that the blocks
 *     that drew the head of one section draw from the other end of the next.
 * With one section this is flash3_persistent_item's order, item for item. The host picks the
 * number of sections (flash3_l2_sections), and falls back to one where the sectioned order
 * leaves the busiest block more work. */

/* K and V bytes that one section may keep in L2. The H200's L2 is 50 MB in two partitions, each
 * caching the accesses of the SMs attached to it (NVIDIA's A100 and H100 architecture
 * whitepapers); a section's K and V are read by blocks on every SM, so a line can be held in
 * both partitions, and what all SMs read fits in about one: 25 MB, half the L2, is the ceiling.
 * 16 MiB stays under it with room for the Q tiles streaming in, the O tiles going out, and the
 * next section's first K and V while the last blocks finish the current one. (FlashAttention-3
 * budgets 32 MB for K and V.) */
#define H3_L2_KV_BUDGET (16ll << 20)

/* Where a block stands in flash3_section_item's order: its section, and its round in it. Start
 * at {0, 0}; producer and consumers each keep their own and advance them alike. */
typedef struct {
    int section, round;
} flash3_cursor;

/* The next work item of block blk of a persistent grid of G blocks in the sectioned order above
 * (p.l2_sections sections), false when it has no more. O(1) per item: within a section a block
 * has one item per round until its position runs past the section's end, then it moves on. Host
 * and device. */
template <int BM = H3_BLOCK_M>
static __host__ __device__ __forceinline__ bool flash3_section_item(const flash3_params &p, int G,
                                                                    int blk, flash3_cursor &c,
                                                                    flash3_item &w)
{
    const int base = p.bh_count / p.l2_sections, extra = p.bh_count % p.l2_sections;
    while (c.section < p.l2_sections) {
        const int s = c.section;
        const int heads = base + (s < extra ? 1 : 0);
        const int first = s * base + (s < extra ? s : extra);           /* its first (batch, head) */
        const int b = (s & 1) ? G - 1 - blk : blk;                       /* mirrored in odd sections */
        /* (int: a section's items are query tiles of 128 or 192 rows of bf16 tensors in memory) */
        const int i = c.round * G + ((c.round & 1) ? G - 1 - b : b);
        if (i < heads * p.q_tiles) {
            w.bh = first + i % heads;
            flash3_item_bounds<BM>(p, p.q_tiles - 1 - i / heads, w);
            ++c.round;
            return true;
        }
        ++c.section;                          /* past the section's end: later rounds are too */
        c.round = 0;
    }
    return false;
}

/* The work of the busiest block of a G-block persistent grid under flash3_section_item with
 * `sections` sections, in key tiles plus one per item (its Q wait, prologue and epilogue). */
template <int BM = H3_BLOCK_M>
static inline long long flash3_busiest_block(const flash3_params &shape, int G, int sections)
{
    flash3_params p = shape;
    p.l2_sections = sections;
    long long busiest = 0;
    for (int blk = 0; blk < G; ++blk) {
        flash3_cursor c = { 0, 0 };
        flash3_item w;
        long long work = 0;
        while (flash3_section_item<BM>(p, G, blk, c, w)) work += w.n_end + 1;
        if (work > busiest) busiest = work;
    }
    return busiest;
}

/* The host's choice of p.l2_sections for seq, head_dim and bh_count (batch*heads) on a grid of G
 * blocks: the fewest sections, from as few as keep each one's K and V (2 * seq * head_dim * 2
 * bytes a head) within H3_L2_KV_BUDGET up to twice that many or 8 more, whichever is fewer (at
 * most one per head; each count tried costs the host one pass over the order), whose
 * busiest block has at most 1/64 more work than one section's busiest block; one section if none
 * does (a fixed order cannot even out every shape; the order then is rung 3's, and L2 holds what
 * it holds). More sections than the budget needs keep less K and V in L2 each; a count that
 * divides the heads more evenly among the rounds can balance where the fewest does not. */
template <int BM = H3_BLOCK_M>
static inline int flash3_l2_sections(int seq, int head_dim, int bh_count, int G)
{
    const long long kv_per_head = 2ll * seq * head_dim * 2;
    long long heads = H3_L2_KV_BUDGET / kv_per_head;
    if (heads < 1) heads = 1;
    if (heads > bh_count) heads = bh_count;
    const int fewest = (int)((bh_count + heads - 1) / heads);
    if (fewest == 1) return 1;
    flash3_params shape;
    memset(&shape, 0, sizeof shape);
    shape.seq = seq;
    shape.bh_count = bh_count;
    shape.q_tiles = (seq + BM - 1) / BM;
    const long long one = flash3_busiest_block<BM>(shape, G, 1);
    const int last = fewest + (fewest < 8 ? fewest : 8);
    for (int sections = fewest; sections <= bh_count && sections <= last; ++sections)
        if (flash3_busiest_block<BM>(shape, G, sections) * 64 <= one * 65) return sections;
    return 1;
}

/* ---- the pipeline ------------------------------------------------------------------------------
 * The block's key tiles are numbered u = 0, 1, ... across its items: tile u goes through stage
 * u % H3_STAGES, and is that stage's k-th use, k = u / H3_STAGES. A consumer waits for completion
 * k of the stage's full barrier (parity k & 1); the producer, before its k-th load into the
 * stage, for completion k - 1 of the empty barrier, parity (k & 1) ^ 1, which for k = 0 is
 * parity 1 on a fresh barrier: it passes at once. */
static __device__ __forceinline__ int kv_stage(int u) { return u % H3_STAGES; }
static __device__ __forceinline__ uint32_t kv_phase(int u) { return (uint32_t)(u / H3_STAGES) & 1u; }
/* The same for V tile u where V has VS stages (rung 14); kv_stage and kv_phase where VS = H3_STAGES. */
template <int VS>
static __device__ __forceinline__ int v_stage(int u) { return u % VS; }
template <int VS>
static __device__ __forceinline__ uint32_t v_phase(int u) { return (uint32_t)(u / VS) & 1u; }

/* The release of a stage or Q buffer by one consumer warp: once every lane's wgmma reading it
 * have completed (the caller's wgmma_wait), one arrival for the warp. */
static __device__ __forceinline__ void warp_release(uint32_t empty_bar)
{
    __syncwarp();
    if ((threadIdx.x & 31) == 0) mbar_arrive(empty_bar);
}

/* Hands a Q buffer back to the producer (its Q empty mbarrier, q_empty_bar; rungs 9-13): once the
 * TMA has read the rows of O stored from it (the storing thread's wait), this thread's ordinary
 * accesses to it ordered before the producer's next TMA write, then one arrival per warp. */
static __device__ __forceinline__ void hand_back(uint32_t q_empty_bar, attn_regions_ctx &rg)
{
    attn_region_begin(rg, ATTN_REGION_HANDOVER);
    if ((threadIdx.x & 127) == 0) tma_store_wait_read();
    fence_proxy_async_smem();
    warp_release(q_empty_bar);
    attn_region_end(rg, ATTN_REGION_HANDOVER);
}

/* One turn of a consumer warpgroup in the round-robin of turns (rungs 10-13: 0, 1, 2, 0, ...) with
 * nothing to issue: its own barrier waited for, the next warpgroup's arrived at. */
static __device__ __forceinline__ void skip_turn(uint32_t pp_mine, uint32_t pp_next)
{
    named_barrier_sync(pp_mine, 256);
    named_barrier_arrive(pp_next, 256);
}

/* The wait for the previous tile's P.V inside the loop of rungs 2-9, once the softmax of the current
 * tile is done (l_run, this thread's parts of the row sums, is the last thing it computes): then O
 * and pk are free. The source puts it after the softmax, so that the softmax runs under that
 * product; ptxas decides where it lands in the machine code. A plain wgmma_wait<0> it hoists to the
 * softmax's top, and packs P among the exponentials; wgmma_wait_after (common/sm90/wgmma.cuh) keeps
 * it after them, and P is packed after the wait. Measured (docs/perf-notes.md): at head_dim 128 the
 * wait after the softmax is faster on average over the shapes timed; at head_dim 64 ptxas's order
 * is faster on rungs 3-8 (rung 9 was the exception), so one rule serves every rung: the kept wait
 * at 128, ptxas's order at 64. */
template <int D>
static __device__ __forceinline__ void wait_pv_after_softmax(const float (&l_run)[2])
{
    if constexpr (D == 128) wgmma_wait_after<0>(l_run[0], l_run[1]);
    else wgmma_wait<0>();
}

/* ---- the softmax of one S tile in registers -------------------------------------------------- */

/* Does key tile key0.. need the mask for this warpgroup's rows (first row r0 = m0 + 64c)? Only
 * the tile crossing the diagonal or the end of the sequence does. */
static __device__ __forceinline__ bool tile_needs_mask(int key0, int r0, int seq)
{
    return key0 + H3_BLOCK_N - 1 > r0 || key0 + H3_BLOCK_N > seq;
}

/* Mask by assignment (-inf): key col is visible to row iff col <= row and col < seq. row0 is the
 * global row of this thread's h = 0 (h = 1 is row0 + 8), key0 the tile's first key; the tile's
 * first COLS columns (rung 12's half tile: 64). */
template <int BN, int COLS = BN>
static __device__ __forceinline__ void mask_tile(float (&sacc)[BN / 2], int row0, int key0, int seq,
                                                 int t)
{
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int limit = causal_mask_limit(row0 + 8 * h, seq, key0, t);
#pragma unroll
        for (int j = 0; j < COLS / 8; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e)
                if (8 * j + e >= limit) sacc[4 * j + 2 * h + e] = -INFINITY;
    }
}

/* mask_tile for this thread's rows of the warpgroup whose first row is r0 (rungs 10-13: the
 * thread's row and column found from its index here, where they are needed, not held across the
 * loop). */
template <int COLS = H3_BLOCK_N>
static __device__ __forceinline__ void mask_rows(float (&sacc)[H3_BLOCK_N / 2], int r0, int key0,
                                                 int seq)
{
    const int lane = threadIdx.x & 31, w = (threadIdx.x & 127) >> 5;
    mask_tile<H3_BLOCK_N, COLS>(sacc, r0 + 16 * w + (lane >> 2), key0, seq, lane & 3);
}

/* Online softmax of one S tile, one row h at a time (the quad, 4 lanes, holds a row): the new
 * running max m_run, alpha[h] = 2^((m_old - m_new)*c) for the caller to rescale O with, P =
 * 2^(S*c - m_new*c) in place of S (fp32; pack_p makes the A operand of P.V), the row sum l_run. */
template <int BN>
static __device__ __forceinline__ void online_softmax(float (&sacc)[BN / 2], float (&m_run)[2],
                                                      float (&l_run)[2], float (&alpha)[2], float c)
{
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float m_new = m_run[h];
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
            m_new = fmaxf(m_new, fmaxf(sacc[4 * j + 2 * h], sacc[4 * j + 2 * h + 1]));
        m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 1));
        m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 2));
        /* A row that has seen only masked keys keeps m = -inf; use 0 so that -inf - -inf
         * never happens (alpha and P are then exactly 0). */
        const float m_use = m_new == -INFINITY ? 0.f : m_new;
        alpha[h] = exp2_approx((m_run[h] - m_use) * c);
        const float m_c = m_use * c;
        m_run[h] = m_new;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const float p0 = exp2_approx(fmaf(sacc[4 * j + 2 * h], c, -m_c));
            const float p1 = exp2_approx(fmaf(sacc[4 * j + 2 * h + 1], c, -m_c));
            sum += p0 + p1;
            sacc[4 * j + 2 * h] = p0;
            sacc[4 * j + 2 * h + 1] = p1;
        }
        l_run[h] = fmaf(l_run[h], alpha[h], sum);
    }
}

/* How far a row's max may grow, in log2 units (S*c), before online_softmax_lazy moves the running
 * max and O is rescaled: P and the row sums then stay below 2^8 times what they would be with the
 * exact max, far inside fp32 and bf16 range, and the result is the same up to rounding
 * (O = sum P.V / sum P for any common offset). FlashAttention-4's choice. */
#define H3_RESCALE_LOG2 8.0f

/* online_softmax with a running max that moves only when it must (rungs 11-13): the tile's row
 * maxima are found first; if no row of the warp grew by more than H3_RESCALE_LOG2 the running
 * maxima stay where they are, alpha = 1 exactly and the function returns false: the caller skips
 * the rescale of O (one branch, the same for the warp). Otherwise every row of the warp moves to
 * its new max as in online_softmax, and it returns true. The decision is the warp's (__any_sync),
 * so O's rescale is a warp-uniform branch; alpha is computed either way (ex2.approx of 0 where the
 * max stays: 1, which l_run is multiplied by while O is not), so the exponentials are one
 * straight block of code. A row that has seen only masked keys
 * keeps m = -inf and gets P = 0, as in online_softmax. COLS: the tile's first COLS columns only
 * (rung 12's half tile: 64), the rest neither read nor written.
 * Source: Zadouri, Shah, Dao et al., FlashAttention-4 (2025), "conditional softmax rescaling"
 * (hopper/ and cute/ sources of Dao-AILab/flash-attention); the online softmax: Milakov and
 * Gimelshein 2018. */
template <int BN, int COLS = BN>
static __device__ __forceinline__ bool online_softmax_lazy(float (&sacc)[BN / 2], float (&m_run)[2],
                                                           float (&l_run)[2], float (&alpha)[2], float c)
{
    float m_new[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float m = m_run[h];
#pragma unroll
        for (int j = 0; j < COLS / 8; ++j)
            m = fmaxf(m, fmaxf(sacc[4 * j + 2 * h], sacc[4 * j + 2 * h + 1]));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m_new[h] = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    }
    /* (-inf - -inf is NaN, and NaN > x is false: a row with no key yet never asks to move) */
    const bool grow = (m_new[0] - m_run[0]) * c > H3_RESCALE_LOG2 ||
                      (m_new[1] - m_run[1]) * c > H3_RESCALE_LOG2;
    const bool rescale = __any_sync(0xffffffffu, grow);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const float m_keep = rescale ? m_new[h] : m_run[h];
        const float m_use = m_keep == -INFINITY ? 0.f : m_keep;
        alpha[h] = exp2_approx((m_run[h] - m_use) * c);
        const float m_c = m_use * c;
        m_run[h] = m_keep;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < COLS / 8; ++j) {
            const float p0 = exp2_approx(fmaf(sacc[4 * j + 2 * h], c, -m_c));
            const float p1 = exp2_approx(fmaf(sacc[4 * j + 2 * h + 1], c, -m_c));
            sum += p0 + p1;
            sacc[4 * j + 2 * h] = p0;
            sacc[4 * j + 2 * h + 1] = p1;
        }
        l_run[h] = fmaf(l_run[h], alpha[h], sum);
    }
    return rescale;
}

/* P (fp32, the S accumulator layout) -> the A operand of P.V: k-step k takes accumulator
 * registers 8k..8k+7 (keys 16k..16k+15) packed in pairs to bf16x2 (wgmma.cuh); the k-steps of
 * the first COLS keys. */
template <int BN, int COLS = BN>
static __device__ __forceinline__ void pack_p(const float (&sacc)[BN / 2], uint32_t (&pk)[BN / 16][4])
{
#pragma unroll
    for (int k = 0; k < COLS / 16; ++k)
#pragma unroll
        for (int i = 0; i < 4; ++i)
            pk[k][i] = bf16x2_bits(__floats2bfloat162_rn(sacc[8 * k + 2 * i], sacc[8 * k + 2 * i + 1]));
}

/* O *= alpha, row by row. */
template <int D>
static __device__ __forceinline__ void rescale_o(float (&o)[D / 2], const float (&alpha)[2])
{
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            o[4 * j + 2 * h]     *= alpha[h];
            o[4 * j + 2 * h + 1] *= alpha[h];
        }
}

/* ---- the two products ------------------------------------------------------------------------- */

/* S = Q.K^T for one key tile (stage offset kv_off): head_dim/16 wgmma k-steps, issued and
 * committed as one group (not waited for). Step kk reads 32 bytes further into each 128-byte
 * row, then the next 64-column panel. */
template <int D, int BM = H3_BLOCK_M>
static __device__ __forceinline__ void issue_qk(float (&sacc)[H3_BLOCK_N / 2], uint64_t q_desc,
                                                uint64_t k_desc, uint32_t kv_off)
{
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        const uint32_t q_off = (uint32_t)((kk / 4) * BM * 128 + (kk % 4) * 32);
        const uint32_t k_off = kv_off + (uint32_t)((kk / 4) * H3_BLOCK_N * 128 + (kk % 4) * 32);
        wgmma_m64n128k16_ss(sacc, q_desc + (q_off >> 4), k_desc + (k_off >> 4), kk > 0);
    }
    wgmma_commit();
}

/* issue_qk for the tile's first 64 keys only (rung 12's half tile): S[:, 0..63] into
 * sacc[0..31] (the accumulator layout of 64 columns is the first half of 128's), m64n64k16. */
template <int D, int BM = H3_BLOCK_M>
static __device__ __forceinline__ void issue_qk_half(float (&sacc)[H3_BLOCK_N / 2], uint64_t q_desc,
                                                     uint64_t k_desc, uint32_t kv_off)
{
    float (&s64)[32] = *(float (*)[32])sacc;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        const uint32_t q_off = (uint32_t)((kk / 4) * BM * 128 + (kk % 4) * 32);
        const uint32_t k_off = kv_off + (uint32_t)((kk / 4) * H3_BLOCK_N * 128 + (kk % 4) * 32);
        wgmma_m64n64k16_ss(s64, q_desc + (q_off >> 4), k_desc + (k_off >> 4), kk > 0);
    }
    wgmma_commit();
}

/* O += P.V for one key tile: KEYS/16 k-steps (the tile's first KEYS keys: all BLOCK_N but on
 * rung 12's half tile), A = P from registers, B = V rows 16k..16k+15 (2048 bytes a step inside
 * each panel); one group, not waited for. */
template <int D, int KEYS = H3_BLOCK_N>
static __device__ __forceinline__ void issue_pv(float (&o)[D / 2], const uint32_t (&pk)[H3_BLOCK_N / 16][4],
                                                uint64_t v_desc, uint32_t kv_off)
{
    wgmma_fence();                            /* O and P were written by ordinary code */
#pragma unroll
    for (int k = 0; k < KEYS / 16; ++k) {
        const uint32_t v_off = kv_off + (uint32_t)k * 2048u;
        if constexpr (D == 64)
            wgmma_m64n64k16_rs(o, pk[k], v_desc + (v_off >> 4), 1);
        else
            wgmma_m64n128k16_rs(o, pk[k], v_desc + (v_off >> 4), 1);
    }
    wgmma_commit();
}

/* Descriptors (wgmma.cuh): K of stage 0, K-major; V of stage 0, MN-major, its 64-column panels
 * BLOCK_N*128 bytes apart (LBO); Q rows 64c.. of panel 0 of buffer sQ, K-major. Offsets are added
 * per k-step. */
static __device__ __forceinline__ uint64_t k_desc_of(const flash3_block &b)
{
    return wgmma_desc_sw128(b.sK, 16, 1024);
}
static __device__ __forceinline__ uint64_t v_desc_of(const flash3_block &b)
{
    return wgmma_desc_sw128(b.sV, H3_BLOCK_N * 128, 1024);
}
static __device__ __forceinline__ uint64_t q_desc_of(uint32_t sQ, int cwg)
{
    return wgmma_desc_sw128(sQ + cwg * 64 * 128, 16, 1024);
}

/* ---- the epilogue ------------------------------------------------------------------------------
 * Consumer warpgroup cwg's rows of O for item it: O /= l (a row that saw no key keeps O = 0), to
 * bf16, into this warpgroup's own rows of the item's Q buffer sQ (same panel layout and swizzle;
 * its wgmma reads of Q are complete and the other warpgroup reads only its own rows): o_to_smem.
 * Then out to global memory, one of two ways: store_o (rungs 1-5) and store_o_tma (rung 6). */
template <int D, int BM = H3_BLOCK_M>
static __device__ __forceinline__ void o_to_smem(uint32_t sQ, int cwg, float (&o)[D / 2],
                                                 float (&l_run)[2])
{
    const int tid = threadIdx.x & 127, lane = tid & 31, w = tid >> 5, g = lane >> 2, t = lane & 3;
    const int r_base = cwg * 64 + 16 * w + g;                     /* row in the tile; & 7 == g */
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float l = l_run[h];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const float inv = l > 0.f ? 1.f / l : 1.f;
        const uint32_t row_addr = sQ + (uint32_t)(r_base + 8 * h) * 128u;
#pragma unroll
        for (int j = 0; j < D / 8; ++j)
            st_shared_b32(row_addr + (uint32_t)((j / 8) * BM * 128 + (((j % 8) ^ g) << 4) + 4 * t),
                          bf16x2_bits(__floats2bfloat162_rn(o[4 * j + 2 * h] * inv,
                                                            o[4 * j + 2 * h + 1] * inv)));
    }
}

/* The epilogue by the threads: o_to_smem, a named barrier over the warpgroup, then 16-byte
 * coalesced global stores of rows < seq. */
template <int D>
static __device__ __forceinline__ void store_o(const flash3_params &p, const flash3_item &it,
                                               uint32_t sQ, int cwg, float (&o)[D / 2],
                                               float (&l_run)[2])
{
    constexpr int BM = H3_BLOCK_M;
    const int tid = threadIdx.x & 127;
    const int seq = p.seq;
    o_to_smem<D>(sQ, cwg, o, l_run);
    named_barrier_sync(NBAR_EPILOGUE + cwg, 128);   /* this warpgroup's rows are complete */
    constexpr int CHUNKS = D / 8;             /* 16-byte chunks per row */
    __nv_bfloat16 *o_bh = p.o + (size_t)it.bh * seq * D;
#pragma unroll
    for (int i = 0; i < 64 * CHUNKS / 128; ++i) {
        const int idx = i * 128 + tid;
        const int r = idx / CHUNKS, ch = idx % CHUNKS;            /* r: row in the warpgroup */
        const int row = it.m0 + cwg * 64 + r;
        if (row < seq) {
            const uint32_t a = sQ + (uint32_t)((ch / 8) * BM * 128 + (cwg * 64 + r) * 128 +
                                               (((ch % 8) ^ (r & 7)) << 4));
            *(uint4 *)(o_bh + (size_t)row * D + ch * 8) = ld_shared_v4(a);
        }
    }
}

/* The epilogue by the TMA unit, issued: o_to_smem; each thread's fence.proxy.async (its ordinary
 * stores before the TMA's reads of them) and a named barrier over the warpgroup; then the
 * warpgroup's first thread stores each 64-column panel of its 64 rows, one box of p.o_map each
 * (the rows are 128 bytes apart in a panel, as the box lies; the panels BLOCK_M rows apart, so
 * one box per panel), as one bulk async-group. Rows past seq are outside the tensor and are not
 * written; a warpgroup whose rows all lie past seq stores nothing. The caller's first thread
 * must wait for the TMA to have read the group (tma_store_wait_read) before the Q buffer goes
 * back to the producer: store_o_tma waits at once (rung 6), rung 7 under the next item's first
 * product. The writes to global memory complete on their own: before the kernel ends, that
 * thread waits for them (tma_store_wait). FlashAttention-3's epilogue_fwd.hpp stores O the same
 * way, from a swizzled shared tile. */
template <int D, int BM = H3_BLOCK_M>
static __device__ __forceinline__ void store_o_tma_issue(const flash3_params &p, const flash3_item &it,
                                                         uint32_t sQ, int cwg, float (&o)[D / 2],
                                                         float (&l_run)[2])
{
    o_to_smem<D, BM>(sQ, cwg, o, l_run);
    fence_proxy_async_smem();
    named_barrier_sync(NBAR_EPILOGUE + cwg, 128);   /* all 128 threads' rows written and fenced */
    const int r0 = it.m0 + cwg * 64;          /* the warpgroup's first row */
    if ((threadIdx.x & 127) == 0 && r0 < p.seq && (BM == H3_BLOCK_M || r0 >= 0)) {
#pragma unroll
        for (int panel = 0; panel < D / 64; ++panel)
            tma_store_4d(&p.o_map, sQ + (uint32_t)(panel * BM * 128 + cwg * 64 * 128),
                         0, r0, panel, it.bh);
        tma_store_commit();
    }
}

/* store_o_tma_issue, then the issuing thread waits until the TMA has read the rows: on return
 * the caller may hand the Q buffer back to the producer. */
template <int D>
static __device__ __forceinline__ void store_o_tma(const flash3_params &p, const flash3_item &it,
                                                   uint32_t sQ, int cwg, float (&o)[D / 2],
                                                   float (&l_run)[2])
{
    store_o_tma_issue<D>(p, it, sQ, cwg, o, l_run);
    if ((threadIdx.x & 127) == 0) tma_store_wait_read();
}

/* ---- the regions build ---------------------------------------------------------------------- */

/* This thread's region context: unit = its warpgroup (0 the producer, 1 and 2 the consumers),
 * stamped by the warpgroup's thread 0 (the producer's one thread). Call it in the producer's
 * thread and in every consumer thread, after setmaxnreg. */
static __device__ __forceinline__ attn_regions_ctx flash3_regions_start(const flash3_params &p)
{
    return attn_regions_start(p.regions, (int)(threadIdx.x >> 7), (threadIdx.x & 127) == 0);
}

/* A rung's kernel and rung object: the names as written in the plain build, + _regions in the
 * regions build (both copies are linked into ./07_hopper/run). */
#define FLASH3_KERNEL(name) ATTN_REGIONS_NAME(name)
#define FLASH3_RUNG(n)      ATTN_REGIONS_NAME(flash3_rung_##n)

/* ---- the rungs, as the host sees them ------------------------------------------------------- */

/* One rung: its number, its one idea (for --help and the ladder table), its kernels (NULL where
 * it does not run that head_dim), and its launch: a persistent grid or one block per query tile,
 * QB Q buffers; the combine kernels of a rung that splits over the keys (rungs 8-13; NULL on the
 * others). Each rung file defines one (FLASH3_RUNG(1): flash3_rung_1 ...). */
typedef struct {
    int number;
    const char *idea;
    const void *kernel_d64, *kernel_d128;   /* __global__ void k(const flash3_params) */
    int persistent;
    int q_buffers;
    const void *combine_d64, *combine_d128;   /* __global__ void k(const flash3_combine_params) */
    int block_m;               /* query rows of a tile, 64 per consumer warpgroup: H3_BLOCK_M, or
                                * 192 (rungs 10-13: three consumers); 128 * (1 + block_m / 64) threads */
    int block_m_d128;          /* at head_dim 128, where it differs (rungs 11-13); 0: block_m */
    int dependent_launch;      /* 1: its kernels are launched with programmatic dependent launch
                                * and wait for the kernel ahead themselves (rungs 13-15) */
    int v_stages;              /* V stages where they differ from H3_STAGES (rungs 14-15); 0: H3_STAGES */
    int cluster;               /* blocks per cluster that share each K and V tile, loaded once
                                * and multicast to both (rung 15: 2); its tiles of query rows are
                                * cluster * block_m rows; 0: no cluster */
} flash3_rung;

extern const flash3_rung FLASH3_RUNG(1), FLASH3_RUNG(2), FLASH3_RUNG(3), FLASH3_RUNG(4),
                         FLASH3_RUNG(5), FLASH3_RUNG(6), FLASH3_RUNG(7),
                         FLASH3_RUNG(8), FLASH3_RUNG(9), FLASH3_RUNG(10), FLASH3_RUNG(11),
                         FLASH3_RUNG(12), FLASH3_RUNG(13), FLASH3_RUNG(14), FLASH3_RUNG(15);

#endif
