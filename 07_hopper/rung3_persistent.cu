/* 07_hopper rung 3: rung 2 on a persistent grid: one block per SM walks its query tiles
 * longest-first, loading the next tile's Q (a second Q buffer) and K/V while it finishes the
 * current one; the K/V stages and their mbarrier phases run on from tile to tile.
 *
 * min(SMs, tiles) blocks; block blk takes the work items of flash3_persistent_item (query tiles
 * of 128 rows of one (batch, head), the last query tiles, with the most key tiles, first), each
 * walking its key tiles 0 .. diagonal of 128 keys through 2 K and 2 V stages (flash3.cuh):
 *   warpgroup 0, the producer: gives registers back and one of its threads issues every TMA copy:
 *     per item j, Q into buffer j % 2 once the consumers' epilogue of item j - 2 has let go of it
 *     (Q empty mbarrier), then K[n] and V[n] into the next stage as soon as the consumers have
 *     released what that stage held (empty mbarriers);
 *   warpgroups 1, 2, the consumers, 64 query rows each. Per key tile n >= 1:
 *     wait K[n] -> issue S[n] = Q.K[n]^T; wait V[n-1] -> issue O += P[n-1].V[n-1]
 *     wait for S[n] only (wgmma_wait<1>); release K[n]
 *     mask, online softmax of S[n] in registers, while the second product runs
 *     wait for O (wgmma_wait<0>); release V[n-1]; O *= alpha of tile n; P[n] packed to bf16
 *   Prologue: the first S and its softmax alone; epilogue: the last P.V alone.
 * Key tiles past the diagonal are never loaded. Rows and keys past seq: TMA fills the parts of a
 * box outside the tensor with zeros, the mask hides keys >= seq, and rows >= seq are not stored.
 * Shah et al. 2024, "FlashAttention-3" (arXiv 2407.08608), sections 3.1 (warp
 * specialization) and 3.2 (intra-warpgroup overlapping); its tile scheduler
 * (DynamicPersistentTileScheduler, longest-first causal order).
 *
 * Kernels: flash3_fwd_bf16_causal_128x128_d<head_dim>_r3_sm90a, head_dim 64 and 128; grid
 * min(SMs, batch*heads x query tiles), 384 threads, H3_SMEM_BYTES(D, 128, 2) bytes of dynamic
 * shared memory. The regions build (--regions) compiles the same file again into copies named
 * ..._regions (flash3.cuh, "Region markers").
 */
#include "flash3.cuh"

/* The producer: one thread of warpgroup 0. Per work item j: Q into buffer j % 2 (once the
 * consumers' epilogue of item j - 2 has let go of it), then for each key tile n the K tile and
 * the V tile into the next stage, each as soon as the consumers have released the tile that stage
 * held before. The stages run on across items: u counts the block's key tiles so far. */
template <int D>
static __device__ __forceinline__ void producer(const flash3_params &p, const flash3_block &b,
                                                attn_regions_ctx &rg)
{
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, H3_BLOCK_M), KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    int u = 0;
    flash3_item w;
    for (int j = 0; flash3_persistent_item(p, j, w); ++j) {
        const int q = j % 2;
        attn_region_begin(rg, ATTN_REGION_WAIT_FREE);
        mbar_wait(q_empty(b, q), ((uint32_t)(j / 2) & 1u) ^ 1u);
        attn_region_end(rg, ATTN_REGION_WAIT_FREE);
        attn_region_begin(rg, ATTN_REGION_TMA_Q);
        mbar_arrive_expect_tx(q_full(b, q), Q_BYTES);   /* the full box, even past seq */
        tma_load_4d(b.sQ + q * Q_BYTES, &p.q_map, q_full(b, q), 0, w.m0, 0, w.bh);
        attn_region_end(rg, ATTN_REGION_TMA_Q);
        for (int n = 0; n < w.n_end; ++n, ++u) {
            const int s = kv_stage(u);
            const uint32_t parity = kv_phase(u) ^ 1u;
            attn_region_begin(rg, ATTN_REGION_WAIT_FREE);
            mbar_wait(k_empty(b, s), parity);
            attn_region_end(rg, ATTN_REGION_WAIT_FREE);
            attn_region_begin(rg, ATTN_REGION_TMA_K);
            mbar_arrive_expect_tx(k_full(b, s), KV_BYTES);
            tma_load_4d(b.sK + s * KV_BYTES, &p.k_map, k_full(b, s), 0, n * H3_BLOCK_N, 0, w.bh);
            attn_region_end(rg, ATTN_REGION_TMA_K);
            attn_region_begin(rg, ATTN_REGION_WAIT_FREE);
            mbar_wait(v_empty(b, s), parity);
            attn_region_end(rg, ATTN_REGION_WAIT_FREE);
            attn_region_begin(rg, ATTN_REGION_TMA_V);
            mbar_arrive_expect_tx(v_full(b, s), KV_BYTES);
            tma_load_4d(b.sV + s * KV_BYTES, &p.v_map, v_full(b, s), 0, n * H3_BLOCK_N, 0, w.bh);
            attn_region_end(rg, ATTN_REGION_TMA_V);
        }
    }
}

