/* 07_hopper: causal attention with Hopper's asynchronous machinery (FlashAttention-3's ideas).
 *
 * The idea: let the hardware move and multiply asynchronously. The algorithm is 05_flash's (one
 * sweep over K and V, the online softmax rescaling the output accumulator); what changes is who
 * does the work:
 *   - the Tensor Memory Accelerator (TMA) copies whole Q, K and V tiles from global to shared
 *     memory, issued by one thread (cp.async.bulk.tensor with a tensor map), and counts the bytes
 *     off an mbarrier that the computing threads wait on (common/sm90/tma.cuh, mbarrier.cuh);
 *   - S = Q.K^T and O += P.V are wgmma.mma_async: one instruction per warpgroup (128 threads)
 *     multiplies a 64 x N tile, reading K and V (and Q) straight from the 128-byte-swizzled
 *     shared tiles that TMA wrote, with no ldmatrix; P stays in registers as the A operand of
 *     P.V (common/sm90/wgmma.cuh).
 *   Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao 2024, "FlashAttention-3: Fast and Accurate
 *   Attention with Asynchrony and Low-precision" (arXiv 2407.08608); Dao 2023, "FlashAttention-2".
 *
 * The block: C consumer warpgroups (2 or 3) + 1 producer warpgroup. Work item: one tile of
 * BLOCK_M = 64*C query rows of one (batch, head), walking the key tiles 0 .. diagonal of 128
 * keys each. Persistent grid: one block per SM, each taking its items longest-first (the last
 * query tiles of causal attention have the most key tiles); with PERSIST off, one block per item.
 *   warpgroup 0, the producer: gives registers back (setmaxnreg 24 or 32) and one of its
 *     threads issues every TMA copy: per item Q into one of two buffers, then K[n] and V[n]
 *     into the next of 2 stages as soon as the consumers have released what that stage held
 *     (empty mbarriers); the stages and their barrier phases run on from item to item;
 *   warpgroups 1..C, the consumers (setmaxnreg 240 or 160), 64 query rows each. Per key tile:
 *     wait K[n] (full mbarrier) -> S = Q.K^T: head_dim/16 wgmma m64n128k16, A and B from
 *       shared memory; release K[n]
 *     mask (only on the tile that crosses the diagonal or the end of the sequence)
 *     online softmax on S in registers (4-lane quad reductions), P packed to bf16 pairs,
 *       O *= alpha
 *     wait V[n] (full mbarrier) -> O += P.V: 8 wgmma m64n<head_dim>k16, A = P from registers;
 *       release V[n]
 *   With OVERLAP (FlashAttention-3's intra-warpgroup overlap) the consumer issues S[n] and
 *   O += P[n-1].V[n-1] back to back and runs the softmax of S[n] while the second product is on
 *   the tensor cores. With PINGPONG the consumer warpgroups take turns issuing their products
 *   (named barriers), so one's softmax runs under the other's wgmma.
 * The chapter's kernels (knobs below): head_dim 64: 2 consumers (128 x 128 tiles), persistent,
 * overlap, ping-pong; head_dim 128: 2 consumers (128 x 128), persistent, overlap (3 consumers
 * would need more than 160 registers; the ping-pong is slower there).
 * docs/perf-notes.md has the measured alternatives.
 * Key tiles past the diagonal are never loaded. Rows and keys past seq: TMA fills the parts of a
 * box outside the tensor with zeros, the mask hides keys >= seq, and rows >= seq are not stored.
 *
 * Shared memory (dynamic, rounded up to a 1024-byte boundary; each tile as TMA writes it with
 * 128-byte swizzle: [head_dim/64 panels][rows][64 bf16], 16-byte chunk c of row r at c ^ (r % 8)):
 *   Q 2 (persistent) or 1 x BLOCK_M x head_dim (each the item's O tile at its end),
 *   K 2 x 128 x head_dim, V 2 x 128 x head_dim,
 *   mbarriers: K full x 2, V full x 2, K empty x 2, V empty x 2, Q full x 2 (1), Q empty x 2 (0).
 *
 * Tensors: bf16 [batch, heads, seq, head_dim], contiguous. head_dim 64 or 128, any seq >= 1.
 * One launch per forward, no extra device memory. Built for sm_90a only (wgmma exists on
 * compute capability 9.0 alone; the Makefile's 07_hopper_ARCH).
 *
 * Kernel names: flash3_fwd_bf16_causal_<BLOCK_M>x<BLOCK_N>_d<head_dim>_sm90a.
 */
#include <cuda.h>              /* CUtensorMap and its enums (types only: no -lcuda) */
#include <cudaTypedefs.h>      /* PFN_cuTensorMapEncodeTiled_v12000 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <math_constants.h>   /* CUDART_L2E_F = log2(e) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "check.h"
#include "sm80/mma_sm80.cuh"   /* smem_addr, bf16x2_bits, exp2_approx, st_shared_b32, ld_shared_v4 */
#include "sm90/mbarrier.cuh"
#include "sm90/setmaxnreg.cuh"
#include "sm90/tma.cuh"
#include "sm90/wgmma.cuh"

#define H3_BLOCK_N     128                    /* keys per key tile */
#define H3_STAGES      2                      /* K/V tiles in flight */

/* Tuning knobs per head_dim (compile-time, for experiments; the defaults are what the chapter
 * measures), e.g. make 07_hopper NVCC="/usr/local/cuda/bin/nvcc -DH3_D64_OVERLAP=1"
 * (the Makefile's flags stamp includes $(NVCC), so a changed -D recompiles by itself):
 *   H3_D64_CONSUMERS, H3_D128_CONSUMERS  consumer warpgroups, 2 or 3: BLOCK_M = 64 x that
 *   H3_D64_OVERLAP, H3_D128_OVERLAP      1: the softmax of tile n overlaps P[n-1].V[n-1]
 */
