/* 07_hopper rung 8: rung 7 + a split over the keys where the grid is small (flash-decoding's
 * idea). Where batch*heads x query tiles is small against the SMs, the longest query tile sets
 * the time: at 1x1x4096x64 the last of 32 tiles walks 32 key tiles while 100 of 132 SMs idle.
 * There the host cuts each query tile's key range into chunks (flash3_split.h: chunks of an even
 * share of the work, the items longest-first, each to the least-loaded block) and hands every
 * block its list (p.work). A chunk that is its tile's whole key range ends as rung 7's items do
 * (O by TMA); any other writes its partial O, divided by its own row sums, and its rows'
 * log-sum-exp (fp32, store_o_partial), and a second kernel, flash3_fwd_combine, weighs a tile's
 * partials by their log-sum-exp into O. Where the tiles spread well the host plans no split,
 * p.work is NULL and the kernel is rung 7's: flash3_section_item's order, one kernel.
 *
 * Per block: the work items of p.work (or flash3_section_item): query tile m of one (batch, head)
 * against key tiles n_begin .. n_end-1 of 128 keys, through 2 K and 2 V stages (flash3.cuh):
 *   warpgroup 0, the producer: gives registers back and one of its threads issues every TMA copy:
 *     per item j, Q into buffer j % 2 once the consumers have let go of item j - 2's (Q empty
 *     mbarrier), then K[n] and V[n] into the next stage as soon as the consumers have released
 *     what that stage held (empty mbarriers);
 *   warpgroups 1, 2, the consumers, 64 query rows each: rung 7's loop over the item's key tiles
 *     (S[n] and P[n-1].V[n-1] issued back to back, the softmax of S[n] under the second; the
 *     previous item's Q buffer handed back under the first S; ping-pong at head_dim 64), only
 *     the mask is asked for by the key tile's own index: the chunk that holds the diagonal, or
 *     the end of the sequence, masks; the others do not.
 * Every row of a chunk sees at least one key (a chunk starts at or before its tile's first row),
 * so its row sum is positive. Key tiles past the diagonal are never loaded. Rows and keys past
 * seq: TMA fills the parts of a box outside the tensor with zeros, the mask hides keys >= seq,
 * the TMA store does not write rows >= seq and the combine kernel leaves them out.
 * Dao, Haziza, Massa, Sizov 2023, "Flash-Decoding for long-context inference"; FlashAttention-3
 * (Shah et al. 2024, arXiv 2407.08608) and its hopper/flash_fwd_combine_kernel.h (split-KV).
 *
 * Kernels: flash3_fwd_bf16_causal_128x128_d<head_dim>_r8_sm90a, head_dim 64 and 128; grid: the
 * plan's blocks (at most the SMs) or min(SMs, batch*heads x query tiles), 384 threads,
 * H3_SMEM_BYTES(D, 128, 2) bytes of dynamic shared memory; with a split, then
 * flash3_fwd_combine_bf16_d<head_dim>_r8_sm90a, grid (split tiles, 128 / rows per block), 256
 * threads. The regions build (--regions) compiles the same file again into copies named
 * ..._regions (flash3.cuh, "Region markers").
 */
#include "flash3.cuh"
#include "flash3_split.cuh"   /* split_item, next_item, split_producer, store_o_partial, combine_rows */

/* Consumer warpgroup cwg (0, 1) on item it, whose Q is in buffer sQ (full barrier completion
 * parity q_parity) and whose key tile n is the block's key tile u0 + n: query rows
 * m0 + 64cwg .. m0 + 64cwg + 63, key tiles si.n_begin .. it.n_end-1, then (a whole tile) its rows
 * of O into sQ and the TMA store issued (on return the TMA may still be reading them) or (a
 * chunk) its partial O and log-sum-exp (store_o_partial). prev_q_empty: the Q empty mbarrier of the
 * previous item's buffer (0 for the block's first item), handed back once the first S is issued
 * and the storing thread has waited for the TMA to read the previous item's rows of O.
 * PINGPONG (head_dim 64): the two warpgroups take turns issuing each tile's products.
 * rg: the warpgroup's region markers (flash3.cuh; nothing outside the regions build). */
