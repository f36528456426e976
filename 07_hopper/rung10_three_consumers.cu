/* 07_hopper rung 10: rung 8 + three consumer warpgroups at head_dim 64 (192x128 tiles).
 * At head_dim 64 rung 8's two consumer warpgroups keep neither the tensor cores nor the
 * exponentials (MUFU) busy: each warpgroup waits on its own products and its own softmax in
 * turn, and two of them cannot fill the gaps. A third consumer warpgroup takes 64 more query
 * rows of the same tile: the block's tile is 192 rows, the three warpgroups issue their products
 * in a round-robin of turns (named barriers, rung 4's ping-pong with three), and while one runs
 * its softmax the others' products keep the tensor cores fed. The registers are split as
 * FlashAttention-3 splits them for three consumers: 32 for the producer, 160 for each consumer
 * (128 x 32 + 384 x 160 = 65536); a consumer thread's S (64), O (32) and P (32) fit in that.
 * Head_dim 128 stays on rung 8 (its O needs 64 registers more).
 *
 * Causal bounds per warpgroup. A 192-row tile is not a multiple of the 128-key tile: the key
 * tiles the tile reaches (its last row's) are not all reached by its first rows. Each consumer
 * warpgroup computes only the key tiles its own 64 rows reach (none where its rows lie past
 * seq); for the item's other tiles it still takes its turns and releases the stages (once each
 * is full, so that the release counts for that tile), so that producer and turns run as on rung
 * 8. Without this, 1024-row sequences would compute a third more key tiles than rung 8.
 *
 * Per block: the work items of p.work (the split over the keys where the grid is small,
 * flash3_split.h with 192-row tiles) or flash3_section_item's order (192-row tiles):
 *   warpgroup 0, the producer (split_producer, 192-row Q tiles);
 *   warpgroups 1-3, the consumers, 64 query rows each: rung 8's loop over their key tiles (S[n]
 *     and P[n-1].V[n-1] issued back to back in one turn, the softmax of S[n] under the second).
 * Sources: Shah et al. 2024, "FlashAttention-3" (arXiv 2407.08608), its hopper/ sources (192x128
 * tiles at head_dim 64, three MMA warpgroups, the warp scheduler barrier's round-robin); the PTX
 * ISA's "setmaxnreg" and "bar.sync / bar.arrive".
 *
 * Kernels: flash3_fwd_bf16_causal_192x128_d64_r10_sm90a; grid: the plan's blocks (at most the
 * SMs) or min(SMs, batch*heads x query tiles of 192 rows), 512 threads,
 * H3_SMEM_BYTES(64, 192, 2) bytes of dynamic shared memory; with a split, then
 * flash3_fwd_combine_bf16_d64_r10_sm90a, grid (split tiles, 192 / 32), 256 threads. The regions
 * build (--regions) compiles the same file again into copies named ..._regions (flash3.cuh).
 */
#include "flash3.cuh"
#include "flash3_split.cuh"   /* split_item, next_item, split_producer, store_o_partial, combine_rows */

#define R10_BLOCK_M       H3_BLOCK_M3         /* 192 query rows per tile: 64 per consumer warpgroup */
#define R10_CONSUMERS     (R10_BLOCK_M / 64)
#define R10_THREADS       (128 * (1 + R10_CONSUMERS))
#define R10_PRODUCER_REGS 32                  /* 128 x 32 + 384 x 160 = 65536 */
#define R10_CONSUMER_REGS 160

/* Consumer warpgroup cwg (0..2) on item it, as rung 8's consume_item (Q in buffer sQ, its full
 * barrier's parity q_parity; the item's key tile n is the block's key tile u0 + n; prev_q_empty
 * handed back under the first S), with the warpgroup's own causal bound: it computes key tiles
 * si.n_begin .. n_mine-1, n_mine = the tiles its rows reach (at most it.n_end; si.n_begin where
 * its rows lie past seq). Every warpgroup takes it.n_end - si.n_begin + 1 turns per item, and
 * releases every key tile of the item: those past n_mine once the producer has filled them. */
