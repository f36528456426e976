/* 07_hopper rung 14: rung 13 + the loads run further ahead: K one tile ahead of V, and V three
 * stages deep.
 * Rungs 8-13's producer loads key tile n's K and then its V, each into the stage that tile n - 2
 * held, as soon as the consumers have released it. The consumers release K[n - 2] right after
 * S[n - 2] is complete, but V[n - 2] only after the softmax of S[n - 1], under which its P.V
 * completes. So the producer, with V[n] next in its queue, sits waiting for that late release,
 * and K[n + 1] behind it waits too: at head_dim 128 the consumers then wait for K at the top of
 * a key tile, and for V while they hold their turn, with S issued and the other warpgroup
 * waiting. This rung's producer (ahead_producer, below) issues K[n + 1] before V[n]
 * (FlashAttention-3's order: K is needed first in a turn, V one product later), and gives V a
 * third stage, in shared memory that was free at both head_dims (head_dim 128: 2 Q + 2 K + 3 V
 * tiles of 32 KB, 224 KB of the 227 a block may have), so that V[n]'s stage is the one V[n - 3]
 * held, released a whole key tile earlier. The consumers' code is rung 13's, with V's stage and
 * phase counted over three stages: the same O bits.
 * Sources: FlashAttention-3 (Shah et al. 2024, arXiv 2407.08608) and its hopper/ producer
 * (mainloop_fwd_sm90_tma_gmma_ws.hpp: load K of the next tile, then V of this one); the PTX ISA's
 * mbarrier phases (common/sm90/mbarrier.cuh).
 *
 * Kernels: flash3_fwd_bf16_causal_192x128_d64_r14_sm90a (512 threads) and
 * flash3_fwd_bf16_causal_128x128_d128_r14_sm90a (384 threads), the combine kernels
 * flash3_fwd_combine_bf16_d<head_dim>_r14_sm90a; grid and dependent launch as rung 13's;
 * H3_SMEM_BYTES_VS(D, rows, 2, 3) bytes of dynamic shared memory.
 */
#include "flash3.cuh"
#include "sm90/griddep.cuh"     /* griddep_wait, griddep_launch_dependents */
#include "flash3_split.cuh"   /* split_item, next_item, store_o_partial, combine_rows */

/* Per head_dim: consumer warpgroups (64 query rows each) and the register split. */
#define R14_CONSUMERS(D)     ((D) == 64 ? 3 : 2)
#define R14_PRODUCER_REGS(D) ((D) == 64 ? 32 : H3_PRODUCER_REGS)    /* 128 x 32 + 384 x 160 = 65536 */
#define R14_CONSUMER_REGS(D) ((D) == 64 ? 160 : H3_CONSUMER_REGS)
#define R14_BLOCK_M(D)  (64 * R14_CONSUMERS(D))
/* The half tile's columns of S (computed) and of P (softmax, P.V): rung12_half_diagonal.cu. */
#define R14_HALF_S(D) ((D) == 64 ? 128 : 64)
#define R14_HALF_P(D) 64
#define R14_THREADS(D)  (128 * (1 + R14_CONSUMERS(D)))
#define R14_V_STAGES    3                     /* V tiles in flight (K: H3_STAGES) */

/* The producer (one thread of warpgroup 0): per work item j (next_item, as rungs 8-13's
 * split_producer), Q into buffer j % 2 once item j - 2's is handed back; then the item's key
 * tiles n_begin .. n_end - 1 as K[n_begin], then K[n + 1] before V[n] for each n, then V of the
 * last: each into its next stage (K: H3_STAGES, V: VS) once the consumers have released what the
 * stage held before. u counts the block's key tiles so far, across items. */
