/* 07_hopper rung 15: rung 14 at head_dim 128 on clusters of two blocks that load each K and V
 * tile once and multicast it to both.
 * On rungs 1-14 every block reads each key tile its query tile needs from L2: a head's K and V
 * are read once per query tile, about 1.1 GB from L2 into shared memory per forward at
 * 2x16x4096x128 against 64 MB of K and V. That traffic costs time at the power limit the H200
 * runs this kernel at (docs/perf-notes.md: 50% more of it costs 3.7%). Here two blocks on
 * neighbouring SMs form a cluster and work on one tile of 256 query rows of one (batch, head),
 * 128 rows each; both need the same key tiles, and each block's producer loads one of the two
 * 64-column panels of each K and V tile with a multicast TMA copy that writes it into both
 * blocks' shared memory. Each tile then crosses from L2 once for the pair: half the bytes.
 *   - The rows: block 0 takes rows 0-63 and 192-255 of the 256, block 1 rows 64-191, one 64-row
 *     block per consumer warpgroup, so that the two blocks have the same work (the diagonal's
 *     short rows with the long ones): 4k + 2.5 key tiles each on the k-th tile of a head.
 *   - The stages: a stage is reloaded once the consumers of both blocks have released it: each
 *     consumer warp arrives on its own block's empty mbarrier and on the other block's (lanes
 *     0 and 1 at once, remote arrivals at the default .cta scope: mbar_arrive_remote_if), and
 *     the empty mbarriers count both blocks' warps.
 *     Each block's full mbarrier expects the whole tile: its own panel and the other block's.
 *   - Both blocks walk the same tiles in the same order (a cluster's items, flash3_section_item
 *     over 256-row tiles and the clusters), so their stages and phases stay in step; a
 *     warpgroup whose rows end before a key tile releases it unread (rung 10's rule).
 *   - The cluster waits for itself after its mbarriers are armed and before it exits
 *     (cluster_sync), so that no copy or arrival reaches a block that is not there.
 * The arithmetic of each warpgroup's rows is rung 14's, in the same order: the same O bits.
 * head_dim 128 only (at 64 a tile has one panel); no split over the keys (every tile is a whole
 * 256-row tile: small grids run on fewer clusters). The host sizes the grid from
 * cudaOccupancyMaxActiveClusters.
 * Sources: CUTLASS's TMA multicast pipelines (PipelineTmaAsync: consumers release every block of
 * the multicast), FlashAttention-3's ClusterShape (hopper/, which multicasts for non-causal
 * attention only); the PTX ISA and the CUDA C++ Programming Guide as cited in
 * common/sm90/cluster.cuh.
 *
 * Kernel: flash3_fwd_bf16_causal_128x128_d128_r15_sm90a (384 threads, clusters of 2);
 * H3_SMEM_BYTES_VS(128, 128, 2, 3) bytes of dynamic shared memory, as rung 14's.
 */
#include "flash3.cuh"
#include "sm90/cluster.cuh"     /* cluster_rank, cluster_sync, mbar_arrive_remote_if, tma_load_4d_multicast */
#include "sm90/griddep.cuh"     /* griddep_wait, griddep_launch_dependents */

#define R15_CLUSTER     2                     /* blocks per cluster */
#define R15_ROWS        (64 * R15_CLUSTER * H3_CONSUMERS)   /* a cluster's query tile: 256 */
#define R15_V_STAGES    3
/* The register split (setmaxnreg; the two must free and take the same registers of the launch's
 * 168 x 384 = 64512, or the consumers' increase waits for ever): FlashAttention-3's 24 / 240 in
 * the plain build; in the regions build (--regions) the producer's markers do not fit in 24 and
 * spill, so 40 / 232 there (128 x 40 + 256 x 232 = 64512). */