template <int D>
static __device__ __forceinline__ void consume_item(const flash3_params &p, const flash3_block &b,
                                                    int cwg, const split_item &si, uint32_t sQ,
                                                    uint32_t q_bar, uint32_t q_parity, int u0,
                                                    uint32_t prev_q_empty, attn_regions_ctx &rg)
{
    constexpr bool PINGPONG = D == 64;
    constexpr int BN = H3_BLOCK_N;
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, BN);
    const int lane = threadIdx.x & 31, w = (threadIdx.x & 127) >> 5, g = lane >> 2, t = lane & 3;
    const int seq = p.seq;
    const float c = p.scale_log2;
    const uint64_t k_desc = k_desc_of(b), v_desc = v_desc_of(b), q_desc = q_desc_of(sQ, cwg);
    const flash3_item &it = si.it;
    const int n_tiles = it.n_end - si.n_begin;   /* the item's key tiles; the n-th is n_begin + n */
    const uint32_t pp_mine = NBAR_PINGPONG + (uint32_t)cwg, pp_next = NBAR_PINGPONG + (uint32_t)((cwg + 1) % 2);

    const int r0 = it.m0 + cwg * 64;          /* the warpgroup's first row */
    const int row0 = r0 + 16 * w + g;         /* global row of h = 0; h = 1 is row0 + 8 */
    float o[D / 2];
    float m_run[2] = { -INFINITY, -INFINITY }, l_run[2] = { 0.f, 0.f };
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;

    attn_region_begin(rg, ATTN_REGION_WAIT_Q);
    mbar_wait(q_bar, q_parity);
    attn_region_end(rg, ATTN_REGION_WAIT_Q);
    /* S[0] and its softmax alone (O = 0: no rescale). */
    uint32_t pk[BN / 16][4];
    {
        const int s0 = kv_stage(u0);
        float sacc[BN / 2];
        float alpha[2];
        attn_region_begin(rg, ATTN_REGION_WAIT_K);
        mbar_wait(k_full(b, s0), kv_phase(u0));
        attn_region_end(rg, ATTN_REGION_WAIT_K);
        if constexpr (PINGPONG) {
            attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
            named_barrier_sync(pp_mine, 256);     /* my turn */
            attn_region_end(rg, ATTN_REGION_WAIT_TURN);
        }
        attn_region_begin(rg, ATTN_REGION_S);
        issue_qk<D>(sacc, q_desc, k_desc, (uint32_t)s0 * KV_BYTES);
        if constexpr (PINGPONG) named_barrier_arrive(pp_next, 256);   /* the other's turn */
        if (prev_q_empty) {
            /* Under S[0]: the previous item's buffer back to the producer, once the TMA has read
             * its rows of O (the storing thread's wait); this thread's ordinary accesses to it
             * ordered before the producer's next TMA write, then one arrival per warp. */
            attn_region_begin(rg, ATTN_REGION_HANDOVER);
            if ((threadIdx.x & 127) == 0) tma_store_wait_read();
            fence_proxy_async_smem();
            warp_release(prev_q_empty);
            attn_region_end(rg, ATTN_REGION_HANDOVER);
        }
        wgmma_wait<0>();
        wgmma_fence_regs(sacc);
        attn_region_end(rg, ATTN_REGION_S);
        warp_release(k_empty(b, s0));
        attn_region_begin(rg, ATTN_REGION_SOFTMAX);
        const int key0 = si.n_begin * BN;
        if (tile_needs_mask(key0, r0, seq)) mask_tile<BN>(sacc, row0, key0, seq, t);
        online_softmax<BN>(sacc, m_run, l_run, alpha, c);
        pack_p<BN>(sacc, pk);
        attn_region_end(rg, ATTN_REGION_SOFTMAX);
    }
    /* Issue S[n] and O += P[n-1].V[n-1] back to back, softmax of S[n] under the second, then
     * rescale O by tile n's alpha (O then holds tiles 0..n-1 at tile n's max). */
    for (int n = 1; n < n_tiles; ++n) {
        const int s = kv_stage(u0 + n), sp = kv_stage(u0 + n - 1);
        float sacc[BN / 2];
        attn_region_begin(rg, ATTN_REGION_WAIT_K);
        mbar_wait(k_full(b, s), kv_phase(u0 + n));
        attn_region_end(rg, ATTN_REGION_WAIT_K);
        if constexpr (PINGPONG) {
            attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
            named_barrier_sync(pp_mine, 256);
            attn_region_end(rg, ATTN_REGION_WAIT_TURN);
        }
        attn_region_begin(rg, ATTN_REGION_S);   /* holds tile n-1's wait V and O+=PV issue */
        issue_qk<D>(sacc, q_desc, k_desc, (uint32_t)s * KV_BYTES);
        attn_region_begin(rg, ATTN_REGION_WAIT_V);
        mbar_wait(v_full(b, sp), kv_phase(u0 + n - 1));
        attn_region_end(rg, ATTN_REGION_WAIT_V);
        attn_region_begin(rg, ATTN_REGION_PV);
        issue_pv<D>(o, pk, v_desc, (uint32_t)sp * KV_BYTES);
        attn_region_end(rg, ATTN_REGION_PV);
        if constexpr (PINGPONG) named_barrier_arrive(pp_next, 256);
        wgmma_wait<1>();                      /* S[n] is complete; P[n-1].V[n-1] may not be */
        wgmma_fence_regs(sacc);
        attn_region_end(rg, ATTN_REGION_S);
        warp_release(k_empty(b, s));

        attn_region_begin(rg, ATTN_REGION_SOFTMAX);   /* to O rescaled, P[n] packed */
        const int key0 = (si.n_begin + n) * BN;
        if (tile_needs_mask(key0, r0, seq)) mask_tile<BN>(sacc, row0, key0, seq, t);
        float alpha[2];
        online_softmax<BN>(sacc, m_run, l_run, alpha, c);

        wait_pv_after_softmax<D>(l_run);      /* P[n-1].V[n-1] is complete: O and pk are free */
        wgmma_fence_regs(o);
        warp_release(v_empty(b, sp));
        rescale_o<D>(o, alpha);
        pack_p<BN>(sacc, pk);                 /* P[n], written only now that no wgmma reads pk */
        attn_region_end(rg, ATTN_REGION_SOFTMAX);
    }
    /* The last P.V alone; with PINGPONG in its own turn: every product of the warpgroup is
     * issued in a turn (both warpgroups take n_end + 1 turns per item, so the turns keep
     * alternating). */
    {
        const int sp = kv_stage(u0 + n_tiles - 1);
        attn_region_begin(rg, ATTN_REGION_WAIT_V);
        mbar_wait(v_full(b, sp), kv_phase(u0 + n_tiles - 1));
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
        attn_region_begin(rg, ATTN_REGION_EPILOGUE);   /* from the wait for that product */
        wgmma_wait<0>();
        wgmma_fence_regs(o);
        warp_release(v_empty(b, sp));
    }
    if (si.slot < 0)
        store_o_tma_issue<D>(p, it, sQ, cwg, o, l_run);   /* its wait: under the next item's S[0] */
    else
        store_o_partial<D>(p, si, cwg, o, m_run, l_run);
    attn_region_end(rg, ATTN_REGION_EPILOGUE);
}

