/* 07_hopper rung 11: rung 10 (head_dim 64) and rung 8 (head_dim 128) + O rescaled only when a
 * row's max grows by more than 8 in log2 units (P taken from the old max would pass 2^8), and
 * then under the next S.
 * Each key tile ends, on rungs 2-10, with O *= alpha: 32 (head_dim 64) or 64 (128) multiplies per
 * thread, after the wait for the previous P.V and before the next one can be issued, so on the
 * path from one P.V to the next. Two changes take it off that path:
 *   - the running max moves only when some row of the warp grew by more than H3_RESCALE_LOG2
 *     in log2 units, S*c (online_softmax_lazy, flash3.cuh): after the first tiles of a row that is rare, alpha is 1
 *     and the rescale is skipped (a branch the whole warp takes alike);
 *   - where it is needed, it runs in the next turn, between the issue of S[n+1] and that of
 *     P[n].V[n]: under the product of S, not between two products.
 * O comes out the same up to rounding (the offset a row's exponentials are taken from cancels in
 * O / l), not bit for bit rung 8's or 10's.
 * Everything else is the rung below, one body for both head_dims: at head_dim 64 three consumer
 * warpgroups on 192x128 tiles (rung 10: registers 32 / 160, each warpgroup's own causal bound,
 * the short tile first), at 128 two on 128x128 tiles (rung 8: registers 24 / 240). Both take
 * their products in turns (a round-robin of named barriers: rung 4's ping-pong at 128 too) and
 * hold the warpgroup index in a uniform register (rung 10's shuffle from lane 0). The work items
 * (flash3_section_item's L2 sections, the split over the keys of a small grid), the producer, the
 * TMA store of O and the combine are rung 8's.
 * Sources: Zadouri, Shah, Dao et al. 2025, FlashAttention-4 (conditional softmax rescaling);
 * Shah et al. 2024, "FlashAttention-3" (arXiv 2407.08608): intra-warpgroup overlap, the warp
 * scheduler barrier, 192x128 tiles at head_dim 64.
 *
 * Kernels: flash3_fwd_bf16_causal_192x128_d64_r11_sm90a (512 threads) and
 * flash3_fwd_bf16_causal_128x128_d128_r11_sm90a (384 threads); grid: the plan's blocks (at most
 * the SMs) or min(SMs, batch*heads x query tiles); H3_SMEM_BYTES(D, rows, 2) bytes of dynamic
 * shared memory; with a split, then flash3_fwd_combine_bf16_d<head_dim>_r11_sm90a, grid (split
 * tiles, rows / rows per block), 256 threads. The regions build (--regions) compiles the same
 * file again into copies named ..._regions (flash3.cuh).
 */
#include "flash3.cuh"
#include "flash3_split.cuh"   /* split_item, next_item, split_producer, store_o_partial, combine_rows */

/* Per head_dim: consumer warpgroups (64 query rows each) and the register split. */
#define R11_CONSUMERS(D)     ((D) == 64 ? 3 : 2)
#define R11_PRODUCER_REGS(D) ((D) == 64 ? 32 : H3_PRODUCER_REGS)    /* 128 x 32 + 384 x 160 = 65536 */
#define R11_CONSUMER_REGS(D) ((D) == 64 ? 160 : H3_CONSUMER_REGS)
#define R11_BLOCK_M(D)  (64 * R11_CONSUMERS(D))
#define R11_THREADS(D)  (128 * (1 + R11_CONSUMERS(D)))

/* Consumer warpgroup cwg on item it, as rung 10's consume_item (Q in buffer sQ, its full
 * barrier's parity q_parity; the item's key tile n is the block's key tile u0 + n; prev_q_empty
 * handed back under the first S; its own causal bound n_tiles, every key tile of the item
 * released and every turn taken), with the rescale of O lazy and late: tile n's softmax
 * (online_softmax_lazy) leaves alpha and whether O needs it in alpha_p, resc_p; O is rescaled in
 * the next turn, after S[n+1] is issued and before P[n].V[n] is. */