#if defined(ATTN_REGIONS) && ATTN_REGIONS
#define R15_PRODUCER_REGS 40
#define R15_CONSUMER_REGS 232
#else
#define R15_PRODUCER_REGS H3_PRODUCER_REGS
#define R15_CONSUMER_REGS H3_CONSUMER_REGS
#endif

#define R15_HALF_S(D)   64                    /* the half tile (rung 12): head_dim 128's */
#define R15_HALF_P(D)   64

/* The first row, relative to the cluster's tile, of consumer warpgroup cwg of the block of rank
 * `rank`: block 0 rows 0-63 and 192-255, block 1 rows 64-127 and 128-191. */
static __device__ __forceinline__ int r15_row_offset(uint32_t rank, int cwg)
{
    return rank == 0 ? (cwg == 0 ? 0 : 192) : 64 + 64 * cwg;
}

/* The release of a K or V stage by one consumer warp: once its wgmma reading the stage have
 * completed, one arrival on that stage's empty mbarrier in each block of the cluster, lane r
 * arriving on block r's (the arrivals go out together, one instruction), as CUTLASS's
 * PipelineTmaAsync spreads a consumer's releases over its threads; predicated, not branched, so
 * the warp stays converged for the warpgroup's next .sync.aligned instruction. */
static __device__ __forceinline__ void cluster_release(uint32_t empty_bar)
{
    __syncwarp();
    const uint32_t lane = threadIdx.x & 31;
    mbar_arrive_remote_if(empty_bar, lane % R15_CLUSTER, lane < R15_CLUSTER);
}

/* The cluster's next item (a 256-row tile of one (batch, head)), false when it has none: the
 * order of flash3_section_item over the grid's clusters, cluster c = blockIdx.x / 2. Both blocks
 * of a cluster get the same items. */
static __device__ __forceinline__ bool cluster_item(const flash3_params &p, flash3_cursor &c, flash3_item &w)
{
    return flash3_section_item<R15_ROWS>(p, (int)gridDim.x / R15_CLUSTER, (int)blockIdx.x / R15_CLUSTER,
                                         c, w);
}

/* The producer (one thread of warpgroup 0 of each block), rung 14's ahead_producer with:
 *   - Q: the block's two 64-row blocks of the cluster's tile, each 64-column panel its own box
 *     (p.q_map's box is 64 rows of one panel), into the rows of the Q buffer that its consumer
 *     warpgroup reads (warpgroup c: rows 64c..64c+63 of each panel), four copies, one mbarrier;
 *   - K and V: this block's panel (rank r: columns 64r..64r+63) of each tile, multicast to both
 *     blocks (p.k_map's and p.v_map's box: 128 rows of one panel), once the stage is free in both
 *     (its empty mbarrier counts both blocks' consumer warps); the full mbarrier expects the
 *     whole tile, both panels. */
