/* flash3_split.cuh: the device side of the split over the keys (rungs 8-13; the host plan is
 * flash3_split.h): the work items of a block (p.work where the host split the keys, else
 * flash3_section_item), a chunk's partial epilogue, and the combine kernel's rows. Written once
 * here so that the rungs that split differ only by their own idea; the producer (split_producer)
 * walks the same items.
 * Dao, Haziza, Massa, Sizov 2023, "Flash-Decoding for long-context inference"; FlashAttention-3
 * (Shah et al. 2024, arXiv 2407.08608) and its hopper/flash_fwd_combine_kernel.h (split-KV).
 */
#ifndef ATTN_07_FLASH3_SPLIT_CUH
#define ATTN_07_FLASH3_SPLIT_CUH

#include "flash3.cuh"
#include "flash3_split.h"

/* A work item of a rung that splits: the tile and its key range, and where its O goes (flash3_work's
 * slot: < 0 O itself, else a partial's slot). */
typedef struct {
    flash3_item it;            /* it.n_end: one past the last key tile */
    int n_begin, slot;
} split_item;

/* Where a block stands in its items: its j-th item of p.work, or its place in
 * flash3_section_item's order. Producer and consumers each keep their own. */
typedef struct {
    int j;
    flash3_cursor sec;
} split_cursor;

/* The block's next item, false when it has no more. */
template <int BM = H3_BLOCK_M>
static __device__ __forceinline__ bool next_item(const flash3_params &p, split_cursor &c, split_item &w)
{
    if (p.work) {
        const int i = p.work_first[blockIdx.x] + c.j;
        if (i >= p.work_first[blockIdx.x + 1]) return false;
        const flash3_work x = p.work[i];
        w.it.bh = x.bh;
        w.it.m0 = flash3_tile_m0(x.m_blk, BM, p.seq);
        w.it.n_end = x.n_end;
        w.n_begin = x.n_begin;
        w.slot = x.slot;
        ++c.j;
        return true;
    }
    w.n_begin = 0;
    w.slot = -1;
    return flash3_section_item<BM>(p, (int)gridDim.x, (int)blockIdx.x, c.sec, w.it);
}

/* A partial item's epilogue: this thread's rows of O divided by their sums (fp32) into slot
 * si.slot of p.o_part, [slot][row in tile][head_dim], 8 bytes per store; and, by the quad's first
 * lane, each row's log-sum-exp in log2 units, m * c + log2(l) (P = 2^(S*c - m*c), so l * 2^(m*c)
 * is the row's sum of 2^(S*c)), into p.lse_part [slot][row in tile]. */
template <int D, int BM = H3_BLOCK_M>
static __device__ __forceinline__ void store_o_partial(const flash3_params &p, const split_item &si,
                                                       int cwg, const float (&o)[D / 2],
                                                       const float (&m_run)[2], const float (&l_run)[2])
{
    const int lane = threadIdx.x & 31, w = (threadIdx.x & 127) >> 5, g = lane >> 2, t = lane & 3;
    float *op = p.o_part + (size_t)si.slot * BM * D;
    float *lp = p.lse_part + (size_t)si.slot * BM;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float l = l_run[h];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const float inv = l > 0.f ? 1.f / l : 0.f;
        const int r = cwg * 64 + 16 * w + g + 8 * h;              /* row in the tile */
#pragma unroll
        for (int j = 0; j < D / 8; ++j)
            *(float2 *)(op + (size_t)r * D + 8 * j + 2 * t) =
                make_float2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
        /* l = 0: a row with no key (none in a causal split) gets -inf, which the combine leaves
         * out; a NaN l (a NaN in Q, K or V) gives a NaN log-sum-exp, which the combine carries
         * into the row of O, as the whole-tile epilogue carries it */
        if (t == 0) lp[r] = l == 0.f ? -INFINITY : fmaf(m_run[h], p.scale_log2, log2f(l));
    }
}

