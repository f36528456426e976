/* 07_hopper rung 9: rung 8 + an item's first S = Q.K^T and its softmax under the previous item's
 * last P.V. Rungs 3-8 run each work item alone in each consumer warpgroup: a prologue (the first
 * S, waited for, and its softmax, with no product under them), the loop, and an epilogue (the
 * last P.V, waited for, then O out). At head_dim 64 an item has 4.5 key tiles on average at the
 * blog's shape (2.5 at 32x16x512x64), so those two lone stretches are a large share of its time.
 * Here a consumer warpgroup walks its block's items as one stream of key tiles
 * (consume_stream): the first S of item j is issued together with the last P.V of item j - 1,
 * its softmax runs under that product, and item j - 1's epilogue follows; only the block's very
 * first S and very last P.V are alone. The products, the mask and the softmax of each tile are
 * rung 8's, in the same order, so O is rung 8's to the bit.
 *
 * Everything else is rung 8's: the work items (p.work where the host split the keys of a small
 * grid, else flash3_section_item), the producer, the TMA store of O from the item's Q buffer or
 * its partial and log-sum-exp, the combine kernel (the same code, this rung's name). A Q buffer
 * goes back to the producer after its item's epilogue, once the TMA has read it: under the next
 * key tile's products, or, where that tile starts an item, before the wait for that item's Q
 * (which may be loaded into that very buffer).
 * Sources: Shah et al. 2024, "FlashAttention-3" (arXiv 2407.08608), sections 3.1-3.2; Dao,
 * Haziza, Massa, Sizov 2023, "Flash-Decoding for long-context inference".
 *
 * Kernels: flash3_fwd_bf16_causal_128x128_d<head_dim>_r9_sm90a, head_dim 64 and 128, and, with a
 * split, flash3_fwd_combine_bf16_d<head_dim>_r9_sm90a; grids, threads and shared memory as rung
 * 8's. The regions build (--regions) compiles the same file again into copies named ..._regions
 * (flash3.cuh, "Region markers").
 */
#include "flash3.cuh"
#include "flash3_split.cuh"   /* split_item, next_item, split_producer, store_o_partial, combine_rows */

/* A consumer warpgroup's epilogue of item si (its O in o, its row sums l): as rung 8's, O into
 * the item's Q buffer sQ and the TMA store issued, or its partial O and log-sum-exp. */
template <int D>
static __device__ __forceinline__ void epilogue(const flash3_params &p, const split_item &si, uint32_t sQ,
                                                int cwg, float (&o)[D / 2], const float (&m)[2],
                                                float (&l)[2])
{
    if (si.slot < 0)
        store_o_tma_issue<D>(p, si.it, sQ, cwg, o, l);
    else
        store_o_partial<D>(p, si, cwg, o, m, l);
}

/* The stream's next key tile after tile n of item j (the block's tile u): n + 1 of the same item,
 * or, after an item's last tile, tile 0 of the next item, with the finished item kept as prev
 * (prev_j, its row max and sum in m_prev, l_prev, the running ones reset). False when the block
 * has no more items (the finished item is then prev). */
static __device__ __forceinline__ bool flash3_stream_next(const flash3_params &p, split_cursor &cur,
                                                          split_item &it, split_item &prev, int &j,
                                                          int &n, int &u, int &prev_j,
                                                          float (&m_run)[2], float (&l_run)[2],
                                                          float (&m_prev)[2], float (&l_prev)[2])
{
    ++u;
    if (++n < it.it.n_end - it.n_begin) return true;
    prev = it;
    prev_j = j;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        m_prev[h] = m_run[h];
        l_prev[h] = l_run[h];
        m_run[h] = -INFINITY;
        l_run[h] = 0.f;
    }
    ++j;
    n = 0;
    return next_item(p, cur, it);
}