template <int D, int VS>
static __device__ __forceinline__ void cluster_producer(const flash3_params &p, const flash3_block &b,
                                                        uint32_t rank, attn_regions_ctx &rg)
{
    constexpr int BM = H3_BLOCK_M;
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, BM), KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    constexpr uint32_t PANEL_BYTES = H3_BLOCK_N * 128;        /* one 64-column panel of a K or V tile */
    constexpr uint16_t BOTH = (1u << R15_CLUSTER) - 1u;
    int u = 0;
    flash3_cursor cur = { 0, 0 };
    flash3_item w;
    for (int j = 0; cluster_item(p, cur, w); ++j) {
        const int q = j % 2;
        attn_region_begin(rg, ATTN_REGION_WAIT_FREE);
        mbar_wait(q_empty<VS>(b, q), ((uint32_t)(j / 2) & 1u) ^ 1u);
        attn_region_end(rg, ATTN_REGION_WAIT_FREE);
        attn_region_begin(rg, ATTN_REGION_TMA_Q);
        mbar_arrive_expect_tx(q_full<VS>(b, q), Q_BYTES);   /* the full boxes, even outside 0..seq */
#pragma unroll
        for (int c = 0; c < H3_CONSUMERS; ++c)
#pragma unroll
            for (int panel = 0; panel < D / 64; ++panel)
                tma_load_4d(b.sQ + q * Q_BYTES + (uint32_t)(panel * BM * 128 + c * 64 * 128), &p.q_map,
                            q_full<VS>(b, q), 0, w.m0 + r15_row_offset(rank, c), panel, w.bh);
        attn_region_end(rg, ATTN_REGION_TMA_Q);
        for (int n = 0; n <= w.n_end; ++n) {
            if (n < w.n_end) {                /* K[n] */
                const int uk = u + n, s = kv_stage(uk);
                attn_region_begin(rg, ATTN_REGION_WAIT_FREE);
                mbar_wait(k_empty<VS>(b, s), kv_phase(uk) ^ 1u);
                attn_region_end(rg, ATTN_REGION_WAIT_FREE);
                attn_region_begin(rg, ATTN_REGION_TMA_K);
                mbar_arrive_expect_tx(k_full(b, s), KV_BYTES);
                tma_load_4d_multicast(b.sK + s * KV_BYTES + rank * PANEL_BYTES, &p.k_map, k_full(b, s),
                                      0, n * H3_BLOCK_N, (int)rank, w.bh, BOTH);
                attn_region_end(rg, ATTN_REGION_TMA_K);
            }
            if (n > 0) {                      /* V[n - 1] */
                const int uv = u + n - 1, s = v_stage<VS>(uv);
                attn_region_begin(rg, ATTN_REGION_WAIT_FREE);
                mbar_wait(v_empty<VS>(b, s), v_phase<VS>(uv) ^ 1u);
                attn_region_end(rg, ATTN_REGION_WAIT_FREE);
                attn_region_begin(rg, ATTN_REGION_TMA_V);
                mbar_arrive_expect_tx(v_full(b, s), KV_BYTES);
                tma_load_4d_multicast(b.sV + s * KV_BYTES + rank * PANEL_BYTES, &p.v_map, v_full(b, s),
                                      0, (n - 1) * H3_BLOCK_N, (int)rank, w.bh, BOTH);
                attn_region_end(rg, ATTN_REGION_TMA_V);
            }
        }
        u += w.n_end;
    }
}

/* What a consumer warpgroup's key-tile steps below read: its descriptors, its item's place in
 * the block's key tiles and its rows, the softmax scale, its turns. */
typedef struct {
    uint64_t q_desc, k_desc, v_desc;
    int u0;                                   /* the item's key tile n is the block's u0 + n */
    int key0;                                 /* the item's first key: n_begin * BLOCK_N */
    int r0, seq, n_mask;                      /* first row; the first key tile that needs the mask */
    float c;                                  /* scale * log2(e) */
    uint32_t pp_mine, pp_next;                /* its turn's named barrier, the next one's */
} r15_wg;

/* S[0] of the item and its softmax, alone (O = 0: nothing to rescale); prev_q_empty handed back
 * under it. */
template <int D, int BM>
static __device__ __forceinline__ void first_tile(const flash3_block &b, const r15_wg &w,
                                                  uint32_t prev_q_empty, uint32_t (&pk)[H3_BLOCK_N / 16][4],
                                                  float (&m_run)[2], float (&l_run)[2],
                                                  float (&alpha_p)[2], attn_regions_ctx &rg)
{
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    const int s0 = kv_stage(w.u0);
    float sacc[H3_BLOCK_N / 2];
    attn_region_begin(rg, ATTN_REGION_WAIT_K);
    mbar_wait(k_full(b, s0), kv_phase(w.u0));
    attn_region_end(rg, ATTN_REGION_WAIT_K);
    attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
    named_barrier_sync(w.pp_mine, 256);       /* my turn */
    attn_region_end(rg, ATTN_REGION_WAIT_TURN);
    attn_region_begin(rg, ATTN_REGION_S);
    issue_qk<D, BM>(sacc, w.q_desc, w.k_desc, (uint32_t)s0 * KV_BYTES);
    named_barrier_arrive(w.pp_next, 256);     /* the next one's turn */
    if (prev_q_empty) hand_back(prev_q_empty, rg);
    wgmma_wait<0>();
    wgmma_fence_regs(sacc);
    attn_region_end(rg, ATTN_REGION_S);
    cluster_release(k_empty<R15_V_STAGES>(b, s0));
    attn_region_begin(rg, ATTN_REGION_SOFTMAX);
    if (w.n_mask <= 0) mask_rows(sacc, w.r0, w.key0, w.seq);
    online_softmax_lazy<H3_BLOCK_N>(sacc, m_run, l_run, alpha_p, w.c);
    pack_p<H3_BLOCK_N>(sacc, pk);
    attn_region_end(rg, ATTN_REGION_SOFTMAX);
}