static __device__ __forceinline__ void consume_item(const flash3_params &p, const flash3_block &b,
                                                    int cwg, const split_item &si, uint32_t sQ,
                                                    uint32_t q_bar, uint32_t q_parity, int u0,
                                                    uint32_t prev_q_empty, attn_regions_ctx &rg)
{
    constexpr int D = 64, BN = H3_BLOCK_N, BM = R10_BLOCK_M;
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, BN);
    const int seq = p.seq;
    const float c = p.scale_log2;
    const uint64_t k_desc = k_desc_of(b), v_desc = v_desc_of(b), q_desc = q_desc_of(sQ, cwg);
    const flash3_item &it = si.it;
    const int n_item = it.n_end - si.n_begin;   /* the item's key tiles; the n-th is n_begin + n */
    const uint32_t pp_mine = NBAR_PINGPONG + (uint32_t)cwg,
                   pp_next = NBAR_PINGPONG + (uint32_t)((cwg + 1) % R10_CONSUMERS);

    const int r0 = it.m0 + cwg * 64;          /* the warpgroup's first row */
    const int n_reach = r0 >= 0 && r0 < seq ? causal_key_tiles(r0, 64, BN, seq) : 0;
    const int n_tiles = max(min(n_reach, it.n_end) - si.n_begin, 0);   /* the ones it computes */
    /* the first of them that needs the mask (tile_needs_mask): the one that crosses the
     * diagonal of the warpgroup's first row, or the end of the sequence */
    const int n_mask = min(r0, seq) / BN - si.n_begin;
    float o[D / 2];
    float m_run[2] = { -INFINITY, -INFINITY }, l_run[2] = { 0.f, 0.f };
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;

    attn_region_begin(rg, ATTN_REGION_WAIT_Q);
    mbar_wait(q_bar, q_parity);
    attn_region_end(rg, ATTN_REGION_WAIT_Q);
    if (n_tiles == 0) {
        /* no key tile of this item reaches these rows: the previous item's buffer handed back
         * now, and the turn of the item's first S skipped */
        if (prev_q_empty) hand_back(prev_q_empty, rg);
        attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
        skip_turn(pp_mine, pp_next);
        attn_region_end(rg, ATTN_REGION_WAIT_TURN);
        attn_region_begin(rg, ATTN_REGION_EPILOGUE);   /* (nothing to wait for) */
    } else {
        /* S[0] and its softmax alone (O = 0: no rescale). */
        uint32_t pk[BN / 16][4];
        {
            const int s0 = kv_stage(u0);
            float sacc[BN / 2];
            float alpha[2];
            attn_region_begin(rg, ATTN_REGION_WAIT_K);
            mbar_wait(k_full(b, s0), kv_phase(u0));
            attn_region_end(rg, ATTN_REGION_WAIT_K);
            attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
            named_barrier_sync(pp_mine, 256);     /* my turn */
            attn_region_end(rg, ATTN_REGION_WAIT_TURN);
            attn_region_begin(rg, ATTN_REGION_S);
            issue_qk<D, BM>(sacc, q_desc, k_desc, (uint32_t)s0 * KV_BYTES);
            named_barrier_arrive(pp_next, 256);   /* the next one's turn */
            if (prev_q_empty) hand_back(prev_q_empty, rg);
            wgmma_wait<0>();
            wgmma_fence_regs(sacc);
            attn_region_end(rg, ATTN_REGION_S);
            warp_release(k_empty(b, s0));
            attn_region_begin(rg, ATTN_REGION_SOFTMAX);
            if (n_mask <= 0) mask_rows(sacc, r0, si.n_begin * BN, seq);
            online_softmax<BN>(sacc, m_run, l_run, alpha, c);
            pack_p<BN>(sacc, pk);
            attn_region_end(rg, ATTN_REGION_SOFTMAX);
        }
        /* Issue S[n] and O += P[n-1].V[n-1] back to back in one turn, softmax of S[n] under the
         * second, then rescale O by tile n's alpha. */
        for (int n = 1; n < n_tiles; ++n) {
            const int s = kv_stage(u0 + n), sp = kv_stage(u0 + n - 1);
            float sacc[BN / 2];
            attn_region_begin(rg, ATTN_REGION_WAIT_K);
            mbar_wait(k_full(b, s), kv_phase(u0 + n));
            attn_region_end(rg, ATTN_REGION_WAIT_K);
            attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
            named_barrier_sync(pp_mine, 256);
            attn_region_end(rg, ATTN_REGION_WAIT_TURN);
            attn_region_begin(rg, ATTN_REGION_S);   /* holds tile n-1's wait V and O+=PV issue */
            issue_qk<D, BM>(sacc, q_desc, k_desc, (uint32_t)s * KV_BYTES);
            attn_region_begin(rg, ATTN_REGION_WAIT_V);
            mbar_wait(v_full(b, sp), kv_phase(u0 + n - 1));
            attn_region_end(rg, ATTN_REGION_WAIT_V);
            attn_region_begin(rg, ATTN_REGION_PV);
            issue_pv<D>(o, pk, v_desc, (uint32_t)sp * KV_BYTES);
            attn_region_end(rg, ATTN_REGION_PV);
            named_barrier_arrive(pp_next, 256);
            wgmma_wait<1>();                      /* S[n] is complete; P[n-1].V[n-1] may not be */
            wgmma_fence_regs(sacc);
            attn_region_end(rg, ATTN_REGION_S);
            warp_release(k_empty(b, s));

            attn_region_begin(rg, ATTN_REGION_SOFTMAX);   /* to O rescaled, P[n] packed */
            if (n >= n_mask) mask_rows(sacc, r0, (si.n_begin + n) * BN, seq);
            float alpha[2];
            online_softmax<BN>(sacc, m_run, l_run, alpha, c);
            wait_pv_after_softmax<D>(l_run);      /* P[n-1].V[n-1] is complete: O and pk are free */
            wgmma_fence_regs(o);
            warp_release(v_empty(b, sp));
            rescale_o<D>(o, alpha);
            pack_p<BN>(sacc, pk);                 /* P[n], written only now that no wgmma reads pk */
            attn_region_end(rg, ATTN_REGION_SOFTMAX);
        }
        /* The last P.V alone, in its own turn. */
        const int sp = kv_stage(u0 + n_tiles - 1);
        attn_region_begin(rg, ATTN_REGION_WAIT_V);
        mbar_wait(v_full(b, sp), kv_phase(u0 + n_tiles - 1));
        attn_region_end(rg, ATTN_REGION_WAIT_V);
        attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
        named_barrier_sync(pp_mine, 256);
        attn_region_end(rg, ATTN_REGION_WAIT_TURN);
        attn_region_begin(rg, ATTN_REGION_PV);
        issue_pv<D>(o, pk, v_desc, (uint32_t)sp * KV_BYTES);
        attn_region_end(rg, ATTN_REGION_PV);
        named_barrier_arrive(pp_next, 256);
        attn_region_begin(rg, ATTN_REGION_EPILOGUE);   /* from the wait for that product */
        wgmma_wait<0>();
        wgmma_fence_regs(o);
        warp_release(v_empty(b, sp));
    }
    /* The item's key tiles past this warpgroup's reach: each released once the producer has
     * filled it (an earlier arrival would count towards the stage's previous use), and its turn
     * taken. Its own V stage was released first: the producer may need it to fill these. (Inside
     * the epilogue region: they run between the item's last product and its O.) */
    for (int n = n_tiles; n < n_item; ++n) {
        const int s = kv_stage(u0 + n);
        attn_region_begin(rg, ATTN_REGION_WAIT_K);
        mbar_wait(k_full(b, s), kv_phase(u0 + n));
        warp_release(k_empty(b, s));
        mbar_wait(v_full(b, s), kv_phase(u0 + n));
        warp_release(v_empty(b, s));
        attn_region_end(rg, ATTN_REGION_WAIT_K);
        attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
        skip_turn(pp_mine, pp_next);
        attn_region_end(rg, ATTN_REGION_WAIT_TURN);
    }
    if (si.slot < 0)
        store_o_tma_issue<D, BM>(p, it, sQ, cwg, o, l_run);   /* its wait: under the next item's S[0] */
    else
        store_o_partial<D, BM>(p, si, cwg, o, m_run, l_run);  /* no key: rows of -inf, combined out */
    attn_region_end(rg, ATTN_REGION_EPILOGUE);
}