#ifndef H3_D64_CONSUMERS
#define H3_D64_CONSUMERS 2
#endif
#ifndef H3_D64_OVERLAP
#define H3_D64_OVERLAP 1
#endif
#ifndef H3_D128_CONSUMERS
#define H3_D128_CONSUMERS 2
#endif
#ifndef H3_D128_OVERLAP
#define H3_D128_OVERLAP 1
#endif
/* H3_SETMAXNREG (default 1): the warpgroups trade registers with setmaxnreg. 0 keeps every
 * warpgroup at the launch's registers (the consumers may then spill to local memory). Only
 * make sanitize's racecheck build uses 0 (07_hopper/run_racecheck, see tests/sanitize.sh):
 * compute-sanitizer's racecheck hangs now and then on the setmaxnreg build, and what racecheck
 * checks, the shared-memory protocol (TMA -> mbarrier -> wgmma -> mbarrier -> TMA, the
 * epilogue's staging), is the same code in both builds. */
#ifndef H3_SETMAXNREG
#define H3_SETMAXNREG 1
#endif
/*   H3_D64_PERSISTENT, H3_D128_PERSISTENT  1: a persistent grid (one block per SM, each walking
 *                                          query tiles longest-first, Q double-buffered);
 *                                          0: one block per query tile */
#ifndef H3_D64_PERSISTENT
#define H3_D64_PERSISTENT 1
#endif
#ifndef H3_D128_PERSISTENT
#define H3_D128_PERSISTENT 1
#endif
/*   H3_D64_PINGPONG, H3_D128_PINGPONG      1 (with the overlap): the consumer warpgroups take
 *                                          turns issuing their products (named barriers) */
#ifndef H3_D64_PINGPONG
#define H3_D64_PINGPONG 1
#endif
#ifndef H3_D128_PINGPONG
#define H3_D128_PINGPONG 0
#endif

/* Threads of a block with C consumer warpgroups (+ the producer warpgroup), and the setmaxnreg
 * budgets that fill the SM's 65536 registers: 128 x 24 + 256 x 240 = 64512 (C = 2),
 * 128 x 32 + 384 x 160 = 65536 (C = 3), as FlashAttention-3 splits them. */
#define H3_THREADS(C)       (128 * (1 + (C)))
#define H3_PRODUCER_REGS(C) ((C) == 2 ? 24 : 32)
#define H3_CONSUMER_REGS(C) ((C) == 2 ? 240 : 160)

/* Kernel arguments. The tensor maps describe Q, K, V as 4-D tensors {64, seq, head_dim/64,
 * batch*heads} (innermost first; see encode_qkv_map) with a box of {64, rows, head_dim/64, 1},
 * rows = BLOCK_M for Q and 128 for K and V: one box is one tile. They live in the parameter space (__grid_constant__), where TMA reads them. */
typedef struct {
    CUtensorMap q_map, k_map, v_map;
    __nv_bfloat16 *o;          /* bf16 [batch, heads, seq, head_dim] */
    int seq;
    int bh_count, q_tiles;     /* batch*heads; query tiles per head (persistent grid's work) */
    float scale_log2;          /* scale * log2(e): exp(x*scale) = 2^(x*scale_log2) */
} flash3_params;

/* Bytes of one tile of ROWS rows, and of the block's dynamic shared memory with QB Q buffers
 * (1: one query tile per block; 2: the persistent grid loads the next tile's Q while the
 * current one is computed). mbarriers: K/V full and empty per stage, Q full per Q buffer and,
 * with 2 buffers, Q empty per buffer. */
#define H3_TILE_BYTES(D, ROWS) ((ROWS) * (D) * 2)
#define H3_BARRIERS(QB)        (4 * H3_STAGES + ((QB) == 1 ? 1 : 2 * (QB)))
#define H3_SMEM_BYTES(D, BM, QB) \
    ((size_t)1024 + (QB) * H3_TILE_BYTES(D, BM) + 2 * H3_STAGES * H3_TILE_BYTES(D, H3_BLOCK_N) + \
     8 * H3_BARRIERS(QB))
#define H3_QBUFS(PERSIST)      ((PERSIST) ? 2 : 1)

/* PTX "bar, barrier" (bar.sync with a thread count): a barrier among `count` threads (a multiple
 * of 32) on hardware barrier `id` (1..15; 0 is __syncthreads'). */
static __device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t count)
{
    asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(count) : "memory");
}

/* PTX "bar, barrier" (bar.arrive): count this warp's threads towards the `count` of barrier `id`
 * without waiting for it. */
static __device__ __forceinline__ void named_barrier_arrive(uint32_t id, uint32_t count)
{
    asm volatile("bar.arrive %0, %1;\n" :: "r"(id), "r"(count) : "memory");
}

/* Ping-pong of C consumer warpgroups (FlashAttention-3's warp_scheduler_barrier): warpgroup c
 * waits on barrier H3_PP_BAR + c before issuing a tile's products and, once they are issued,
 * lets warpgroup (c + 1) % C go. Each barrier completes with 256 threads: the waiting
 * warpgroup's 128 and the 128 of the one before it. Warpgroup 0 arrives on its own barrier once
 * at the start, so it goes first. The tensor cores then run one warpgroup's products while the
 * other does its softmax. Barriers 1..C are the epilogue's. */
#define H3_PP_BAR 4u