template <int D, int BM, int VS>
static __device__ __forceinline__ void ahead_producer(const flash3_params &p, const flash3_block &b,
                                                      attn_regions_ctx &rg)
{
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, BM), KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    int u = 0;
    split_cursor cur = { 0, { 0, 0 } };
    split_item si;
    for (int j = 0; next_item<BM>(p, cur, si); ++j) {
        const flash3_item &w = si.it;
        const int q = j % 2;
        attn_region_begin(rg, ATTN_REGION_WAIT_FREE);
        mbar_wait(q_empty<VS>(b, q), ((uint32_t)(j / 2) & 1u) ^ 1u);
        attn_region_end(rg, ATTN_REGION_WAIT_FREE);
        attn_region_begin(rg, ATTN_REGION_TMA_Q);
        mbar_arrive_expect_tx(q_full<VS>(b, q), Q_BYTES);   /* the full box, even past seq */
        tma_load_4d(b.sQ + q * Q_BYTES, &p.q_map, q_full<VS>(b, q), 0, w.m0, 0, w.bh);
        attn_region_end(rg, ATTN_REGION_TMA_Q);
        for (int n = si.n_begin; n <= w.n_end; ++n) {
            if (n < w.n_end) {                /* K[n] */
                const int uk = u + (n - si.n_begin), s = kv_stage(uk);
                attn_region_begin(rg, ATTN_REGION_WAIT_FREE);
                mbar_wait(k_empty<VS>(b, s), kv_phase(uk) ^ 1u);
                attn_region_end(rg, ATTN_REGION_WAIT_FREE);
                attn_region_begin(rg, ATTN_REGION_TMA_K);
                mbar_arrive_expect_tx(k_full(b, s), KV_BYTES);
                tma_load_4d(b.sK + s * KV_BYTES, &p.k_map, k_full(b, s), 0, n * H3_BLOCK_N, 0, w.bh);
                attn_region_end(rg, ATTN_REGION_TMA_K);
            }
            if (n > si.n_begin) {             /* V[n - 1] */
                const int uv = u + (n - 1 - si.n_begin), s = v_stage<VS>(uv);
                attn_region_begin(rg, ATTN_REGION_WAIT_FREE);
                mbar_wait(v_empty<VS>(b, s), v_phase<VS>(uv) ^ 1u);
                attn_region_end(rg, ATTN_REGION_WAIT_FREE);
                attn_region_begin(rg, ATTN_REGION_TMA_V);
                mbar_arrive_expect_tx(v_full(b, s), KV_BYTES);
                tma_load_4d(b.sV + s * KV_BYTES, &p.v_map, v_full(b, s), 0, (n - 1) * H3_BLOCK_N, 0, w.bh);
                attn_region_end(rg, ATTN_REGION_TMA_V);
            }
        }
        u += w.n_end - si.n_begin;
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
} r14_wg;

/* S[0] of the item and its softmax, alone (O = 0: nothing to rescale); prev_q_empty handed back
 * under it. */
