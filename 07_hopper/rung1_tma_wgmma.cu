/* 07_hopper rung 1: TMA loads completing on mbarriers, wgmma from shared memory and registers, a
 * producer warpgroup that only loads (setmaxnreg 24) and two consumer warpgroups that only
 * compute (setmaxnreg 240).
 *
 * One block per query tile of 128 rows of one (batch, head), walking the key tiles 0 .. diagonal
 * of 128 keys each through 2 K and 2 V stages (flash3.cuh has the layout and the shared pieces):
 *   warpgroup 0, the producer: gives registers back and one of its threads issues every TMA copy:
 *     Q, then K[n] and V[n] into the next stage as soon as the consumers have released what that
 *     stage held (empty mbarriers);
 *   warpgroups 1, 2, the consumers, 64 query rows each. Per key tile:
 *     wait K[n] (full mbarrier) -> S = Q.K^T: head_dim/16 wgmma m64n128k16, A and B from shared
 *       memory; wait for it; release K[n]
 *     mask (only on the tile that crosses the diagonal or the end of the sequence)
 *     online softmax on S in registers (4-lane quad reductions), P packed to bf16 pairs,
 *       O *= alpha
 *     wait V[n] (full mbarrier) -> O += P.V: 8 wgmma m64n<head_dim>k16, A = P from registers;
 *       wait for it; release V[n]
 *   Each product is waited for as soon as it is issued: the tensor cores idle during the
 *   softmax unless the other consumer warpgroup happens to be multiplying.
 * Key tiles past the diagonal are never loaded. Rows and keys past seq: TMA fills the parts of a
 * box outside the tensor with zeros, the mask hides keys >= seq, and rows >= seq are not stored.
 * Shah et al. 2024, "FlashAttention-3" (arXiv 2407.08608), sections 3.1 (warp specialization).
 *
 * Kernels: flash3_fwd_bf16_causal_128x128_d<head_dim>_r1_sm90a, head_dim 64 and 128; grid
 * (batch*heads, query tiles), 384 threads, H3_SMEM_BYTES(D, 128, 1) bytes of dynamic shared
 * memory. The regions build (--regions) compiles the same file again into copies named
 * ..._regions (flash3.cuh, "Region markers").
 */
#include "flash3.cuh"

/* The producer: one thread of warpgroup 0. Q into the block's one buffer, then for each key tile
 * n the K tile and the V tile into stage kv_stage(n), each as soon as the consumers have released
 * the tile that stage held before. */