/* Shared-memory layout of one block (offsets from the 1024-byte-aligned start). */
typedef struct {
    uint32_t sQ, sK, sV, bar;  /* .shared addresses: Q buffers, K stages, V stages, mbarriers */
} flash3_block;

/* One work item: one query tile of one (batch, head). Both roles compute the same items in the
 * same order and the same causal bounds (they must agree on the number of key tiles, or the
 * producer waits for a release that never comes). */
typedef struct {
    int bh, m0, n_end;         /* (batch, head), first query row, key tiles 0..n_end-1 */
} flash3_item;

/* The j-th work item of this block (j = 0, 1, ...); false when the block has no more.
 * One tile per block (PERSIST false): grid (batch*heads, query tiles), the heaviest (last) query
 * tile first in launch order, j = 0 only.
 * Persistent (grid = min(SMs, tiles) blocks): the tiles in longest-first order, i = 0 .. total-1
 * with query tile q_tiles - 1 - i / bh_count of head i % bh_count (causal: the last query tile
 * has the most key tiles); round r hands items r*G .. r*G + G-1 to the G blocks, forward in even
 * rounds and backward in odd ones (a block that got a long item in one round gets a short one
 * in the next). */
template <int BM, bool PERSIST>
static __device__ __forceinline__ bool flash3_next_item(const flash3_params &p, int j, flash3_item &w)
{
    int m_blk;
    if constexpr (PERSIST) {
        const int G = (int)gridDim.x, blk = (int)blockIdx.x;
        const long long i = (long long)j * G + ((j & 1) ? G - 1 - blk : blk);
        if (i >= (long long)p.q_tiles * p.bh_count) return false;
        m_blk = p.q_tiles - 1 - (int)(i / p.bh_count);
        w.bh = (int)(i % p.bh_count);
    } else {
        if (j > 0) return false;
        m_blk = (int)(gridDim.y - 1 - blockIdx.y);
        w.bh = (int)blockIdx.x;
    }
    w.m0 = m_blk * BM;
    /* Causal bounds: key tiles 0 .. n_end-1 reach the tile's last row (or seq); none past that
     * is ever loaded. With BLOCK_M == BLOCK_N both consumers need every one of them. */
    const int n_tiles = (p.seq + H3_BLOCK_N - 1) / H3_BLOCK_N;
    w.n_end = min(n_tiles, (w.m0 + BM - 1) / H3_BLOCK_N + 1);
    return true;
}

/* The mbarriers (8 bytes each, after the tiles): per stage s, K full, V full (one arrival: the
 * producer's expect_tx, plus the tile's bytes) and K empty, V empty (one arrival per consumer
 * warp once its wgmma reading the tile have completed); per Q buffer q, Q full and (2 buffers)
 * Q empty (one arrival per consumer warp once the epilogue is done with the buffer). */
#define K_FULL(b, s)   ((b).bar + 8u * (s))
#define V_FULL(b, s)   ((b).bar + 8u * (H3_STAGES + (s)))
#define K_EMPTY(b, s)  ((b).bar + 8u * (2 * H3_STAGES + (s)))
#define V_EMPTY(b, s)  ((b).bar + 8u * (3 * H3_STAGES + (s)))
#define Q_FULL(b, q)   ((b).bar + 8u * (4 * H3_STAGES + (q)))
#define Q_EMPTY(b, q)  ((b).bar + 8u * (4 * H3_STAGES + 2 + (q)))

/* PTX "membar/fence" (fence.proxy.async.shared::cta): orders this thread's earlier ordinary
 * (generic-proxy) shared-memory accesses before later asynchronous-proxy accesses (a TMA copy
 * into the same bytes), once the release/acquire of an mbarrier has passed between them. */
static __device__ __forceinline__ void fence_proxy_async_smem(void)
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* The producer: one thread of warpgroup 0. Per work item j: Q into buffer j % QB (once the
 * consumers' epilogue of item j - QB has let go of it), then for each key tile n the K tile and
 * the V tile into the next stage, each as soon as the consumers have released the tile that
 * stage held before. The stages run on across items: u counts the block's key tiles so far,
 * stage u % H3_STAGES. Parity of a release: the k-th reuse of a stage or buffer (k = u /
 * H3_STAGES) waits for completion k - 1 of its empty barrier, parity (k & 1) ^ 1; for k = 0
 * that is parity 1 on a fresh barrier, which passes at once. */
template <int D, int BM, bool PERSIST>
static __device__ __forceinline__ void flash3_producer(const flash3_params &p, const flash3_block &b)
{
    constexpr int QB = H3_QBUFS(PERSIST);
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, BM), KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    int u = 0;
    flash3_item w;
    for (int j = 0; flash3_next_item<BM, PERSIST>(p, j, w); ++j) {
        const int q = j % QB;
        if constexpr (QB > 1) mbar_wait(Q_EMPTY(b, q), ((uint32_t)(j / QB) & 1u) ^ 1u);
        mbar_arrive_expect_tx(Q_FULL(b, q), Q_BYTES);   /* the full box, even past seq */
        tma_load_4d(b.sQ + q * Q_BYTES, &p.q_map, Q_FULL(b, q), 0, w.m0, 0, w.bh);
        for (int n = 0; n < w.n_end; ++n, ++u) {
            const int s = u % H3_STAGES;
            const uint32_t parity = ((uint32_t)(u / H3_STAGES) & 1u) ^ 1u;
            mbar_wait(K_EMPTY(b, s), parity);
            mbar_arrive_expect_tx(K_FULL(b, s), KV_BYTES);
            tma_load_4d(b.sK + s * KV_BYTES, &p.k_map, K_FULL(b, s), 0, n * H3_BLOCK_N, 0, w.bh);
            mbar_wait(V_EMPTY(b, s), parity);
            mbar_arrive_expect_tx(V_FULL(b, s), KV_BYTES);
            tma_load_4d(b.sV + s * KV_BYTES, &p.v_map, V_FULL(b, s), 0, n * H3_BLOCK_N, 0, w.bh);
        }
    }
}