/* Consumer warpgroup cwg (0, 1): the block's items as one stream of key tiles. Per key tile n of
 * item j (the block's key tile u):
 *   n = 0: a Q buffer still to hand back goes back first (the producer may need it for this
 *          item's Q), then wait for Q of item j in buffer j % 2;
 *   wait K[u] -> issue S = Q_j.K[u]^T; then, if there is a previous key tile (of this item or the
 *   last of the item before), wait V[u-1] -> issue O += P[u-1].V[u-1];
 *   n > 0: a Q buffer still to hand back goes back now, under the products;
 *   wait for S only; release K[u]; mask, online softmax of S (n = 0: a fresh row max and sum),
 *   under the second product; wait for it; release V[u-1];
 *   n = 0: O holds the previous item's result: its epilogue (O to its Q buffer and the TMA store,
 *          or a partial), that buffer to hand back later, then O = 0;
 *   n > 0: O *= alpha;
 *   P packed to bf16 for the next tile's product.
 * After the last tile: the last P.V alone, and the last item's epilogue. So an item's first
 * S = Q.K^T and its softmax run under the previous item's last P.V, where rungs 3-8 ran them alone
 * (the prologue), and the epilogue runs after them. PINGPONG (head_dim 64): each tile's products
 * are one turn, the last P.V one more; both warpgroups walk the same stream, so their turns keep
 * alternating. rg: the warpgroup's region markers. */