/* Consumer warpgroup cwg (0, 1) on item it, whose Q is in buffer sQ (full barrier completion
 * parity q_parity) and whose key tile n is the block's key tile u0 + n: query rows
 * m0 + 64cwg .. m0 + 64cwg + 63, all its key tiles, then its rows of O. rg: the warpgroup's
 * region markers (flash3.cuh; nothing outside the regions build). */
template <int D>
static __device__ __forceinline__ void consume_item(const flash3_params &p, const flash3_block &b,
                                                    int cwg, const flash3_item &it, uint32_t sQ,
                                                    uint32_t q_bar, uint32_t q_parity, int u0,
                                                    attn_regions_ctx &rg)
{
    constexpr int BN = H3_BLOCK_N;
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, BN);
    const int lane = threadIdx.x & 31, w = (threadIdx.x & 127) >> 5, g = lane >> 2, t = lane & 3;
    const int seq = p.seq;
    const float c = p.scale_log2;
    const uint64_t k_desc = k_desc_of(b), v_desc = v_desc_of(b), q_desc = q_desc_of(sQ, cwg);

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
        attn_region_begin(rg, ATTN_REGION_S);
        issue_qk<D>(sacc, q_desc, k_desc, (uint32_t)s0 * KV_BYTES);
        wgmma_wait<0>();
        wgmma_fence_regs(sacc);
        attn_region_end(rg, ATTN_REGION_S);
        warp_release(k_empty(b, s0));
        attn_region_begin(rg, ATTN_REGION_SOFTMAX);
        if (tile_needs_mask(0, r0, seq)) mask_tile<BN>(sacc, row0, 0, seq, t);
        online_softmax<BN>(sacc, m_run, l_run, alpha, c);
        pack_p<BN>(sacc, pk);
        attn_region_end(rg, ATTN_REGION_SOFTMAX);
    }
    /* Issue S[n] and O += P[n-1].V[n-1] back to back, softmax of S[n] under the second, then
     * rescale O by tile n's alpha (O then holds tiles 0..n-1 at tile n's max). */
    for (int n = 1; n < it.n_end; ++n) {
        const int s = kv_stage(u0 + n), sp = kv_stage(u0 + n - 1);
        float sacc[BN / 2];
        attn_region_begin(rg, ATTN_REGION_WAIT_K);
        mbar_wait(k_full(b, s), kv_phase(u0 + n));
        attn_region_end(rg, ATTN_REGION_WAIT_K);
        attn_region_begin(rg, ATTN_REGION_S);   /* holds tile n-1's wait V and O+=PV issue */
        issue_qk<D>(sacc, q_desc, k_desc, (uint32_t)s * KV_BYTES);
        attn_region_begin(rg, ATTN_REGION_WAIT_V);
        mbar_wait(v_full(b, sp), kv_phase(u0 + n - 1));
        attn_region_end(rg, ATTN_REGION_WAIT_V);
        attn_region_begin(rg, ATTN_REGION_PV);
        issue_pv<D>(o, pk, v_desc, (uint32_t)sp * KV_BYTES);
        attn_region_end(rg, ATTN_REGION_PV);
        wgmma_wait<1>();                      /* S[n] is complete; P[n-1].V[n-1] may not be */
        wgmma_fence_regs(sacc);
        attn_region_end(rg, ATTN_REGION_S);
        warp_release(k_empty(b, s));

        attn_region_begin(rg, ATTN_REGION_SOFTMAX);   /* to O rescaled, P[n] packed */
        const int key0 = n * BN;
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
    /* The last P.V alone. */
    {
        const int sp = kv_stage(u0 + it.n_end - 1);
        attn_region_begin(rg, ATTN_REGION_WAIT_V);
        mbar_wait(v_full(b, sp), kv_phase(u0 + it.n_end - 1));
        attn_region_end(rg, ATTN_REGION_WAIT_V);
        attn_region_begin(rg, ATTN_REGION_PV);
        issue_pv<D>(o, pk, v_desc, (uint32_t)sp * KV_BYTES);
        attn_region_end(rg, ATTN_REGION_PV);
        attn_region_begin(rg, ATTN_REGION_EPILOGUE);   /* from the wait for that product */
        wgmma_wait<0>();
        wgmma_fence_regs(o);
        warp_release(v_empty(b, sp));
    }
    store_o<D>(p, it, sQ, cwg, o, l_run);
    attn_region_end(rg, ATTN_REGION_EPILOGUE);
}