/* Mask by assignment (-inf): key col is visible to row iff col <= row and col < seq. row0 is the
 * global row of this thread's h = 0 (h = 1 is row0 + 8), key0 the tile's first key. */
template <int BN>
static __device__ __forceinline__ void mask_tile(float (&sacc)[BN / 2], int row0, int key0, int seq,
                                                 int t)
{
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int limit = min(row0 + 8 * h + 1, seq) - key0 - 2 * t;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e)
                if (8 * j + e >= limit) sacc[4 * j + 2 * h + e] = -INFINITY;
    }
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

/* P (fp32, the S accumulator layout) -> the A operand of P.V: k-step k takes accumulator
 * registers 8k..8k+7 (keys 16k..16k+15) packed in pairs to bf16x2 (wgmma.cuh). */
template <int BN>
static __device__ __forceinline__ void pack_p(const float (&sacc)[BN / 2], uint32_t (&pk)[BN / 16][4])
{
#pragma unroll
    for (int k = 0; k < BN / 16; ++k)
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

/* S = Q.K^T for one key tile (stage offset kv_off): head_dim/16 wgmma k-steps, issued and
 * committed as one group (not waited for). Step kk reads 32 bytes further into each 128-byte
 * row, then the next 64-column panel. */
template <int D, int BM>
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

/* O += P.V for one key tile: BLOCK_N/16 k-steps, A = P from registers, B = V rows 16k..16k+15
 * (2048 bytes a step inside each panel); one group, not waited for. */
template <int D>
static __device__ __forceinline__ void issue_pv(float (&o)[D / 2], const uint32_t (&pk)[H3_BLOCK_N / 16][4],
                                                uint64_t v_desc, uint32_t kv_off)
{
    wgmma_fence();                            /* O and P were written by ordinary code */
#pragma unroll
    for (int k = 0; k < H3_BLOCK_N / 16; ++k) {
        const uint32_t v_off = kv_off + (uint32_t)k * 2048u;
        if constexpr (D == 64)
            wgmma_m64n64k16_rs(o, pk[k], v_desc + (v_off >> 4), 1);
        else
            wgmma_m64n128k16_rs(o, pk[k], v_desc + (v_off >> 4), 1);
    }
    wgmma_commit();
}

/* A consumer warpgroup cwg (0 .. C-1), for each of the block's work items: query rows
 * m0 + 64cwg .. m0 + 64cwg + 63 of the item, all its key tiles, then its rows of O.
 *
 * Register bookkeeping of one thread: warp w of the warpgroup, lane = 4g + t. By the wgmma
 * accumulator layout (wgmma.cuh) the thread owns rows 16w + g + 8h (h = 0, 1) of the
 * warpgroup's 64 and, in each 8-column group j, columns 8j + 2t and 8j + 2t + 1:
 *   sacc[4j + 2h + e]  S of (row h, key 8j + 2t + e) of the current key tile
 *   o[4j + 2h + e]     O of (row h, column 8j + 2t + e)
 *   pk[k][i]           P as the A operand of k-step k (keys 16k..16k+15): i = 0, 1 the keys of
 *                      group 2k for rows h = 0, 1; i = 2, 3 those of group 2k + 1
 *   m_run[h]           running max of row h (raw Q.K units), l_run[h] this lane's part of its sum
 * Stages run on across items as in the producer: key tile n of an item is the block's key tile
 * u = u0 + n, stage u % H3_STAGES, completion u / H3_STAGES of its full barrier. */
template <int D, int BM, bool OVERLAP, bool PERSIST, bool PINGPONG>
static __device__ __forceinline__ void flash3_consumer(const flash3_params &p, const flash3_block &b,
                                                       int cwg)
{
    constexpr int BN = H3_BLOCK_N;
    constexpr int QB = H3_QBUFS(PERSIST);
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, BN), Q_BYTES = H3_TILE_BYTES(D, BM);
    constexpr int SN = BN / 2;                /* S floats per thread (64 x BN over 128 threads) */
    constexpr int ON = D / 2;                 /* O floats per thread */

    const int tid = threadIdx.x & 127, lane = tid & 31, w = tid >> 5, g = lane >> 2, t = lane & 3;
    const int seq = p.seq;
    const float c = p.scale_log2;

    /* Descriptors (wgmma.cuh): K of stage 0, K-major; V of stage 0, MN-major, its 64-column
     * panels BN*128 bytes apart (LBO). Offsets are added per k-step; Q's per item. */
    const uint64_t k_desc = wgmma_desc_sw128(b.sK, 16, 1024);
    const uint64_t v_desc = wgmma_desc_sw128(b.sV, BN * 128, 1024);

    constexpr bool PP = PINGPONG && OVERLAP;  /* the ping-pong is built on the overlapped loop */
    constexpr int C = BM / 64;
    const uint32_t pp_mine = H3_PP_BAR + (uint32_t)cwg, pp_next = H3_PP_BAR + (uint32_t)((cwg + 1) % C);
    if (PP && cwg == 0) named_barrier_arrive(pp_mine, 256);

    int u0 = 0;                               /* the block's key tiles before this item */
    flash3_item it;
    for (int j = 0; flash3_next_item<BM, PERSIST>(p, j, it); ++j) {
    const int qb = j % QB;
    const uint32_t sQ = b.sQ + (uint32_t)qb * Q_BYTES;
    const int m0 = it.m0, n_end = it.n_end;
    /* Q rows 64cwg.. of panel 0 of this item's buffer, K-major */
    const uint64_t q_desc = wgmma_desc_sw128(sQ + cwg * 64 * 128, 16, 1024);

    const int row0 = m0 + cwg * 64 + 16 * w + g;  /* global row of h = 0; h = 1 is row0 + 8 */
    float o[ON];
    float m_run[2] = { -INFINITY, -INFINITY }, l_run[2] = { 0.f, 0.f };
#pragma unroll
    for (int i = 0; i < ON; ++i) o[i] = 0.f;

    mbar_wait(Q_FULL(b, qb), (uint32_t)(j / QB) & 1u);
    if constexpr (!OVERLAP) {
    /* Rung 2: per key tile, S = Q.K^T, softmax, O += P.V, each product waited for at once. */
    for (int n = 0; n < n_end; ++n) {
        const int u = u0 + n;
        const int s = u % H3_STAGES;
        const uint32_t phase = (uint32_t)(u / H3_STAGES) & 1u;
        const uint32_t kv_off = (uint32_t)s * KV_BYTES;
        float sacc[SN];
        mbar_wait(K_FULL(b, s), phase);
        issue_qk<D, BM>(sacc, q_desc, k_desc, kv_off);
        wgmma_wait<0>();
        wgmma_fence_regs(sacc);
        __syncwarp();
        if (lane == 0) mbar_arrive(K_EMPTY(b, s));   /* this warp is done with K[n] */

        const int key0 = n * BN;              /* mask only the tile crossing the diagonal or seq */
        if (key0 + BN - 1 > m0 + cwg * 64 || key0 + BN > seq) mask_tile<BN>(sacc, row0, key0, seq, t);
        uint32_t pk[BN / 16][4];
        float alpha[2];
        online_softmax<BN>(sacc, m_run, l_run, alpha, c);
        pack_p<BN>(sacc, pk);
        rescale_o<D>(o, alpha);

        mbar_wait(V_FULL(b, s), phase);
        issue_pv<D>(o, pk, v_desc, kv_off);
        wgmma_wait<0>();
        wgmma_fence_regs(o);
        __syncwarp();
        if (lane == 0) mbar_arrive(V_EMPTY(b, s));   /* this warp is done with V[n] */
    }
    } else {
    /* Intra-warpgroup overlap (FlashAttention-3, Algorithm 2): the softmax of tile n runs while
     * the tensor cores compute O += P[n-1].V[n-1]. Per iteration: issue S[n] = Q.K[n]^T, issue
     * O += P[n-1].V[n-1], wait for S[n] only (wait_group 1), softmax of S[n], wait for O, then
     * rescale O by tile n's alpha (O then holds tiles 0..n-1 at tile n's max). */
    uint32_t pk[BN / 16][4];
    {
        const int s0 = u0 % H3_STAGES;
        float sacc[SN];
        float alpha[2];
        mbar_wait(K_FULL(b, s0), (uint32_t)(u0 / H3_STAGES) & 1u);
        if (PP) named_barrier_sync(pp_mine, 256);
        issue_qk<D, BM>(sacc, q_desc, k_desc, (uint32_t)s0 * KV_BYTES);
        if (PP) named_barrier_arrive(pp_next, 256);
        wgmma_wait<0>();
        wgmma_fence_regs(sacc);
        __syncwarp();
        if (lane == 0) mbar_arrive(K_EMPTY(b, s0));
        if (BN - 1 > m0 + cwg * 64 || BN > seq) mask_tile<BN>(sacc, row0, 0, seq, t);
        online_softmax<BN>(sacc, m_run, l_run, alpha, c);       /* O = 0: no rescale */
        pack_p<BN>(sacc, pk);
    }
    for (int n = 1; n < n_end; ++n) {
        const int u = u0 + n;
        const int s = u % H3_STAGES, sp = (u - 1) % H3_STAGES;
        const uint32_t phase = (uint32_t)(u / H3_STAGES) & 1u;
        const uint32_t phase_p = (uint32_t)((u - 1) / H3_STAGES) & 1u;
        float sacc[SN];
        mbar_wait(K_FULL(b, s), phase);
        if (PP) named_barrier_sync(pp_mine, 256);
        issue_qk<D, BM>(sacc, q_desc, k_desc, (uint32_t)s * KV_BYTES);
        mbar_wait(V_FULL(b, sp), phase_p);
        issue_pv<D>(o, pk, v_desc, (uint32_t)sp * KV_BYTES);
        if (PP) named_barrier_arrive(pp_next, 256);
        wgmma_wait<1>();                      /* S[n] is complete; P[n-1].V[n-1] may not be */
        wgmma_fence_regs(sacc);
        __syncwarp();
        if (lane == 0) mbar_arrive(K_EMPTY(b, s));

        const int key0 = n * BN;
        if (key0 + BN - 1 > m0 + cwg * 64 || key0 + BN > seq) mask_tile<BN>(sacc, row0, key0, seq, t);
        float alpha[2];
        online_softmax<BN>(sacc, m_run, l_run, alpha, c);

        wgmma_wait<0>();                      /* P[n-1].V[n-1] is complete: O and pk are free */
        wgmma_fence_regs(o);
        __syncwarp();
        if (lane == 0) mbar_arrive(V_EMPTY(b, sp));
        rescale_o<D>(o, alpha);
        pack_p<BN>(sacc, pk);                 /* P[n], written only now that no wgmma reads pk */
    }
    {
        const int u = u0 + n_end - 1;
        const int sp = u % H3_STAGES;
        mbar_wait(V_FULL(b, sp), (uint32_t)(u / H3_STAGES) & 1u);
        issue_pv<D>(o, pk, v_desc, (uint32_t)sp * KV_BYTES);
        wgmma_wait<0>();
        wgmma_fence_regs(o);
        __syncwarp();
        if (lane == 0) mbar_arrive(V_EMPTY(b, sp));
    }
    }
    u0 += n_end;

    /* Epilogue: O /= l (a row that saw no key keeps O = 0), to bf16, into this warpgroup's own
     * rows of the item's Q buffer (same panel layout and swizzle; its wgmma reads of Q are
     * complete and the other warpgroup reads only its own rows), then 16-byte coalesced global
     * stores. */
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
    named_barrier_sync(1 + cwg, 128);         /* this warpgroup's rows are complete */
    constexpr int CHUNKS = D / 8;             /* 16-byte chunks per row */
    __nv_bfloat16 *o_bh = p.o + (size_t)it.bh * seq * D;
#pragma unroll
    for (int i = 0; i < 64 * CHUNKS / 128; ++i) {
        const int idx = i * 128 + tid;
        const int r = idx / CHUNKS, ch = idx % CHUNKS;            /* r: row in the warpgroup */
        const int row = m0 + cwg * 64 + r;
        if (row < seq) {
            const uint32_t a = sQ + (uint32_t)((ch / 8) * BM * 128 + (cwg * 64 + r) * 128 +
                                               (((ch % 8) ^ (r & 7)) << 4));
            *(uint4 *)(o_bh + (size_t)row * D + ch * 8) = ld_shared_v4(a);
        }
    }
    if constexpr (QB > 1) {
        /* The buffer is free for the Q of item j + QB: order this thread's ordinary accesses to
         * it before that TMA write, then one arrival per warp. */
        fence_proxy_async_smem();
        __syncwarp();
        if (lane == 0) mbar_arrive(Q_EMPTY(b, qb));
    }
    }
}