/* The combine: one thread per 8 columns of a row of a split tile (D/8 threads a row, 256 / (D/8)
 * rows a block; grid (split tiles, BM / rows per block)). Over the tile's partials k in key
 * order, an online log-sum-exp: m the largest lse_k so far, s = sum 2^(lse_k - m), acc = sum
 * 2^(lse_k - m) O_k (fp32); then O = acc / s in bf16, 16 bytes per thread. Rows past seq are
 * left out. A NaN log-sum-exp (a NaN in the row's inputs) makes s, and so the row of O, NaN. */
template <int D, int BM = H3_BLOCK_M>
static __device__ __forceinline__ void combine_rows(const flash3_combine_params &cp)
{
    constexpr int TPR = D / 8, ROWS = 256 / TPR;
    const flash3_combine_tile ct = cp.tiles[blockIdx.x];
    const int r = (int)blockIdx.y * ROWS + (int)threadIdx.x / TPR;     /* row in the tile */
    const int col = ((int)threadIdx.x % TPR) * 8;
    const int row = flash3_tile_m0(ct.m_blk, BM, cp.seq) + r;
    if (row >= cp.seq || (BM != H3_BLOCK_M && row < 0)) return;   /* 192-row tiles: rows before 0 too */
    float m = -INFINITY, s = 0.f, acc[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = 0.f;
    for (int k = 0; k < ct.chunks; ++k) {
        const size_t at = (size_t)(ct.first_slot + k) * BM + r;
        const float lse = cp.lse_part[at];
        if (lse == -INFINITY) continue;   /* a partial with no key (none in a causal split) */
        const float4 a = *(const float4 *)(cp.o_part + at * D + col);
        const float4 b = *(const float4 *)(cp.o_part + at * D + col + 4);
        const float m_new = fmaxf(m, lse);
        const float keep = exp2f(m - m_new), wk = exp2f(lse - m_new);
        s = fmaf(s, keep, wk);
        const float x[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[e] = fmaf(acc[e], keep, wk * x[e]);
        m = m_new;
    }
    const float inv = s > 0.f ? 1.f / s : 0.f;
    uint4 out;
    out.x = bf16x2_bits(__floats2bfloat162_rn(acc[0] * inv, acc[1] * inv));
    out.y = bf16x2_bits(__floats2bfloat162_rn(acc[2] * inv, acc[3] * inv));
    out.z = bf16x2_bits(__floats2bfloat162_rn(acc[4] * inv, acc[5] * inv));
    out.w = bf16x2_bits(__floats2bfloat162_rn(acc[6] * inv, acc[7] * inv));
    *(uint4 *)(cp.o + ((size_t)ct.bh * cp.seq + row) * D + col) = out;
}

/* The producer of a rung that splits (rungs 8-13; BM: its query tile's rows): one thread of
 * warpgroup 0. Per work item j
 * (next_item): Q into buffer j % 2 (once the consumers have let go of item j - 2's), then for each
 * key tile n of the item the K tile and the V tile into the next stage, each as soon as the
 * consumers have released the tile that stage held before. The stages run on across items: u
 * counts the block's key tiles so far. */
template <int D, int BM = H3_BLOCK_M>
static __device__ __forceinline__ void split_producer(const flash3_params &p, const flash3_block &b,
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
        mbar_wait(q_empty(b, q), ((uint32_t)(j / 2) & 1u) ^ 1u);
        attn_region_end(rg, ATTN_REGION_WAIT_FREE);
        attn_region_begin(rg, ATTN_REGION_TMA_Q);
        mbar_arrive_expect_tx(q_full(b, q), Q_BYTES);   /* the full box, even past seq */
        tma_load_4d(b.sQ + q * Q_BYTES, &p.q_map, q_full(b, q), 0, w.m0, 0, w.bh);
        attn_region_end(rg, ATTN_REGION_TMA_Q);
        for (int n = si.n_begin; n < w.n_end; ++n, ++u) {
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

#endif