/* Key tile n >= 1 of the item: in one turn issue S[n] (its first SCOLS keys), rescale O by tile
 * n-1's alpha if it must, issue O += P[n-1].V[n-1]; then the softmax of S[n]'s first PCOLS
 * columns under that product, the wait for it, and P[n] packed. resc_p, alpha_p: tile n's. */
template <int D, int BM, int SCOLS, int PCOLS>
static __device__ __forceinline__ void key_tile(const flash3_block &b, const r15_wg &w, int n,
                                                float (&o)[D / 2], uint32_t (&pk)[H3_BLOCK_N / 16][4],
                                                float (&m_run)[2], float (&l_run)[2],
                                                float (&alpha_p)[2], bool &resc_p,
                                                attn_regions_ctx &rg)
{
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    const int s = kv_stage(w.u0 + n), sp = v_stage<R15_V_STAGES>(w.u0 + n - 1);
    float sacc[H3_BLOCK_N / 2];
    attn_region_begin(rg, ATTN_REGION_WAIT_K);
    mbar_wait(k_full(b, s), kv_phase(w.u0 + n));
    attn_region_end(rg, ATTN_REGION_WAIT_K);
    attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
    named_barrier_sync(w.pp_mine, 256);
    attn_region_end(rg, ATTN_REGION_WAIT_TURN);
    attn_region_begin(rg, ATTN_REGION_S);     /* holds the rescale, tile n-1's wait V and O+=PV issue */
    if constexpr (SCOLS == 64) issue_qk_half<D, BM>(sacc, w.q_desc, w.k_desc, (uint32_t)s * KV_BYTES);
    else issue_qk<D, BM>(sacc, w.q_desc, w.k_desc, (uint32_t)s * KV_BYTES);
    if (resc_p) rescale_o<D>(o, alpha_p);
    attn_region_begin(rg, ATTN_REGION_WAIT_V);
    mbar_wait(v_full(b, sp), v_phase<R15_V_STAGES>(w.u0 + n - 1));
    attn_region_end(rg, ATTN_REGION_WAIT_V);
    attn_region_begin(rg, ATTN_REGION_PV);
    issue_pv<D>(o, pk, w.v_desc, (uint32_t)sp * KV_BYTES);
    attn_region_end(rg, ATTN_REGION_PV);
    named_barrier_arrive(w.pp_next, 256);
    wgmma_wait<1>();                          /* S[n] is complete; P[n-1].V[n-1] may not be */
    wgmma_fence_regs(sacc);
    attn_region_end(rg, ATTN_REGION_S);
    cluster_release(k_empty<R15_V_STAGES>(b, s));

    attn_region_begin(rg, ATTN_REGION_SOFTMAX);   /* to P[n] packed */
    if (PCOLS == 64 || n >= w.n_mask) mask_rows<PCOLS>(sacc, w.r0, w.key0 + n * H3_BLOCK_N, w.seq);
    resc_p = online_softmax_lazy<H3_BLOCK_N, PCOLS>(sacc, m_run, l_run, alpha_p, w.c);
    wait_pv_after_softmax<D>(l_run);          /* P[n-1].V[n-1] is complete: O and pk are free */
    wgmma_fence_regs(o);
    cluster_release(v_empty<R15_V_STAGES>(b, sp));
    pack_p<H3_BLOCK_N, PCOLS>(sacc, pk);      /* P[n], written only now that no wgmma reads pk */
    attn_region_end(rg, ATTN_REGION_SOFTMAX);
}