/* One block: query tiles of BM = 64*C rows, each of one (batch, head); see the file comment and
 * flash3_next_item. Grid: PERSIST false, x = batch*heads, y = query tiles (one tile per block,
 * heaviest first); PERSIST true, min(SMs, tiles) blocks, each walking its tiles. Block:
 * 128*(C+1) threads = warpgroup 0, the producer (one thread issues every TMA copy;
 * H3_PRODUCER_REGS(C) registers), and warpgroups 1..C, the consumers (64 query rows each;
 * H3_CONSUMER_REGS(C) registers). Dynamic shared memory: H3_SMEM_BYTES(D, BM, H3_QBUFS(PERSIST)). */
template <int D, int C, bool OVERLAP, bool PERSIST, bool PINGPONG>
static __device__ __forceinline__ void flash3_fwd_tile(const flash3_params &p)
{
    constexpr int BM = 64 * C;
    static_assert(D == 64 || D == 128, "head_dim 64 or 128");
    static_assert((C == 2 || C == 3) && H3_BLOCK_N % 16 == 0, "tile shape");
    constexpr int QB = H3_QBUFS(PERSIST);
    constexpr uint32_t KV_BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);

    extern __shared__ uint8_t smem_raw[];
    flash3_block b;
    b.sQ = (smem_addr(smem_raw) + 1023u) & ~1023u;               /* 128B swizzle: 1024-B aligned */
    b.sK = b.sQ + QB * H3_TILE_BYTES(D, BM);
    b.sV = b.sK + H3_STAGES * KV_BYTES;
    b.bar = b.sV + H3_STAGES * KV_BYTES;

    const int wg = threadIdx.x >> 7;
    if (threadIdx.x == 0) {
        tma_prefetch_map(&p.q_map);
        tma_prefetch_map(&p.k_map);
        tma_prefetch_map(&p.v_map);
        for (int q = 0; q < QB; ++q) {
            mbar_init(Q_FULL(b, q), 1);
            if (QB > 1) mbar_init(Q_EMPTY(b, q), 4 * C);   /* one arrival per consumer warp */
        }
        for (int s = 0; s < H3_STAGES; ++s) {
            mbar_init(K_FULL(b, s), 1);
            mbar_init(V_FULL(b, s), 1);
            mbar_init(K_EMPTY(b, s), 4 * C);  /* one arrival per consumer warp */
            mbar_init(V_EMPTY(b, s), 4 * C);
        }
        mbar_fence_init();
    }
    __syncthreads();                          /* the last block-wide barrier */

    if (wg == 0) {
        if (H3_SETMAXNREG) setmaxnreg_dec<H3_PRODUCER_REGS(C)>();
        if (threadIdx.x == 0) flash3_producer<D, BM, PERSIST>(p, b);
    } else {
        if (H3_SETMAXNREG) setmaxnreg_inc<H3_CONSUMER_REGS(C)>();
        flash3_consumer<D, BM, OVERLAP, PERSIST, PINGPONG>(p, b, wg - 1);
    }
}
#undef Q_FULL
#undef Q_EMPTY
#undef K_FULL
#undef V_FULL
#undef K_EMPTY
#undef V_EMPTY