template <int D>
static __device__ __forceinline__ void producer(const flash3_params &p, const flash3_block &b,
                                                attn_regions_ctx &rg)
{
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, H3_BLOCK_M), KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    const flash3_item w = flash3_tile_item(p);
    attn_region_begin(rg, ATTN_REGION_TMA_Q);
    mbar_arrive_expect_tx(q_full(b, 0), Q_BYTES);   /* the full box, even past seq */
    tma_load_4d(b.sQ, &p.q_map, q_full(b, 0), 0, w.m0, 0, w.bh);
    attn_region_end(rg, ATTN_REGION_TMA_Q);
    for (int u = 0; u < w.n_end; ++u) {
        const int s = kv_stage(u);
        const uint32_t parity = kv_phase(u) ^ 1u;
        attn_region_begin(rg, ATTN_REGION_WAIT_FREE);
        mbar_wait(k_empty(b, s), parity);
        attn_region_end(rg, ATTN_REGION_WAIT_FREE);
        attn_region_begin(rg, ATTN_REGION_TMA_K);
        mbar_arrive_expect_tx(k_full(b, s), KV_BYTES);
        tma_load_4d(b.sK + s * KV_BYTES, &p.k_map, k_full(b, s), 0, u * H3_BLOCK_N, 0, w.bh);
        attn_region_end(rg, ATTN_REGION_TMA_K);
        attn_region_begin(rg, ATTN_REGION_WAIT_FREE);
        mbar_wait(v_empty(b, s), parity);
        attn_region_end(rg, ATTN_REGION_WAIT_FREE);
        attn_region_begin(rg, ATTN_REGION_TMA_V);
        mbar_arrive_expect_tx(v_full(b, s), KV_BYTES);
        tma_load_4d(b.sV + s * KV_BYTES, &p.v_map, v_full(b, s), 0, u * H3_BLOCK_N, 0, w.bh);
        attn_region_end(rg, ATTN_REGION_TMA_V);
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
    for (int n = 0; n < it.n_end; ++n) {
        const int s = kv_stage(u0 + n);
        const uint32_t phase = kv_phase(u0 + n);
        const uint32_t kv_off = (uint32_t)s * KV_BYTES;
        float sacc[BN / 2];
        attn_region_begin(rg, ATTN_REGION_WAIT_K);
        mbar_wait(k_full(b, s), phase);
        attn_region_end(rg, ATTN_REGION_WAIT_K);
        attn_region_begin(rg, ATTN_REGION_S);
        issue_qk<D>(sacc, q_desc, k_desc, kv_off);
        wgmma_wait<0>();
        wgmma_fence_regs(sacc);
        attn_region_end(rg, ATTN_REGION_S);
        warp_release(k_empty(b, s));          /* this warp is done with K[n] */

        attn_region_begin(rg, ATTN_REGION_SOFTMAX);
        const int key0 = n * BN;
        if (tile_needs_mask(key0, r0, seq)) mask_tile<BN>(sacc, row0, key0, seq, t);
        uint32_t pk[BN / 16][4];
        float alpha[2];
        online_softmax<BN>(sacc, m_run, l_run, alpha, c);
        pack_p<BN>(sacc, pk);
        rescale_o<D>(o, alpha);
        attn_region_end(rg, ATTN_REGION_SOFTMAX);

        attn_region_begin(rg, ATTN_REGION_WAIT_V);
        mbar_wait(v_full(b, s), phase);
        attn_region_end(rg, ATTN_REGION_WAIT_V);
        attn_region_begin(rg, ATTN_REGION_PV);
        issue_pv<D>(o, pk, v_desc, kv_off);
        wgmma_wait<0>();
        wgmma_fence_regs(o);
        attn_region_end(rg, ATTN_REGION_PV);
        warp_release(v_empty(b, s));          /* this warp is done with V[n] */
    }
    attn_region_begin(rg, ATTN_REGION_EPILOGUE);
    store_o<D>(p, it, sQ, cwg, o, l_run);
    attn_region_end(rg, ATTN_REGION_EPILOGUE);
}

/* One block: the query tile of flash3_tile_item; 384 threads = the producer warpgroup
 * (H3_PRODUCER_REGS registers) and 2 consumer warpgroups (H3_CONSUMER_REGS). */
template <int D>
static __device__ __forceinline__ void fwd_block(const flash3_params &p)
{
    const flash3_block b = flash3_block_init<D, 1>(p);
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
        const flash3_item it = flash3_tile_item(p);
        consume_item<D>(p, b, (int)(threadIdx.x >> 7) - 1, it, b.sQ, q_full(b, 0), 0, 0, rg);
        attn_regions_finish(rg);
    }
}

__global__ void __launch_bounds__(H3_THREADS, 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d64_r1_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<64>(p);
#endif
}

__global__ void __launch_bounds__(H3_THREADS, 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r1_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<128>(p);
#endif
}

const flash3_rung FLASH3_RUNG(1) = {
    1, "TMA + mbarriers + wgmma; producer warpgroup, setmaxnreg 24/240",
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d64_r1_sm90a),
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r1_sm90a),
    /* persistent */ 0, /* q_buffers */ 1, /* combine */ NULL, NULL, /* block_m */ H3_BLOCK_M, 0,
    /* dependent_launch */ 0, /* v_stages */ 0, /* cluster */ 0,
};