/* The item's last rescale and P.V (its first KEYS keys: 4 k-steps on the half tile), in their
 * own turn, and the wait for it. */
template <int D, int KEYS>
static __device__ __forceinline__ void last_pv(const flash3_block &b, const r15_wg &w, int n_tiles,
                                               float (&o)[D / 2], const uint32_t (&pk)[H3_BLOCK_N / 16][4],
                                               const float (&alpha_p)[2], bool resc_p,
                                               attn_regions_ctx &rg)
{
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    const int sp = v_stage<R15_V_STAGES>(w.u0 + n_tiles - 1);
    attn_region_begin(rg, ATTN_REGION_WAIT_V);
    mbar_wait(v_full(b, sp), v_phase<R15_V_STAGES>(w.u0 + n_tiles - 1));
    attn_region_end(rg, ATTN_REGION_WAIT_V);
    attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
    named_barrier_sync(w.pp_mine, 256);
    attn_region_end(rg, ATTN_REGION_WAIT_TURN);
    attn_region_begin(rg, ATTN_REGION_PV);
    if (resc_p) rescale_o<D>(o, alpha_p);
    issue_pv<D, KEYS>(o, pk, w.v_desc, (uint32_t)sp * KV_BYTES);
    attn_region_end(rg, ATTN_REGION_PV);
    named_barrier_arrive(w.pp_next, 256);
    attn_region_begin(rg, ATTN_REGION_EPILOGUE);   /* from the wait for that product */
    wgmma_wait<0>();
    wgmma_fence_regs(o);
    cluster_release(v_empty<R15_V_STAGES>(b, sp));
}

/* The epilogue by the TMA unit (flash3.cuh's store_o_tma_issue) for a warpgroup whose first row
 * is r0 of the cluster's tile: O into its rows of the Q buffer, fenced, then one box of p.o_map
 * per panel by the warpgroup's first thread, unless its rows lie outside 0..seq-1. */
template <int D>
static __device__ __forceinline__ void store_rows_tma_issue(const flash3_params &p, int bh, int r0,
                                                            uint32_t sQ, int cwg, float (&o)[D / 2],
                                                            float (&l_run)[2])
{
    constexpr int BM = H3_BLOCK_M;
    o_to_smem<D, BM>(sQ, cwg, o, l_run);
    fence_proxy_async_smem();
    named_barrier_sync(NBAR_EPILOGUE + cwg, 128);   /* all 128 threads' rows written and fenced */
    if ((threadIdx.x & 127) == 0 && r0 >= 0 && r0 < p.seq) {
#pragma unroll
        for (int panel = 0; panel < D / 64; ++panel)
            tma_store_4d(&p.o_map, sQ + (uint32_t)(panel * BM * 128 + cwg * 64 * 128), 0, r0, panel, bh);
        tma_store_commit();
    }
}

/* Consumer warpgroup cwg of the block of rank `rank` on the cluster's item it: rung 14's
 * consume_item for its 64 rows r0 = it.m0 + r15_row_offset(rank, cwg), over all of the item's
 * key tiles 0 .. it.n_end - 1 (those past its rows' reach released unread, its turn taken), each
 * K and V stage released in both blocks. */