/* The two kernels, one per head_dim, named after their tile shape (see the file comment). */
#define H3_KERNEL_NAME(BM, BN, D)  H3_KERNEL_NAME_(BM, BN, D)
#define H3_KERNEL_NAME_(BM, BN, D) flash3_fwd_bf16_causal_##BM##x##BN##_d##D##_sm90a
#define H3_D64_BLOCK_M  (64 * H3_D64_CONSUMERS)
#define H3_D128_BLOCK_M (64 * H3_D128_CONSUMERS)
#if H3_D64_CONSUMERS == 2
#define H3_D64_KERNEL  H3_KERNEL_NAME(128, H3_BLOCK_N, 64)
#else
#define H3_D64_KERNEL  H3_KERNEL_NAME(192, H3_BLOCK_N, 64)
#endif
#if H3_D128_CONSUMERS == 2
#define H3_D128_KERNEL H3_KERNEL_NAME(128, H3_BLOCK_N, 128)
#else
#define H3_D128_KERNEL H3_KERNEL_NAME(192, H3_BLOCK_N, 128)
#endif

__global__ void __launch_bounds__(H3_THREADS(H3_D64_CONSUMERS), 1)
H3_D64_KERNEL(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    flash3_fwd_tile<64, H3_D64_CONSUMERS, (H3_D64_OVERLAP != 0), (H3_D64_PERSISTENT != 0),
                    (H3_D64_PINGPONG != 0)>(p);
#endif
}