template <int D, int BM>
static __device__ __forceinline__ void first_tile(const flash3_block &b, const r14_wg &w,
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
    warp_release(k_empty<R14_V_STAGES>(b, s0));
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
static __device__ __forceinline__ void key_tile(const flash3_block &b, const r14_wg &w, int n,
                                                float (&o)[D / 2], uint32_t (&pk)[H3_BLOCK_N / 16][4],
                                                float (&m_run)[2], float (&l_run)[2],
                                                float (&alpha_p)[2], bool &resc_p,
                                                attn_regions_ctx &rg)
{
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    const int s = kv_stage(w.u0 + n), sp = v_stage<R14_V_STAGES>(w.u0 + n - 1);
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
    mbar_wait(v_full(b, sp), v_phase<R14_V_STAGES>(w.u0 + n - 1));
    attn_region_end(rg, ATTN_REGION_WAIT_V);
    attn_region_begin(rg, ATTN_REGION_PV);
    issue_pv<D>(o, pk, w.v_desc, (uint32_t)sp * KV_BYTES);
    attn_region_end(rg, ATTN_REGION_PV);
    named_barrier_arrive(w.pp_next, 256);
    wgmma_wait<1>();                          /* S[n] is complete; P[n-1].V[n-1] may not be */
    wgmma_fence_regs(sacc);
    attn_region_end(rg, ATTN_REGION_S);
    warp_release(k_empty<R14_V_STAGES>(b, s));

    attn_region_begin(rg, ATTN_REGION_SOFTMAX);   /* to P[n] packed */
    if (PCOLS == 64 || n >= w.n_mask) mask_rows<PCOLS>(sacc, w.r0, w.key0 + n * H3_BLOCK_N, w.seq);
    resc_p = online_softmax_lazy<H3_BLOCK_N, PCOLS>(sacc, m_run, l_run, alpha_p, w.c);
    wait_pv_after_softmax<D>(l_run);          /* P[n-1].V[n-1] is complete: O and pk are free */
    wgmma_fence_regs(o);
    warp_release(v_empty<R14_V_STAGES>(b, sp));
    pack_p<H3_BLOCK_N, PCOLS>(sacc, pk);      /* P[n], written only now that no wgmma reads pk */
    attn_region_end(rg, ATTN_REGION_SOFTMAX);
}

/* The item's last rescale and P.V (its first KEYS keys: 4 k-steps on the half tile), in their
 * own turn, and the wait for it. */
template <int D, int KEYS>
static __device__ __forceinline__ void last_pv(const flash3_block &b, const r14_wg &w, int n_tiles,
                                               float (&o)[D / 2], const uint32_t (&pk)[H3_BLOCK_N / 16][4],
                                               const float (&alpha_p)[2], bool resc_p,
                                               attn_regions_ctx &rg)
{
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    const int sp = v_stage<R14_V_STAGES>(w.u0 + n_tiles - 1);
    attn_region_begin(rg, ATTN_REGION_WAIT_V);
    mbar_wait(v_full(b, sp), v_phase<R14_V_STAGES>(w.u0 + n_tiles - 1));
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
    warp_release(v_empty<R14_V_STAGES>(b, sp));
}

/* Consumer warpgroup cwg on item it, as rung 11's consume_item (Q in buffer sQ, its full
 * barrier's parity q_parity; the item's key tile n is the block's key tile u0 + n; prev_q_empty
 * handed back under the first S; its own causal bound n_tiles, every key tile of the item
 * released and every turn taken; the rescale of O lazy and under the next S), with its last key
 * tile at half width where the diagonal leaves its second half masked for all 64 rows. */
template <int D>
static __device__ __forceinline__ void consume_item(const flash3_params &p, const flash3_block &b,
                                                    int cwg, const split_item &si, uint32_t sQ,
                                                    uint32_t q_bar, uint32_t q_parity, int u0,
                                                    uint32_t prev_q_empty, attn_regions_ctx &rg)
{
    constexpr int BN = H3_BLOCK_N, BM = R14_BLOCK_M(D), NC = R14_CONSUMERS(D);
    const int seq = p.seq;
    const flash3_item &it = si.it;
    const int n_item = it.n_end - si.n_begin;   /* the item's key tiles; the n-th is n_begin + n */
    r14_wg w;
    w.q_desc = q_desc_of(sQ, cwg);
    w.k_desc = k_desc_of(b);
    w.v_desc = v_desc_of(b);
    w.u0 = u0;
    w.key0 = si.n_begin * BN;
    w.r0 = it.m0 + cwg * 64;                  /* the warpgroup's first row */
    w.seq = seq;
    w.n_mask = min(w.r0, seq) / BN - si.n_begin;   /* the first that needs the mask */
    w.c = p.scale_log2;
    w.pp_mine = NBAR_PINGPONG + (uint32_t)cwg;
    w.pp_next = NBAR_PINGPONG + (uint32_t)((cwg + 1) % NC);

    const int r0 = w.r0;
    const int n_reach = r0 >= 0 && r0 < seq ? causal_key_tiles(r0, 64, BN, seq) : 0;
    const int n_tiles = max(min(n_reach, it.n_end) - si.n_begin, 0);   /* the ones it computes */
    /* Its last key tile (n_tiles - 1, when the item reaches the warpgroup's bound) holds no more
     * than 64 keys that its rows see: min(r0 + 64, seq) - that tile's first key <= 64. */
    const bool half = n_tiles > 0 && n_reach <= it.n_end &&
                      min(r0 + 64, seq) - (n_reach - 1) * BN <= 64;
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
                key_tile<D, BM, R14_HALF_S(D), R14_HALF_P(D)>(b, w, n_tiles - 1, o, pk, m_run, l_run,
                                                             alpha_p, resc_p, rg);
                last_pv<D, 64>(b, w, n_tiles, o, pk, alpha_p, resc_p, rg);
            } else {
                last_pv<D, BN>(b, w, n_tiles, o, pk, alpha_p, resc_p, rg);
            }
        }
    }
    /* The item's key tiles past this warpgroup's reach (head_dim 64: rung 10's), each released
     * once the producer has filled it, and its turn taken. */
    for (int n = n_tiles; n < n_item; ++n) {
        const int s = kv_stage(u0 + n), sv = v_stage<R14_V_STAGES>(u0 + n);
        attn_region_begin(rg, ATTN_REGION_WAIT_K);
        mbar_wait(k_full(b, s), kv_phase(u0 + n));
        warp_release(k_empty<R14_V_STAGES>(b, s));
        mbar_wait(v_full(b, sv), v_phase<R14_V_STAGES>(u0 + n));
        warp_release(v_empty<R14_V_STAGES>(b, sv));
        attn_region_end(rg, ATTN_REGION_WAIT_K);
        attn_region_begin(rg, ATTN_REGION_WAIT_TURN);
        skip_turn(w.pp_mine, w.pp_next);
        attn_region_end(rg, ATTN_REGION_WAIT_TURN);
    }
    if (si.slot < 0)
        store_o_tma_issue<D, BM>(p, it, sQ, cwg, o, l_run);   /* its wait: under the next item's S[0] */
    else
        store_o_partial<D, BM>(p, si, cwg, o, m_run, l_run);  /* its log-sum-exp from the kept max */
    attn_region_end(rg, ATTN_REGION_EPILOGUE);
}