template <int D>
static __device__ __forceinline__ void consume_item(const flash3_params &p, const flash3_block &b,
                                                    uint32_t rank, int cwg, const flash3_item &it,
                                                    uint32_t sQ, uint32_t q_bar, uint32_t q_parity,
                                                    int u0, uint32_t prev_q_empty, attn_regions_ctx &rg)
{
    constexpr int BN = H3_BLOCK_N, BM = H3_BLOCK_M, NC = H3_CONSUMERS;
    const int seq = p.seq;
    const int n_item = it.n_end;
    r15_wg w;
    w.q_desc = q_desc_of(sQ, cwg);
    w.k_desc = k_desc_of(b);
    w.v_desc = v_desc_of(b);
    w.u0 = u0;
    w.key0 = 0;
    w.r0 = it.m0 + r15_row_offset(rank, cwg);
    w.seq = seq;
    w.n_mask = min(w.r0, seq) / BN;           /* the first key tile that needs the mask */
    w.c = p.scale_log2;
    w.pp_mine = NBAR_PINGPONG + (uint32_t)cwg;
    w.pp_next = NBAR_PINGPONG + (uint32_t)((cwg + 1) % NC);

    const int r0 = w.r0;
    const int n_reach = r0 >= 0 && r0 < seq ? causal_key_tiles(r0, 64, BN, seq) : 0;
    const int n_tiles = min(n_reach, n_item);   /* the ones it computes */
    /* its last key tile holds no more than 64 keys that its rows see (rung 12's half tile) */
    const bool half = n_tiles > 0 && min(r0 + 64, seq) - (n_tiles - 1) * BN <= 64;
    float o[D / 2];
    float m_run[2] = { -INFINITY, -INFINITY }, l_run[2] = { 0.f, 0.f };
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;

    attn_region_begin(rg, ATTN_REGION_WAIT_Q);
    mbar_wait(q_bar, q_parity);
    attn_region_end(rg, ATTN_REGION_WAIT_Q);
    if (n_tiles == 0) {
        /* no key tile reaches these rows (they lie before row 0 or past seq) */
        if (prev_q_empty) hand_back(prev_q_empty, rg);
        attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
        skip_turn(w.pp_mine, w.pp_next);
        attn_region_end(rg, ATTN_REGION_WAIT_TURN);
        attn_region_begin(rg, ATTN_REGION_EPILOGUE);   /* (nothing to wait for) */
    } else {
        uint32_t pk[BN / 16][4];
        float alpha_p[2];                     /* the last softmax's alpha, and whether O needs it */
        bool resc_p = false;
        if (half && n_tiles == 1) {
            first_tile<D, BM>(b, w, prev_q_empty, pk, m_run, l_run, alpha_p, rg);
            last_pv<D, 64>(b, w, n_tiles, o, pk, alpha_p, resc_p, rg);
        } else {
            first_tile<D, BM>(b, w, prev_q_empty, pk, m_run, l_run, alpha_p, rg);
            const int n_full = half ? n_tiles - 1 : n_tiles;
            for (int n = 1; n < n_full; ++n)
                key_tile<D, BM, BN, BN>(b, w, n, o, pk, m_run, l_run, alpha_p, resc_p, rg);
            if (half) {
                key_tile<D, BM, R15_HALF_S(D), R15_HALF_P(D)>(b, w, n_tiles - 1, o, pk, m_run, l_run,
                                                             alpha_p, resc_p, rg);
                last_pv<D, 64>(b, w, n_tiles, o, pk, alpha_p, resc_p, rg);
            } else {
                last_pv<D, BN>(b, w, n_tiles, o, pk, alpha_p, resc_p, rg);
            }
        }
    }
    /* The item's key tiles past this warpgroup's reach, each released in both blocks once it has
     * landed here, and its turn taken. */
    for (int n = n_tiles; n < n_item; ++n) {
        const int s = kv_stage(u0 + n), sv = v_stage<R15_V_STAGES>(u0 + n);
        attn_region_begin(rg, ATTN_REGION_WAIT_K);
        mbar_wait(k_full(b, s), kv_phase(u0 + n));
        cluster_release(k_empty<R15_V_STAGES>(b, s));
        mbar_wait(v_full(b, sv), v_phase<R15_V_STAGES>(u0 + n));
        cluster_release(v_empty<R15_V_STAGES>(b, sv));
        attn_region_end(rg, ATTN_REGION_WAIT_K);
        attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
        skip_turn(w.pp_mine, w.pp_next);
        attn_region_end(rg, ATTN_REGION_WAIT_TURN);
    }
    store_rows_tma_issue<D>(p, it.bh, r0, sQ, cwg, o, l_run);   /* its wait: under the next item's S[0] */
    attn_region_end(rg, ATTN_REGION_EPILOGUE);
}