template <int D>
static __device__ __forceinline__ void consume_stream(const flash3_params &p, const flash3_block &b,
                                                      int cwg, attn_regions_ctx &rg)
{
    constexpr bool PINGPONG = D == 64;
    constexpr int BN = H3_BLOCK_N;
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, BN), Q_BYTES = H3_TILE_BYTES(D, H3_BLOCK_M);
    const int lane = threadIdx.x & 31, w = (threadIdx.x & 127) >> 5, g = lane >> 2, t = lane & 3;
    const int seq = p.seq;
    const float c = p.scale_log2;
    const uint64_t k_desc = k_desc_of(b), v_desc = v_desc_of(b);
    const uint32_t pp_mine = NBAR_PINGPONG + (uint32_t)cwg, pp_next = NBAR_PINGPONG + (uint32_t)((cwg + 1) % 2);

    split_cursor cur = { 0, { 0, 0 } };
    split_item it, prev;                      /* the item of this key tile; the one before it */
    if (!next_item(p, cur, it)) return;
    int j = 0, n = 0, u = 0;                  /* item, its key tile, the block's key tile */
    float o[D / 2];
    float m_run[2] = { -INFINITY, -INFINITY }, l_run[2] = { 0.f, 0.f };
    float m_prev[2] = { 0.f, 0.f }, l_prev[2] = { 0.f, 0.f };   /* the previous item's, for its epilogue */
    uint32_t pk[BN / 16][4];
    uint32_t to_hand_back = 0;                /* a Q buffer's empty mbarrier, or 0 */
    int prev_j = -1;                          /* the finished item whose epilogue is due */
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;

    /* The block's first key tile: S and its softmax alone (no P.V before it). */
    {
        const int r0 = it.it.m0 + cwg * 64, row0 = r0 + 16 * w + g;
        attn_region_begin(rg, ATTN_REGION_WAIT_Q);
        mbar_wait(q_full(b, 0), 0);
        attn_region_end(rg, ATTN_REGION_WAIT_Q);
        float sacc[BN / 2];
        float alpha[2];
        attn_region_begin(rg, ATTN_REGION_WAIT_K);
        mbar_wait(k_full(b, 0), kv_phase(0));
        attn_region_end(rg, ATTN_REGION_WAIT_K);
        if constexpr (PINGPONG) {
            attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
            named_barrier_sync(pp_mine, 256);
            attn_region_end(rg, ATTN_REGION_WAIT_TURN);
        }
        attn_region_begin(rg, ATTN_REGION_S);
        issue_qk<D>(sacc, q_desc_of(b.sQ, cwg), k_desc, 0);
        if constexpr (PINGPONG) named_barrier_arrive(pp_next, 256);
        wgmma_wait<0>();
        wgmma_fence_regs(sacc);
        attn_region_end(rg, ATTN_REGION_S);
        warp_release(k_empty(b, 0));
        attn_region_begin(rg, ATTN_REGION_SOFTMAX);
        const int key0 = it.n_begin * BN;
        if (tile_needs_mask(key0, r0, seq)) mask_tile<BN>(sacc, row0, key0, seq, t);
        online_softmax<BN>(sacc, m_run, l_run, alpha, c);
        pack_p<BN>(sacc, pk);
        attn_region_end(rg, ATTN_REGION_SOFTMAX);
    }
    /* Every later key tile: its S together with the previous tile's P.V (flash3_stream_next moves
     * the position on: the next tile of this item, or the first of the next item). */
    while (flash3_stream_next(p, cur, it, prev, j, n, u, prev_j, m_run, l_run, m_prev, l_prev)) {
        const int qb = j % 2, s = kv_stage(u), sp = kv_stage(u - 1);
        const uint32_t sQ = b.sQ + (uint32_t)qb * Q_BYTES;
        const int r0 = it.it.m0 + cwg * 64;   /* the warpgroup's first row */
        const int row0 = r0 + 16 * w + g;     /* global row of h = 0; h = 1 is row0 + 8 */
        if (n == 0) {
            if (to_hand_back) { hand_back(to_hand_back, rg); to_hand_back = 0; }
            attn_region_begin(rg, ATTN_REGION_WAIT_Q);
            mbar_wait(q_full(b, qb), (uint32_t)(j / 2) & 1u);
            attn_region_end(rg, ATTN_REGION_WAIT_Q);
        }
        float sacc[BN / 2];
        attn_region_begin(rg, ATTN_REGION_WAIT_K);
        mbar_wait(k_full(b, s), kv_phase(u));
        attn_region_end(rg, ATTN_REGION_WAIT_K);
        if constexpr (PINGPONG) {
            attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
            named_barrier_sync(pp_mine, 256);
            attn_region_end(rg, ATTN_REGION_WAIT_TURN);
        }
        attn_region_begin(rg, ATTN_REGION_S);   /* holds the previous tile's wait V and O+=PV issue */
        issue_qk<D>(sacc, q_desc_of(sQ, cwg), k_desc, (uint32_t)s * KV_BYTES);
        attn_region_begin(rg, ATTN_REGION_WAIT_V);
        mbar_wait(v_full(b, sp), kv_phase(u - 1));
        attn_region_end(rg, ATTN_REGION_WAIT_V);
        attn_region_begin(rg, ATTN_REGION_PV);
        issue_pv<D>(o, pk, v_desc, (uint32_t)sp * KV_BYTES);
        attn_region_end(rg, ATTN_REGION_PV);
        if constexpr (PINGPONG) named_barrier_arrive(pp_next, 256);
        if (to_hand_back) { hand_back(to_hand_back, rg); to_hand_back = 0; }
        wgmma_wait<1>();                      /* S is complete; the P.V may not be */
        wgmma_fence_regs(sacc);
        attn_region_end(rg, ATTN_REGION_S);
        warp_release(k_empty(b, s));

        attn_region_begin(rg, ATTN_REGION_SOFTMAX);
        const int key0 = (it.n_begin + n) * BN;
        if (tile_needs_mask(key0, r0, seq)) mask_tile<BN>(sacc, row0, key0, seq, t);
        float alpha[2];
        online_softmax<BN>(sacc, m_run, l_run, alpha, c);
        wait_pv_after_softmax<D>(l_run);      /* the P.V is complete: O and pk are free */
        wgmma_fence_regs(o);
        warp_release(v_empty(b, sp));
        if (n == 0) {
            /* O holds the previous item's result, complete: its epilogue, then O = 0 */
            attn_region_end(rg, ATTN_REGION_SOFTMAX);
            attn_region_begin(rg, ATTN_REGION_EPILOGUE);
            epilogue<D>(p, prev, b.sQ + (uint32_t)(prev_j % 2) * Q_BYTES, cwg, o, m_prev, l_prev);
            attn_region_end(rg, ATTN_REGION_EPILOGUE);
            to_hand_back = q_empty(b, prev_j % 2);
#pragma unroll
            for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
            attn_region_begin(rg, ATTN_REGION_SOFTMAX);
        } else {
            rescale_o<D>(o, alpha);
        }
        pack_p<BN>(sacc, pk);
        attn_region_end(rg, ATTN_REGION_SOFTMAX);
    }
    /* The last P.V alone, in a turn of its own, then the last item's epilogue. */
    {
        const int sp = kv_stage(u - 1);
        attn_region_begin(rg, ATTN_REGION_WAIT_V);
        mbar_wait(v_full(b, sp), kv_phase(u - 1));
        attn_region_end(rg, ATTN_REGION_WAIT_V);
        if constexpr (PINGPONG) {
            attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
            named_barrier_sync(pp_mine, 256);
            attn_region_end(rg, ATTN_REGION_WAIT_TURN);
        }
        attn_region_begin(rg, ATTN_REGION_PV);
        issue_pv<D>(o, pk, v_desc, (uint32_t)sp * KV_BYTES);
        attn_region_end(rg, ATTN_REGION_PV);
        if constexpr (PINGPONG) named_barrier_arrive(pp_next, 256);
        if (to_hand_back) { hand_back(to_hand_back, rg); to_hand_back = 0; }
        attn_region_begin(rg, ATTN_REGION_EPILOGUE);   /* from the wait for that product */
        wgmma_wait<0>();
        wgmma_fence_regs(o);
        warp_release(v_empty(b, sp));
        epilogue<D>(p, prev, b.sQ + (uint32_t)(prev_j % 2) * Q_BYTES, cwg, o, m_prev, l_prev);
        attn_region_end(rg, ATTN_REGION_EPILOGUE);
    }
}