template <int D>
static __device__ __forceinline__ void consume_item(const flash3_params &p, const flash3_block &b,
                                                    int cwg, const split_item &si, uint32_t sQ,
                                                    uint32_t q_bar, uint32_t q_parity, int u0,
                                                    uint32_t prev_q_empty, attn_regions_ctx &rg)
{
    constexpr int BN = H3_BLOCK_N, BM = R11_BLOCK_M(D), NC = R11_CONSUMERS(D);
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, BN);
    const int seq = p.seq;
    const float c = p.scale_log2;
    const uint64_t k_desc = k_desc_of(b), v_desc = v_desc_of(b), q_desc = q_desc_of(sQ, cwg);
    const flash3_item &it = si.it;
    const int n_item = it.n_end - si.n_begin;   /* the item's key tiles; the n-th is n_begin + n */
    const uint32_t pp_mine = NBAR_PINGPONG + (uint32_t)cwg,
                   pp_next = NBAR_PINGPONG + (uint32_t)((cwg + 1) % NC);

    const int r0 = it.m0 + cwg * 64;          /* the warpgroup's first row */
    const int n_reach = r0 >= 0 && r0 < seq ? causal_key_tiles(r0, 64, BN, seq) : 0;
    const int n_tiles = max(min(n_reach, it.n_end) - si.n_begin, 0);   /* the ones it computes */
    const int n_mask = min(r0, seq) / BN - si.n_begin;   /* the first that needs the mask */
    float o[D / 2];
    float m_run[2] = { -INFINITY, -INFINITY }, l_run[2] = { 0.f, 0.f };
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;

    attn_region_begin(rg, ATTN_REGION_WAIT_Q);
    mbar_wait(q_bar, q_parity);
    attn_region_end(rg, ATTN_REGION_WAIT_Q);
    if (n_tiles == 0) {
        /* no key tile of this item reaches these rows */
        if (prev_q_empty) hand_back(prev_q_empty, rg);
        attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
        skip_turn(pp_mine, pp_next);
        attn_region_end(rg, ATTN_REGION_WAIT_TURN);
        attn_region_begin(rg, ATTN_REGION_EPILOGUE);   /* (nothing to wait for) */
    } else {
        uint32_t pk[BN / 16][4];
        float alpha_p[2];                     /* the last softmax's alpha, and whether O needs it */
        bool resc_p;
        /* S[0] and its softmax alone (O = 0: nothing to rescale). */
        {
            const int s0 = kv_stage(u0);
            float sacc[BN / 2];
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
            online_softmax_lazy<BN>(sacc, m_run, l_run, alpha_p, c);
            resc_p = false;
            pack_p<BN>(sacc, pk);
            attn_region_end(rg, ATTN_REGION_SOFTMAX);
        }
        /* Issue S[n], rescale O by tile n-1's alpha if it must, issue O += P[n-1].V[n-1], all in
         * one turn; the softmax of S[n] under the second product. */
        for (int n = 1; n < n_tiles; ++n) {
            const int s = kv_stage(u0 + n), sp = kv_stage(u0 + n - 1);
            float sacc[BN / 2];
            attn_region_begin(rg, ATTN_REGION_WAIT_K);
            mbar_wait(k_full(b, s), kv_phase(u0 + n));
            attn_region_end(rg, ATTN_REGION_WAIT_K);
            attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
            named_barrier_sync(pp_mine, 256);
            attn_region_end(rg, ATTN_REGION_WAIT_TURN);
            attn_region_begin(rg, ATTN_REGION_S);   /* holds the rescale, tile n-1's wait V and O+=PV issue */
            issue_qk<D, BM>(sacc, q_desc, k_desc, (uint32_t)s * KV_BYTES);
            if (resc_p) rescale_o<D>(o, alpha_p);
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

            attn_region_begin(rg, ATTN_REGION_SOFTMAX);   /* to P[n] packed */
            if (n >= n_mask) mask_rows(sacc, r0, (si.n_begin + n) * BN, seq);
            resc_p = online_softmax_lazy<BN>(sacc, m_run, l_run, alpha_p, c);
            wait_pv_after_softmax<D>(l_run);      /* P[n-1].V[n-1] is complete: O and pk are free */
            wgmma_fence_regs(o);
            warp_release(v_empty(b, sp));
            pack_p<BN>(sacc, pk);                 /* P[n], written only now that no wgmma reads pk */
            attn_region_end(rg, ATTN_REGION_SOFTMAX);
        }
        /* The last rescale and P.V, in their own turn. */
        const int sp = kv_stage(u0 + n_tiles - 1);
        attn_region_begin(rg, ATTN_REGION_WAIT_V);
        mbar_wait(v_full(b, sp), kv_phase(u0 + n_tiles - 1));
        attn_region_end(rg, ATTN_REGION_WAIT_V);
        attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
        named_barrier_sync(pp_mine, 256);
        attn_region_end(rg, ATTN_REGION_WAIT_TURN);
        attn_region_begin(rg, ATTN_REGION_PV);
        if (resc_p) rescale_o<D>(o, alpha_p);
        issue_pv<D>(o, pk, v_desc, (uint32_t)sp * KV_BYTES);
        attn_region_end(rg, ATTN_REGION_PV);
        named_barrier_arrive(pp_next, 256);
        attn_region_begin(rg, ATTN_REGION_EPILOGUE);   /* from the wait for that product */
        wgmma_wait<0>();
        wgmma_fence_regs(o);
        warp_release(v_empty(b, sp));
    }
    /* The item's key tiles past this warpgroup's reach (head_dim 64: rung 10's), each released
     * once the producer has filled it, and its turn taken. */
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
        store_o_partial<D, BM>(p, si, cwg, o, m_run, l_run);  /* its log-sum-exp from the kept max */
    attn_region_end(rg, ATTN_REGION_EPILOGUE);
}