/* One block of a cluster of two: rung 14's fwd_block with cluster_producer, the consumers'
 * releases in both blocks, and the cluster waiting for itself once its mbarriers are armed and
 * before it exits. 384 threads = the producer warpgroup and two consumer warpgroups. */
template <int D>
static __device__ __forceinline__ void fwd_block(const flash3_params &p)
{
    constexpr int BM = H3_BLOCK_M;
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, BM);
    const flash3_block b = flash3_block_init<D, 2, BM, R15_V_STAGES, R15_CLUSTER>(p);
    const uint32_t rank = cluster_rank();
    cluster_sync();                           /* both blocks' mbarriers armed before any remote use */
    griddep_launch_dependents();              /* the next kernel may be placed as blocks leave */
    griddep_wait();                           /* the kernel ahead has completed: memory from here */
    if (threadIdx.x >> 7 == 0) {
        setmaxnreg_dec<R15_PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            attn_regions_ctx rg = flash3_regions_start(p);
            cluster_producer<D, R15_V_STAGES>(p, b, rank, rg);
            attn_regions_finish(rg);
        }
    } else {
        setmaxnreg_inc<R15_CONSUMER_REGS>();
        attn_regions_ctx rg = flash3_regions_start(p);
        /* (through a shuffle from lane 0: uniform across the warp, kept in uniform registers) */
        const int cwg = __shfl_sync(0xffffffffu, (int)(threadIdx.x >> 7), 0) - 1;
        const bool storer = (threadIdx.x & 127) == 0;   /* issues the warpgroup's TMA stores */
        if (storer) tma_prefetch_map(&p.o_map);
        if (cwg == 0) named_barrier_arrive(NBAR_PINGPONG, 256);   /* 0 goes first */
        int u0 = 0;                           /* the block's key tiles before this item */
        flash3_cursor cur = { 0, 0 };
        flash3_item it;
        for (int j = 0; cluster_item(p, cur, it); ++j) {
            const int qb = j % 2;
            consume_item<D>(p, b, rank, cwg, it, b.sQ + (uint32_t)qb * Q_BYTES,
                            q_full<R15_V_STAGES>(b, qb), (uint32_t)(j / 2) & 1u, u0,
                            j ? q_empty<R15_V_STAGES>(b, qb ^ 1) : 0u, rg);
            u0 += it.n_end;
        }
        if (storer) tma_store_wait();         /* O is in global memory before the block ends */
        attn_regions_finish(rg);
    }
    cluster_sync();                           /* no multicast copy or remote arrival is still on its way here */
}

__global__ void __cluster_dims__(R15_CLUSTER, 1, 1) __launch_bounds__(H3_THREADS, 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r15_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<128>(p);
#endif
}

const flash3_rung FLASH3_RUNG(15) = {
    15, "+ K and V multicast to a cluster of two (head_dim 128)",
    NULL, (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r15_sm90a),
    /* persistent */ 1, /* q_buffers */ 2,
    NULL, NULL,
    /* block_m */ H3_BLOCK_M, /* block_m_d128 */ H3_BLOCK_M, /* dependent_launch */ 1,
    /* v_stages */ R15_V_STAGES, /* cluster */ R15_CLUSTER,
};