/* One block: rung 13's fwd_block, with ahead_producer and three V stages;
 * R14_THREADS(D) threads = the producer warpgroup and R14_CONSUMERS(D) consumer warpgroups. Item
 * j uses Q buffer j % 2, handed back under item j + 1's first S. */
template <int D>
static __device__ __forceinline__ void fwd_block(const flash3_params &p)
{
    constexpr int BM = R14_BLOCK_M(D);
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, BM);
    const flash3_block b = flash3_block_init<D, 2, BM, R14_V_STAGES>(p);
    griddep_launch_dependents();              /* the next kernel may be placed as blocks leave */
    griddep_wait();                           /* the kernel ahead has completed: memory from here */
    if (threadIdx.x >> 7 == 0) {
        setmaxnreg_dec<R14_PRODUCER_REGS(D)>();
        if (threadIdx.x == 0) {
            attn_regions_ctx rg = flash3_regions_start(p);
            ahead_producer<D, BM, R14_V_STAGES>(p, b, rg);
            attn_regions_finish(rg);
        }
    } else {
        setmaxnreg_inc<R14_CONSUMER_REGS(D)>();
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
                            q_full<R14_V_STAGES>(b, qb), (uint32_t)(j / 2) & 1u, u0, j ? q_empty<R14_V_STAGES>(b, qb ^ 1) : 0u, rg);
            u0 += it.it.n_end - it.n_begin;
        }
        if (storer) tma_store_wait();         /* O is in global memory before the block ends */
        attn_regions_finish(rg);
    }
}

__global__ void __launch_bounds__(R14_THREADS(64), 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_192x128_d64_r14_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<64>(p);
#endif
}

__global__ void __launch_bounds__(R14_THREADS(128), 1)
FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r14_sm90a)(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fwd_block<128>(p);
#endif
}

__global__ void __launch_bounds__(256)
FLASH3_KERNEL(flash3_fwd_combine_bf16_d64_r14_sm90a)(const __grid_constant__ flash3_combine_params cp)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    griddep_launch_dependents();
    griddep_wait();                           /* the forward kernel's partials are written */
    combine_rows<64, R14_BLOCK_M(64)>(cp);
#endif
}

__global__ void __launch_bounds__(256)
FLASH3_KERNEL(flash3_fwd_combine_bf16_d128_r14_sm90a)(const __grid_constant__ flash3_combine_params cp)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    griddep_launch_dependents();
    griddep_wait();                           /* the forward kernel's partials are written */
    combine_rows<128, R14_BLOCK_M(128)>(cp);
#endif
}

const flash3_rung FLASH3_RUNG(14) = {
    14, "+ K one tile ahead of V, and V three stages deep",
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_192x128_d64_r14_sm90a),
    (const void *)FLASH3_KERNEL(flash3_fwd_bf16_causal_128x128_d128_r14_sm90a),
    /* persistent */ 1, /* q_buffers */ 2,
    (const void *)FLASH3_KERNEL(flash3_fwd_combine_bf16_d64_r14_sm90a),
    (const void *)FLASH3_KERNEL(flash3_fwd_combine_bf16_d128_r14_sm90a),
    /* block_m */ R14_BLOCK_M(64), /* block_m_d128 */ R14_BLOCK_M(128), /* dependent_launch */ 1,
    /* v_stages */ R14_V_STAGES, /* cluster */ 0,
};