/* One block: the work items of flash3_persistent_item; 384 threads = the producer warpgroup
 * (H3_PRODUCER_REGS registers) and 2 consumer warpgroups (H3_CONSUMER_REGS). Item j uses Q buffer
 * j % 2; the consumers hand it back (Q empty) once their rows of O are stored. */
template <int D>
static __device__ __forceinline__ void fwd_block(const flash3_params &p)
{
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, H3_BLOCK_M);
    const flash3_block b = flash3_block_init<D, 2>(p);
    if (threadIdx.x >> 7 == 0) {
        setmaxnreg_dec<H3_PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            attn_regions_ctx rg = flash3_regions_start(p);
            producer<D>(p, b, rg);
            attn_regions_finish(rg);
        }
    } else {
        setmaxnreg_inc<H3_CONSUMER_REGS>();
        attn_regions_ctx rg = flash3_regions_start(p);
        int u0 = 0;                           /* the block's key tiles before this item */
        flash3_item it;
        for (int j = 0; flash3_persistent_item(p, j, it); ++j) {
            const int qb = j % 2;
            consume_item<D>(p, b, (int)(threadIdx.x >> 7) - 1, it, b.sQ + (uint32_t)qb * Q_BYTES,
                            q_full(b, qb), (uint32_t)(j / 2) & 1u, u0, rg);
            u0 += it.n_end;
            /* The buffer is free for the Q of item j + 2: order this thread's ordinary accesses
             * to it before that TMA write, then one arrival per warp. */
            attn_region_begin(rg, ATTN_REGION_HANDOVER);
            fence_proxy_async_smem();
            warp_release(q_empty(b, qb));
            attn_region_end(rg, ATTN_REGION_HANDOVER);
        }
        attn_regions_finish(rg);
    }
}

__global__ void __launch_bounds__(H3_THREADS, 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d64_r3_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<64>(p);
#endif
}

__global__ void __launch_bounds__(H3_THREADS, 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r3_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<128>(p);
#endif
}

const flash3_rung FLASH3_RUNG(3) = {
    3, "+ persistent grid: one block per SM, query tiles longest-first, Q double-buffered",
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d64_r3_sm90a),
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r3_sm90a),
    /* persistent */ 1, /* q_buffers */ 2, /* combine */ NULL, NULL, /* block_m */ H3_BLOCK_M, 0,
    /* dependent_launch */ 0, /* v_stages */ 0, /* cluster */ 0,
};