/* One block: the work items of p.work or flash3_section_item as one stream; 384 threads = the
 * producer warpgroup (H3_PRODUCER_REGS registers) and 2 consumer warpgroups (H3_CONSUMER_REGS).
 * Item j uses Q buffer j % 2; the consumers hand it back (Q empty) after its epilogue, once the TMA
 * has read their rows of O from it, under the next key tile's products (or before waiting for
 * the next item's Q, which may need that buffer). The last item's buffer is not needed again.
 * The storing thread waits for the stores' writes once, after the last item. */
template <int D>
static __device__ __forceinline__ void fwd_block(const flash3_params &p)
{
    constexpr bool PINGPONG = D == 64;        /* as in consume_stream */
    const flash3_block b = flash3_block_init<D, 2>(p);
    if (threadIdx.x >> 7 == 0) {
        setmaxnreg_dec<H3_PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            attn_regions_ctx rg = flash3_regions_start(p);
            split_producer<D>(p, b, rg);
            attn_regions_finish(rg);
        }
    } else {
        setmaxnreg_inc<H3_CONSUMER_REGS>();
        attn_regions_ctx rg = flash3_regions_start(p);
        const int cwg = (int)(threadIdx.x >> 7) - 1;
        const bool storer = (threadIdx.x & 127) == 0;   /* issues the warpgroup's TMA stores */
        if (storer) tma_prefetch_map(&p.o_map);
        if (PINGPONG && cwg == 0) named_barrier_arrive(NBAR_PINGPONG, 256);   /* 0 goes first */
        consume_stream<D>(p, b, cwg, rg);
        if (storer) tma_store_wait();         /* O is in global memory before the block ends */
        attn_regions_finish(rg);
    }
}

__global__ void __launch_bounds__(H3_THREADS, 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d64_r9_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<64>(p);
#endif
}

__global__ void __launch_bounds__(H3_THREADS, 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r9_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<128>(p);
#endif
}


__global__ void __launch_bounds__(256)
FLASH3_KERNEL(flash3_fwd_combine_bf16_d64_r9_sm90a)(const __grid_constant__ flash3_combine_params cp)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    combine_rows<64>(cp);
#endif
}

__global__ void __launch_bounds__(256)
FLASH3_KERNEL(flash3_fwd_combine_bf16_d128_r9_sm90a)(const __grid_constant__ flash3_combine_params cp)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    combine_rows<128>(cp);
#endif
}

const flash3_rung FLASH3_RUNG(9) = {
    9, "+ the next item's first S under this one's last P.V",
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d64_r9_sm90a),
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r9_sm90a),
    /* persistent */ 1, /* q_buffers */ 2,
    (const void *)FLASH3_KERNEL(flash3_fwd_combine_bf16_d64_r9_sm90a),
    (const void *)FLASH3_KERNEL(flash3_fwd_combine_bf16_d128_r9_sm90a),
    /* block_m */ H3_BLOCK_M, /* block_m_d128 */ 0, /* dependent_launch */ 0,
    /* v_stages */ 0, /* cluster */ 0,
};