/* One block: the work items of p.work or flash3_section_item; 384 threads = the producer warpgroup
 * (H3_PRODUCER_REGS registers) and 2 consumer warpgroups (H3_CONSUMER_REGS). Item j uses Q buffer
 * j % 2; the consumers hand it back (Q empty) under item j + 1's first S, once the TMA has read
 * their rows of O from it: the arrival of each warpgroup's first warp, whose first thread issued
 * the store and waits for its reads, comes after that wait, and the barrier completes only with
 * all eight warps' arrivals. The last item's buffer is not needed again. The storing thread waits
 * for the stores' writes once, after the last item. */
template <int D>
static __device__ __forceinline__ void fwd_block(const flash3_params &p)
{
    constexpr bool PINGPONG = D == 64;        /* as in consume_item */
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, H3_BLOCK_M);
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
        int u0 = 0;                           /* the block's key tiles before this item */
        uint32_t prev_q_empty = 0;            /* the buffer to hand back under the next S[0] */
        split_cursor cur = { 0, { 0, 0 } };
        split_item it;
        for (int j = 0; next_item(p, cur, it); ++j) {
            const int qb = j % 2;
            consume_item<D>(p, b, cwg, it, b.sQ + (uint32_t)qb * Q_BYTES,
                            q_full(b, qb), (uint32_t)(j / 2) & 1u, u0, prev_q_empty, rg);
            u0 += it.it.n_end - it.n_begin;
            prev_q_empty = q_empty(b, qb);
        }
        if (storer) tma_store_wait();         /* O is in global memory before the block ends */
        attn_regions_finish(rg);
    }
}

__global__ void __launch_bounds__(H3_THREADS, 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d64_r8_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<64>(p);
#endif
}

__global__ void __launch_bounds__(H3_THREADS, 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r8_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<128>(p);
#endif
}


__global__ void __launch_bounds__(256)
FLASH3_KERNEL(flash3_fwd_combine_bf16_d64_r8_sm90a)(const __grid_constant__ flash3_combine_params cp)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    combine_rows<64>(cp);
#endif
}

__global__ void __launch_bounds__(256)
FLASH3_KERNEL(flash3_fwd_combine_bf16_d128_r8_sm90a)(const __grid_constant__ flash3_combine_params cp)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    combine_rows<128>(cp);
#endif
}

const flash3_rung FLASH3_RUNG(8) = {
    8, "+ a split over the keys where the grid is small, then a combine",
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d64_r8_sm90a),
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r8_sm90a),
    /* persistent */ 1, /* q_buffers */ 2,
    (const void *)FLASH3_KERNEL(flash3_fwd_combine_bf16_d64_r8_sm90a),
    (const void *)FLASH3_KERNEL(flash3_fwd_combine_bf16_d128_r8_sm90a),
    /* block_m */ H3_BLOCK_M, /* block_m_d128 */ 0, /* dependent_launch */ 0,
    /* v_stages */ 0, /* cluster */ 0,
};