/* One block: rung 8's fwd_block with three consumer warpgroups; 512 threads = the producer
 * warpgroup (R10_PRODUCER_REGS registers) and 3 consumer warpgroups (R10_CONSUMER_REGS). Item j
 * uses Q buffer j % 2, handed back under item j + 1's first S (all twelve consumer warps'
 * arrivals). */
static __device__ __forceinline__ void fwd_block(const flash3_params &p)
{
    constexpr int D = 64, BM = R10_BLOCK_M;
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, BM);
    const flash3_block b = flash3_block_init<D, 2, BM>(p);
    if (threadIdx.x >> 7 == 0) {
        setmaxnreg_dec<R10_PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            attn_regions_ctx rg = flash3_regions_start(p);
            split_producer<D, BM>(p, b, rg);
            attn_regions_finish(rg);
        }
    } else {
        setmaxnreg_inc<R10_CONSUMER_REGS>();
        attn_regions_ctx rg = flash3_regions_start(p);
        /* (through a shuffle from lane 0: the compiler then knows it is the same in every lane
         * of the warp, and can keep it and what derives from it in uniform registers) */
        const int cwg = __shfl_sync(0xffffffffu, (int)(threadIdx.x >> 7), 0) - 1;
        const bool storer = (threadIdx.x & 127) == 0;   /* issues the warpgroup's TMA stores */
        if (storer) tma_prefetch_map(&p.o_map);
        if (cwg == 0) named_barrier_arrive(NBAR_PINGPONG, 256);   /* 0 goes first */
        int u0 = 0;                           /* the block's key tiles before this item */
        split_cursor cur = { 0, { 0, 0 } };
        split_item it;
        /* (cur.j is j, said again each item, and the buffer to hand back under item j's first S
         * is item j-1's: so that neither holds a register of its own across the loop) */
        for (int j = 0; cur.j = j, next_item<BM>(p, cur, it); ++j) {
            const int qb = j % 2;
            consume_item(p, b, cwg, it, b.sQ + (uint32_t)qb * Q_BYTES,
                         q_full(b, qb), (uint32_t)(j / 2) & 1u, u0, j ? q_empty(b, qb ^ 1) : 0u, rg);
            u0 += it.it.n_end - it.n_begin;
        }
        if (storer) tma_store_wait();         /* O is in global memory before the block ends */
        attn_regions_finish(rg);
    }
}

__global__ void __launch_bounds__(R10_THREADS, 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_192x128_d64_r10_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block(p);
#endif
}

__global__ void __launch_bounds__(256)
FLASH3_KERNEL(flash3_fwd_combine_bf16_d64_r10_sm90a)(const __grid_constant__ flash3_combine_params cp)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    combine_rows<64, R10_BLOCK_M>(cp);
#endif
}

const flash3_rung FLASH3_RUNG(10) = {
    10, "+ three consumer warpgroups at head_dim 64 (192x128 tiles)",
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_192x128_d64_r10_sm90a),
    NULL,
    /* persistent */ 1, /* q_buffers */ 2,
    (const void *)FLASH3_KERNEL(flash3_fwd_combine_bf16_d64_r10_sm90a),
    NULL,
    /* block_m */ R10_BLOCK_M, /* block_m_d128 */ 0, /* dependent_launch */ 0,
    /* v_stages */ 0, /* cluster */ 0,
};