/* One block: rung 10's fwd_block for either head_dim; R11_THREADS(D) threads = the producer
 * warpgroup and R11_CONSUMERS(D) consumer warpgroups. Item j uses Q buffer j % 2, handed
 * back under item j + 1's first S. */
template <int D>
static __device__ __forceinline__ void fwd_block(const flash3_params &p)
{
    constexpr int BM = R11_BLOCK_M(D);
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, BM);
    const flash3_block b = flash3_block_init<D, 2, BM>(p);
    if (threadIdx.x >> 7 == 0) {
        setmaxnreg_dec<R11_PRODUCER_REGS(D)>();
        if (threadIdx.x == 0) {
            attn_regions_ctx rg = flash3_regions_start(p);
            split_producer<D, BM>(p, b, rg);
            attn_regions_finish(rg);
        }
    } else {
        setmaxnreg_inc<R11_CONSUMER_REGS(D)>();
        attn_regions_ctx rg = flash3_regions_start(p);
        /* (through a shuffle from lane 0: uniform across the warp, kept in uniform registers) */
        const int cwg = __shfl_sync(0xffffffffu, (int)(threadIdx.x >> 7), 0) - 1;
        const bool storer = (threadIdx.x & 127) == 0;   /* issues the warpgroup's TMA stores */
        if (storer) tma_prefetch_map(&p.o_map);
        if (cwg == 0) named_barrier_arrive(NBAR_PINGPONG, 256);   /* 0 goes first */
        int u0 = 0;                           /* the block's key tiles before this item */
        split_cursor cur = { 0, { 0, 0 } };
        split_item it;
        for (int j = 0; cur.j = j, next_item<BM>(p, cur, it); ++j) {
            const int qb = j % 2;
            consume_item<D>(p, b, cwg, it, b.sQ + (uint32_t)qb * Q_BYTES,
                            q_full(b, qb), (uint32_t)(j / 2) & 1u, u0, j ? q_empty(b, qb ^ 1) : 0u, rg);
            u0 += it.it.n_end - it.n_begin;
        }
        if (storer) tma_store_wait();         /* O is in global memory before the block ends */
        attn_regions_finish(rg);
    }
}

__global__ void __launch_bounds__(R11_THREADS(64), 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_192x128_d64_r11_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<64>(p);
#endif
}

__global__ void __launch_bounds__(R11_THREADS(128), 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r11_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<128>(p);
#endif
}

__global__ void __launch_bounds__(256)
FLASH3_KERNEL(flash3_fwd_combine_bf16_d64_r11_sm90a)(const __grid_constant__ flash3_combine_params cp)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    combine_rows<64, R11_BLOCK_M(64)>(cp);
#endif
}

__global__ void __launch_bounds__(256)
FLASH3_KERNEL(flash3_fwd_combine_bf16_d128_r11_sm90a)(const __grid_constant__ flash3_combine_params cp)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    combine_rows<128, R11_BLOCK_M(128)>(cp);
#endif
}

const flash3_rung FLASH3_RUNG(11) = {
    11, "+ O rescaled only when P would pass 2^8, under next S",
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_192x128_d64_r11_sm90a),
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r11_sm90a),
    /* persistent */ 1, /* q_buffers */ 2,
    (const void *)FLASH3_KERNEL(flash3_fwd_combine_bf16_d64_r11_sm90a),
    (const void *)FLASH3_KERNEL(flash3_fwd_combine_bf16_d128_r11_sm90a),
    /* block_m */ R11_BLOCK_M(64), /* block_m_d128 */ R11_BLOCK_M(128), /* dependent_launch */ 0,
    /* v_stages */ 0, /* cluster */ 0,
};