__global__ void __launch_bounds__(H3_THREADS(H3_D128_CONSUMERS), 1)
H3_D128_KERNEL(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    flash3_fwd_tile<128, H3_D128_CONSUMERS, (H3_D128_OVERLAP != 0), (H3_D128_PERSISTENT != 0),
                    (H3_D128_PINGPONG != 0)>(p);
#endif
}

/* ---- the stage -------------------------------------------------------------------------------- */

/* Query rows, threads and dynamic shared memory of a block of the head_dim's kernel. */
static int block_m_for(int head_dim)
{
    return head_dim == 64 ? H3_D64_BLOCK_M : H3_D128_BLOCK_M;
}

static int threads_for(int head_dim)
{
    return head_dim == 64 ? H3_THREADS(H3_D64_CONSUMERS) : H3_THREADS(H3_D128_CONSUMERS);
}

static int persistent_for(int head_dim)
{
    return head_dim == 64 ? (H3_D64_PERSISTENT != 0) : (H3_D128_PERSISTENT != 0);
}

static size_t smem_for(int head_dim)
{
    return head_dim == 64 ? H3_SMEM_BYTES(64, H3_D64_BLOCK_M, H3_QBUFS(H3_D64_PERSISTENT != 0))
                          : H3_SMEM_BYTES(128, H3_D128_BLOCK_M, H3_QBUFS(H3_D128_PERSISTENT != 0));
}

/* The tensor maps of the last forward and the tensors they describe (re-encoded when those
 * change). */
typedef struct {
    PFN_cuTensorMapEncodeTiled_v12000 encode;
    PFN_cuGetErrorString_v6000 error_string;
    CUtensorMap q_map, k_map, v_map;
    const void *q, *k, *v;
    attn_shape shape;
    int sms;                   /* multiprocessors: the persistent grid's size */
} flash3_state;

/* A driver function through the runtime (cudaGetDriverEntryPointByVersion), so the stage links
 * only the runtime. Exits 1 with the symbol's name if the driver does not have it. */
static void *driver_entry(const char *symbol, unsigned int version)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || fn == NULL)
        check_fail("CUDA", "cudaGetDriverEntryPointByVersion", __FILE__, __LINE__, symbol,
                   q == cudaDriverEntryPointVersionNotSufficent ? "driver too old"
                                                                : "symbol not found");
    return fn;
}

/* Q, K or V ([batch, heads, seq, head_dim] bf16 at ptr) as a 4-D TMA tensor map, innermost first:
 *   dim 0: 64 columns of one panel (128 B, the widest box row 128-byte swizzle allows)
 *   dim 1: seq rows,                 stride head_dim*2 B
 *   dim 2: head_dim/64 panels,       stride 128 B
 *   dim 3: batch*heads,              stride seq*head_dim*2 B
 * box {64, rows, head_dim/64, 1}: one tile lands in shared memory as [panel][row][64] with
 * 128-byte swizzle; rows past seq are zero-filled (OOB_FILL_NONE), never another head's. */
static void encode_qkv_map(const flash3_state *st, CUtensorMap *map, const void *ptr,
                           const attn_shape *s, int rows)
{
    const cuuint64_t dims[4] = { 64, (cuuint64_t)s->seq, (cuuint64_t)(s->head_dim / 64),
                                 (cuuint64_t)s->batch * s->heads };
    const cuuint64_t strides[3] = { (cuuint64_t)s->head_dim * 2, 128,
                                    (cuuint64_t)s->seq * s->head_dim * 2 };
    const cuuint32_t box[4] = { 64, (cuuint32_t)rows, (cuuint32_t)(s->head_dim / 64), 1 };
    const cuuint32_t elem_strides[4] = { 1, 1, 1, 1 };
    const CUresult r = st->encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, (void *)ptr, dims,
                                  strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        const char *msg = NULL;
        if (st->error_string) st->error_string(r, &msg);
        check_fail("CUDA driver", "cuTensorMapEncodeTiled", __FILE__, __LINE__,
                   msg ? msg : "unknown error", NULL);
    }
}

static void encode_maps(flash3_state *st, const attn_problem *p)
{
    encode_qkv_map(st, &st->q_map, p->q, &p->shape, block_m_for(p->shape.head_dim));
    encode_qkv_map(st, &st->k_map, p->k, &p->shape, H3_BLOCK_N);
    encode_qkv_map(st, &st->v_map, p->v, &p->shape, H3_BLOCK_N);
    st->q = p->q;
    st->k = p->k;
    st->v = p->v;
    st->shape = p->shape;
}

/* head_dim 64 or 128 (checked without a device); compute capability 9.0 exactly (the sm_90a
 * binary runs nowhere else); shared memory within the opt-in limit; grid limits. */
static int flash3_supports(const attn_shape *s, const cudaDeviceProp *prop, char *why, size_t why_len)
{
    if (s->head_dim != 64 && s->head_dim != 128) {
        snprintf(why, why_len, "head_dim %d is not supported by 07_hopper (supported: 64, 128)",
                 s->head_dim);
        return 1;
    }
    if (!prop) return 0; /* the device checks follow */
    if (prop->major != 9 || prop->minor != 0) {
        snprintf(why, why_len, "07_hopper needs a Hopper GPU, compute capability 9.0 (sm_90a: "
                 "wgmma, TMA, mbarrier transactions); %s is %d.%d", prop->name, prop->major,
                 prop->minor);
        return 1;
    }
    const size_t smem = smem_for(s->head_dim);
    if (smem > prop->sharedMemPerBlockOptin) {
        snprintf(why, why_len, "07_hopper at head_dim %d needs %zu bytes of shared memory per "
                 "block; %s allows %zu", s->head_dim, smem, prop->name, prop->sharedMemPerBlockOptin);
        return 1;
    }
    const int bm = block_m_for(s->head_dim);
    const long long q_tiles = ((long long)s->seq + bm - 1) / bm;
    if (persistent_for(s->head_dim)) return 0;   /* grid = min(SMs, tiles) blocks */
    if (q_tiles > prop->maxGridSize[1]) {
        snprintf(why, why_len, "seq %d is too long for 07_hopper (at most %lld: %d query tiles of "
                 "%d rows)", s->seq, (long long)prop->maxGridSize[1] * bm,
                 prop->maxGridSize[1], bm);
        return 1;
    }
    if ((long long)s->batch * s->heads > prop->maxGridSize[0]) {
        snprintf(why, why_len, "batch*heads %lld is too large for 07_hopper (at most %d)",
                 (long long)s->batch * s->heads, prop->maxGridSize[0]);
        return 1;
    }
    return 0;
}

static size_t flash3_extra_bytes(const attn_shape *s)
{
    (void)s;
    return 0;                                  /* S and P never leave the chip */
}

/* Finds the tensor-map encoder in the driver, encodes the three maps, opts the kernel into its
 * dynamic shared memory (over the default 48 KiB). */
static void *flash3_setup(attn_problem *p)
{
    flash3_state *st = (flash3_state *)calloc(1, sizeof *st);
    if (!st) { fprintf(stderr, "07_hopper: out of host memory\n"); exit(1); }
    st->encode = (PFN_cuTensorMapEncodeTiled_v12000)driver_entry("cuTensorMapEncodeTiled", 12000);
    st->error_string = (PFN_cuGetErrorString_v6000)driver_entry("cuGetErrorString", 6000);
    encode_maps(st, p);
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&st->sms, cudaDevAttrMultiProcessorCount, dev));
    const void *kernel = p->shape.head_dim == 64 ? (const void *)H3_D64_KERNEL
                                                 : (const void *)H3_D128_KERNEL;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)smem_for(p->shape.head_dim)));
    return st;
}

/* One launch: grid (batch*heads, query tiles), or min(SMs, query tiles x batch*heads) blocks for
 * the persistent kernel; 384 threads (512 with 3 consumers). */
static void flash3_forward(attn_problem *p)
{
    flash3_state *st = (flash3_state *)p->state;
    const attn_shape *s = &p->shape;
    if (st->q != p->q || st->k != p->k || st->v != p->v ||
        memcmp(&st->shape, s, sizeof *s) != 0)
        encode_maps(st, p);
    flash3_params fp;
    fp.q_map = st->q_map;
    fp.k_map = st->k_map;
    fp.v_map = st->v_map;
    fp.o = (__nv_bfloat16 *)p->o;
    fp.seq = s->seq;
    fp.scale_log2 = p->scale * CUDART_L2E_F;
    const int bm = block_m_for(s->head_dim);
    fp.bh_count = s->batch * s->heads;
    fp.q_tiles = (s->seq + bm - 1) / bm;
    const long long tiles = (long long)fp.bh_count * fp.q_tiles;
    const dim3 grid = persistent_for(s->head_dim)
                          ? dim3((unsigned)(tiles < st->sms ? tiles : st->sms))
                          : dim3((unsigned)fp.bh_count, (unsigned)fp.q_tiles);
    const size_t smem = smem_for(s->head_dim);
    const int threads = threads_for(s->head_dim);

    prof_range_push("flash3_attention_forward");
    if (s->head_dim == 64)
        H3_D64_KERNEL<<<grid, threads, smem, p->stream>>>(fp);
    else
        H3_D128_KERNEL<<<grid, threads, smem, p->stream>>>(fp);
    CUDA_CHECK_LAUNCH();
    prof_range_pop();
}

static void flash3_teardown(attn_problem *p)
{
    free(p->state);
    p->state = NULL;
}

const attn_stage ATTN_STAGE_SYMBOL = {
    /* name */        "07_hopper",
    /* idea */        "FlashAttention-3's machinery by hand: TMA loads completing on mbarriers, "
                      "wgmma from shared memory and registers (sm_90a)",
    /* supports */    flash3_supports,
    /* extra_bytes */ flash3_extra_bytes,
    /* setup */       flash3_setup,
    /* forward */     flash3_forward,
    /* teardown */    flash3_teardown,
    /* parse_flag */  NULL,
    /* flag_help */   NULL,
    /* tolerance */   0.0,
    /* env_help */    NULL,
    /* check_env */   NULL,
};
