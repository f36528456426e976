/* efficient.cu: stage 04, one tiled attention kernel on bf16 tensor cores; S never leaves the chip.
 *
 * Idea. A block owns a tile of 64 query rows of one (batch, head). It walks K and V in tiles of 64
 * keys through shared memory. Q·Kᵀ and P·V run on bf16 tensor cores (mma.sync m16n8k16, fp32
 * accumulators, inline PTX). The 64×64 score tile S lives only in registers. The kernel sweeps K
 * twice and never rescales its output accumulator:
 *   sweep 1 (keys 0 → diagonal): S = Q·Kᵀ, then each row's running max m and running sum of
 *            exponentials l, the online normalizer of Milakov & Gimelshein 2018 ("Online
 *            normalizer calculation for softmax", arXiv:1805.02867). At the end of the sweep
 *            lse2 = m·c + log2(l) is each row's log-sum-exp in base 2 (c = scale·log2 e).
 *   sweep 2 (diagonal → key 0): S = Q·Kᵀ again, P = exp2(S·c − lse2) = exp(S·scale − m·scale)/l,
 *            already normalized, so O += P·V needs no correction afterwards.
 * Causal: key tiles wholly above the diagonal are never visited; the diagonal tile is masked
 * element-wise (key > row or key >= seq → −inf). One launch per forward.
 *
 * Kernel names, as the profiler shows them: fmha_fwd_bf16_64x64_causal_2pass_d64_sm80 (and _d128_)
 *   fmha = fused multi-head attention, fwd = forward, bf16 = element type, 64x64 = query rows ×
 *   keys per tile, causal = mask, 2pass = two sweeps over K, d64 = head_dim it is compiled for,
 *   sm80 = the instruction set it needs (mma.sync, ldmatrix, cp.async: sm_80 and newer; the same
 *   source is compiled for sm_90 and runs on the H200).
 *
 * Work split inside a block (4 warps, 128 threads): warp w owns query rows 16w..16w+15 of the tile,
 * for all keys and all head_dim columns, so a row's max and sum are reduced inside the 4 lanes of
 * a quad (two shuffles) and no statistics cross warps.
 *
 * Fragment layouts: PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"; the
 * ldmatrix, cp.async (zero-fill through src-size) and cvt sections of the same document.
 * Notation below: lane l, g = l>>2 (row in the fragment), t = l&3 (column pair); an mma C
 * fragment c0..c3 holds (g,2t) (g,2t+1) (g+8,2t) (g+8,2t+1); an A fragment a0..a3 holds
 * (g, 2t..2t+1) (g+8, 2t..) (g, 2t+8..) (g+8, 2t+8..); a B fragment b0, b1 holds
 * (k = 2t..2t+1, n = g) and (k = 2t+8..2t+9, n = g).
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <limits.h>
#include <math.h>
#include <math_constants.h>   /* CUDART_L2E = log2(e): exp(x) = exp2(x·log2 e) */
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "harness.h"
#include "mma_sm80.cuh"

#define TILE_Q 64                 /* query rows per block (Br) */
#define TILE_K 64                 /* keys per K/V tile (Bc) */
#define WARPS 4                   /* each warp owns 16 query rows */
#define THREADS (WARPS * 32)
/* The causal bound "key tiles 0..q_tile" and the tile loads of Q and K assume square tiles. */
static_assert(TILE_Q == TILE_K, "query and key tiles must have the same number of rows");

/* What the kernel needs; passed by value. Pointers are device bf16 [batch, heads, seq, head_dim]. */
typedef struct {
    const __nv_bfloat16 *q, *k, *v;
    __nv_bfloat16 *o;
    int seq;           /* rows of every (batch, head) matrix */
    int num_q_tiles;   /* ceil(seq / 64) */
    float scale_log2;  /* c = scale · log2(e), scale = 1/sqrt(head_dim) */
} fmha_params;

/* ---- quad reductions (the PTX wrappers are in common/mma_sm80.cuh) ------------------------ */

/* A row of S is spread over the 4 lanes of a quad: reduce across them. */
__device__ __forceinline__ float quad_max(float x)
{
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

__device__ __forceinline__ float quad_sum(float x)
{
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/* ---- shared-memory tiles ---------------------------------------------------------------------
 * A tile is [64 rows][D] bf16, row-major, with its 16-byte chunks XOR-swizzled: logical chunk c of
 * row r is stored at chunk c ^ (r & 7). Any 8 consecutive rows then put a given logical chunk in 8
 * different bank groups, so every ldmatrix and every 16-byte copy below is free of bank conflicts. */

/* Byte offset of element (row, col) inside a swizzled tile. */
template <int D>
__device__ __forceinline__ uint32_t tile_offset(int row, int col)
{
    return (uint32_t)(row * D + ((((col >> 3) ^ (row & 7)) << 3) | (col & 7))) * 2u;
}

/* The ldmatrix loops walk 16-column steps (two chunks) along a row: logical chunk 2k + half.
 * Because 2k + half = 2k ^ half and the swizzle is an XOR too, the physical chunk is
 * 2k ^ (half ^ (row & 7)), and its byte offset (2k ^ x) << 4 = (x << 4) ^ (k << 5). Tiles start
 * on 1 KiB boundaries and rows are 128 or 256 bytes, so the chunk bits of a row's address are
 * zero and the whole address can be XORed: address(row, chunk 2k + half) = base ^ (k << 5) with
 * base = address(row, chunk half). One XOR per ldmatrix, the rest is an immediate offset. */
template <int D>
__device__ __forceinline__ uint32_t fragment_base(uint32_t tile, int row, int half)
{
    return tile + tile_offset<D>(row, half * 8);
}

/* Rows [row0, row0+64) of one [seq][D] matrix (mat = its (batch, head) base) → swizzled tile.
 * 16-byte cp.async per thread; rows ≥ seq are zero-filled (src_bytes 0, source clamped to row 0
 * so the address stays valid). Eight consecutive threads copy one 128-byte stretch of a row. */
template <int D>
__device__ __forceinline__ void load_tile(uint32_t tile, const __nv_bfloat16 *mat, int row0, int seq)
{
    const int chunks_per_row = D / 8;
    const int rows_per_step = THREADS / chunks_per_row;        /* 16 (D = 64) or 8 (D = 128) */
    const int r = (int)threadIdx.x / chunks_per_row, c = (int)threadIdx.x % chunks_per_row;
    const uint32_t dst = tile + tile_offset<D>(r, c * 8);      /* rows r + 8i keep the same swizzle */
#pragma unroll
    for (int i = 0; i < TILE_K / rows_per_step; ++i) {
        const int row = row0 + r + i * rows_per_step;
        const int in_range = row < seq;
        const __nv_bfloat16 *src = mat + (size_t)(in_range ? row : 0) * D + c * 8;
        cp_async_16(dst + i * rows_per_step * D * 2, src, in_range ? 16 : 0);
    }
}

/* ---- the two matrix products ----------------------------------------------------------------- */

/* This warp's Q rows (16 × D) as mma A fragments, kept in registers for both sweeps:
 * qf[kk] covers head_dim columns 16kk..16kk+15. Lanes 0-15 address rows 0-15 at column 16kk,
 * lanes 16-31 the same rows at column 16kk+8 → registers A0..A3 in order. */
template <int D>
__device__ __forceinline__ void load_q_fragments(uint32_t qf[][4], uint32_t sQ, int warp, int lane)
{
    const uint32_t base = fragment_base<D>(sQ, warp * 16 + (lane & 15), lane >> 4);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
        ldmatrix_x4(qf[kk], base ^ (kk << 5));
}

/* S = Q·Kᵀ for this warp: 16 rows × 64 keys, raw (unscaled) fp32.
 * s[j] is the C fragment of keys 8j..8j+7. B(k = d, n = key) = K[key][d] is a row of the K tile,
 * so a plain ldmatrix gives it: one .x4 covers 16 keys (two n8 tiles) × 16 columns of head_dim. */
template <int D>
__device__ __forceinline__ void compute_scores(float s[8][4], const uint32_t qf[][4], uint32_t sK, int lane)
{
    /* Lanes 0-7 and 8-15 address keys 0-7, lanes 16-31 keys 8-15; lanes 8-15 and 24-31 the second
     * 8 columns of the 16. Swizzle: see fragment_base. */
    const uint32_t base = fragment_base<D>(sK, (lane & 7) + (lane >> 4) * 8, (lane >> 3) & 1);
#pragma unroll
    for (int j = 0; j < 8; ++j)
        s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int p = 0; p < 4; ++p) {               /* keys 16p..16p+15 */
            uint32_t b[4];
            ldmatrix_x4(b, (base ^ (kk << 5)) + p * 16 * D * 2);
            mma_bf16_16816(s[2 * p], qf[kk], b[0], b[1]);
            mma_bf16_16816(s[2 * p + 1], qf[kk], b[2], b[3]);
        }
    }
}

/* O += P·V for this warp: P (16 × 64 keys) as A fragments pa[kk] (keys 16kk..16kk+15),
 * o[jd] the C fragment of head_dim columns 8jd..8jd+7. B(k = key, n = d) = V[key][d] runs along a
 * row of the V tile, so ldmatrix .trans: lanes 0-15 address keys 16kk..16kk+15 at column d0,
 * lanes 16-31 the same keys at column d0+8 → B of columns d0..d0+7 in {r0,r1}, d0+8.. in {r2,r3}. */
template <int D>
__device__ __forceinline__ void accumulate_pv(float o[][4], const uint32_t pa[4][4], uint32_t sV, int lane)
{
    const uint32_t base = fragment_base<D>(sV, lane & 15, lane >> 4);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {       /* head_dim columns 16dp..16dp+15 */
            uint32_t b[4];
            ldmatrix_x4_trans(b, (base ^ (dp << 5)) + kk * 16 * D * 2);
            mma_bf16_16816(o[2 * dp], pa[kk], b[0], b[1]);
            mma_bf16_16816(o[2 * dp + 1], pa[kk], b[2], b[3]);
        }
    }
}

/* ---- softmax pieces ------------------------------------------------------------------------- */

/* Causal mask on the diagonal tile, by assignment: S = −inf where key > row or key ≥ seq.
 * row0 = global index of this warp's first row, key0 = global index of the tile's first key. */
__device__ __forceinline__ void mask_scores(float s[8][4], int row0, int key0, int seq, int lane)
{
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int row = row0 + g + 8 * (e >> 1);
            const int key = key0 + 8 * j + 2 * t + (e & 1);
            if (key > row || key >= seq)
                s[j][e] = -INFINITY;
        }
}

/* Sweep 1, one key tile: the online normalizer for this thread's rows g (h = 0) and g+8 (h = 1).
 * m[h] is the running max of raw scores (quad-uniform), l[h] this thread's part of the running
 * sum of exp2((s − m)·c); when the max grows, the old sum is scaled by exp2((m_old − m_new)·c).
 * l stays per thread: every lane of the quad uses the same m, so the sum over the quad can wait
 * until the end of the sweep. */
__device__ __forceinline__ void update_row_stats(const float s[8][4], float m[2], float l[2], float c)
{
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float tile_max = -INFINITY;
#pragma unroll
        for (int j = 0; j < 8; ++j)
            tile_max = fmaxf(tile_max, fmaxf(s[j][2 * h], s[j][2 * h + 1]));
        const float m_new = fmaxf(m[h], quad_max(tile_max));
        /* A row that has seen only −inf so far keeps l = 0; use 0 to avoid (−inf) − (−inf). */
        const float mc = (m_new == -INFINITY) ? 0.f : m_new * c;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < 8; ++j)
            sum += exp2_approx(fmaf(s[j][2 * h], c, -mc)) + exp2_approx(fmaf(s[j][2 * h + 1], c, -mc));
        l[h] = l[h] * exp2_approx(m[h] * c - mc) + sum;
        m[h] = m_new;
    }
}

/* End of sweep 1: sum l over the quad, then lse2 = m·c + log2(l), the row's log-sum-exp of S·c.
 * A row without any visible key (impossible for causal self-attention) gets +inf: P = 0. */
__device__ __forceinline__ void finish_row_stats(const float m[2], const float l[2], float lse2[2], float c)
{
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const float row_sum = quad_sum(l[h]);
        lse2[h] = (row_sum > 0.f) ? m[h] * c + log2f(row_sum) : INFINITY;
    }
}

/* Sweep 2, one key tile: P = exp2(S·c − lse2) (final, normalized probabilities), rounded to bf16
 * and packed as the A fragments of P·V. The C fragments of keys 16kk..+7 and 16kk+8..+15 hold the
 * same rows and column pairs as one A fragment of keys 16kk..16kk+15, so nothing moves. */
__device__ __forceinline__ void scores_to_probs(uint32_t pa[4][4], const float s[8][4], const float lse2[2],
                                                float c)
{
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
        const float *lo = s[2 * kk], *hi = s[2 * kk + 1];
        pa[kk][0] = bf16x2_bits(__floats2bfloat162_rn(exp2_approx(fmaf(lo[0], c, -lse2[0])),
                                                      exp2_approx(fmaf(lo[1], c, -lse2[0]))));
        pa[kk][1] = bf16x2_bits(__floats2bfloat162_rn(exp2_approx(fmaf(lo[2], c, -lse2[1])),
                                                      exp2_approx(fmaf(lo[3], c, -lse2[1]))));
        pa[kk][2] = bf16x2_bits(__floats2bfloat162_rn(exp2_approx(fmaf(hi[0], c, -lse2[0])),
                                                      exp2_approx(fmaf(hi[1], c, -lse2[0]))));
        pa[kk][3] = bf16x2_bits(__floats2bfloat162_rn(exp2_approx(fmaf(hi[2], c, -lse2[1])),
                                                      exp2_approx(fmaf(hi[3], c, -lse2[1]))));
    }
}

/* O (fp32 C fragments) → bf16 → global, through the Q tile's shared memory (free since Q went to
 * registers) so each thread stores whole 16-byte chunks. Each warp touches only its own 16 rows, so
 * __syncwarp is enough. Rows ≥ seq are not stored. */
template <int D>
__device__ __forceinline__ void store_o(const float o[][4], char *sO, __nv_bfloat16 *out, int row0,
                                       int seq, int warp, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    const int r = warp * 16 + g;
#pragma unroll
    for (int jd = 0; jd < D / 8; ++jd) {
        *(uint32_t *)(sO + tile_offset<D>(r, 8 * jd + 2 * t)) =
            bf16x2_bits(__floats2bfloat162_rn(o[jd][0], o[jd][1]));
        *(uint32_t *)(sO + tile_offset<D>(r + 8, 8 * jd + 2 * t)) =
            bf16x2_bits(__floats2bfloat162_rn(o[jd][2], o[jd][3]));
    }
    __syncwarp();
    const int chunks_per_row = D / 8;
#pragma unroll
    for (int i = 0; i < 16 * D / 8 / 32; ++i) {
        const int chunk = i * 32 + lane;
        const int rr = warp * 16 + chunk / chunks_per_row, c = chunk % chunks_per_row;
        if (row0 + rr < seq)
            *(uint4 *)(out + (size_t)(row0 + rr) * D + c * 8) =
                *(const uint4 *)(sO + tile_offset<D>(rr, c * 8));
    }
}

/* ---- the kernel ------------------------------------------------------------------------------ */

/* Causal attention forward, two sweeps over K per 64-row query tile.
 * Grid: x = batch·heads (one (batch, head) matrix each), y = query tile, taken in reverse so the
 * tiles with the most key tiles start first (load balance: the light tiles fill the tail).
 * Block: 128 threads = 4 warps × 16 query rows. Shared memory (static): three [64][D] bf16 tiles,
 * 24 KiB (D = 64) or 48 KiB (D = 128): the Q tile (later the O staging area) and two buffers that
 * hold K, K in sweep 1 (double buffering) and K, V in sweep 2.
 * Requires sm_80+ (bf16 mma.sync, ldmatrix, cp.async). D = head_dim = 64 or 128. */
template <int D>
__device__ __forceinline__ void fmha_fwd_2pass_block(const fmha_params &p)
{
    __shared__ __align__(1024) __nv_bfloat16 smem[3][TILE_K * D];
    const uint32_t sQ = smem_addr(smem[0]);
    const uint32_t buf0 = sQ + TILE_K * D * 2, buf1 = buf0 + TILE_K * D * 2;   /* K/V buffers */

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int q_tile = p.num_q_tiles - 1 - (int)blockIdx.y;
    const int q0 = q_tile * TILE_Q;                 /* first query row of the block */
    const int warp_row0 = q0 + warp * 16;           /* first query row of this warp */
    const int n_end = q_tile + 1;                   /* causal: key tiles 0..q_tile (TILE_Q == TILE_K) */
    const size_t mat = (size_t)blockIdx.x * p.seq * D;
    const __nv_bfloat16 *Q = p.q + mat, *K = p.k + mat, *V = p.v + mat;
    const float c = p.scale_log2;

    /* Prologue: Q tile and K tile 0; Q goes to registers for both sweeps. */
    load_tile<D>(sQ, Q, q0, p.seq);
    load_tile<D>(buf0, K, 0, p.seq);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    uint32_t qf[D / 16][4];
    load_q_fragments<D>(qf, sQ, warp, lane);

    /* Sweep 1: keys 0 → diagonal, row max and sum of exponentials. K tile n is in buf0 (n even)
     * or buf1 (n odd); the copy of tile n+1 into the other buffer runs while tile n is used. */
    float s[8][4];
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
    for (int n = 0; n < n_end; ++n) {
        if (n + 1 < n_end)
            load_tile<D>((n & 1) ? buf0 : buf1, K, (n + 1) * TILE_K, p.seq);
        cp_async_commit();
        compute_scores<D>(s, qf, (n & 1) ? buf1 : buf0, lane);
        if (n == q_tile)
            mask_scores(s, warp_row0, n * TILE_K, p.seq, lane);
        update_row_stats(s, m, l, c);
        cp_async_wait<0>();   /* tile n+1 has landed ... */
        __syncthreads();       /* ... for every warp, and no warp still reads tile n */
    }
    float lse2[2];
    finish_row_stats(m, l, lse2, c);

    /* Sweep 2: diagonal → key 0. The last K tile of sweep 1 is still in its buffer, so sweep 2
     * starts there without a copy; the other buffer takes V. The V copy runs under Q·Kᵀ, the copy
     * of the next K tile under P·V. */
    const uint32_t sK = ((n_end - 1) & 1) ? buf1 : buf0, sV = ((n_end - 1) & 1) ? buf0 : buf1;
    float o[D / 8][4];
#pragma unroll
    for (int jd = 0; jd < D / 8; ++jd)
        o[jd][0] = o[jd][1] = o[jd][2] = o[jd][3] = 0.f;
    for (int n = n_end - 1; n >= 0; --n) {
        load_tile<D>(sV, V, n * TILE_K, p.seq);
        cp_async_commit();
        compute_scores<D>(s, qf, sK, lane);
        if (n == q_tile)
            mask_scores(s, warp_row0, n * TILE_K, p.seq, lane);
        uint32_t pa[4][4];
        scores_to_probs(pa, s, lse2, c);
        cp_async_wait<0>();   /* V tile n has landed; every warp is done with K tile n */
        __syncthreads();
        if (n > 0)
            load_tile<D>(sK, K, (n - 1) * TILE_K, p.seq);
        cp_async_commit();
        accumulate_pv<D>(o, pa, sV, lane);
        cp_async_wait<0>();   /* K tile n-1 has landed; every warp is done with V tile n */
        __syncthreads();
    }

    store_o<D>(o, (char *)smem[0], p.o + mat, q0, p.seq, warp, lane);
}

/* The two kernels, one per head_dim. __launch_bounds__(128 threads, min blocks per SM) caps the
 * registers so that 4 blocks (D = 64: <= 128 registers) or 3 blocks (D = 128: <= 168) fit in an
 * SM's 65536 registers; ptxas -v shows no spills at these caps. */
__global__ void __launch_bounds__(THREADS, 4) fmha_fwd_bf16_64x64_causal_2pass_d64_sm80(const fmha_params p)
{
    fmha_fwd_2pass_block<64>(p);
}

__global__ void __launch_bounds__(THREADS, 3) fmha_fwd_bf16_64x64_causal_2pass_d128_sm80(const fmha_params p)
{
    fmha_fwd_2pass_block<128>(p);
}

/* ---- host side: the stage --------------------------------------------------------------------- */

static int efficient_supports(const attn_shape *s, const cudaDeviceProp *prop, char *why, size_t why_len)
{
    if (s->head_dim != 64 && s->head_dim != 128) {
        snprintf(why, why_len, "head_dim %d is not supported by 04_efficient (supported: 64, 128)",
                 s->head_dim);
        return 1;
    }
    if (!prop) return 0; /* the device checks follow */
    if (prop->major < 8) {
        snprintf(why, why_len, "04_efficient needs compute capability 8.0 or newer (bf16 mma.sync, "
                 "ldmatrix, cp.async); this GPU is %d.%d", prop->major, prop->minor);
        return 1;
    }
    const long long q_tiles = (s->seq + TILE_Q - 1) / TILE_Q;
    if (q_tiles > 65535) {
        snprintf(why, why_len, "seq %d needs %lld query tiles; 04_efficient's grid allows 65535 "
                 "(seq <= %d)", s->seq, q_tiles, 65535 * TILE_Q);
        return 1;
    }
    if ((long long)s->batch * s->heads > INT_MAX) {
        snprintf(why, why_len, "batch*heads = %lld exceeds the grid limit %d",
                 (long long)s->batch * s->heads, INT_MAX);
        return 1;
    }
    return 0;
}

/* S never exists in device memory: nothing beyond Q, K, V, O. */
static size_t efficient_extra_bytes(const attn_shape *s)
{
    (void)s;
    return 0;
}

/* Shared memory is all this kernel caches (cp.async.cg bypasses L1): ask for the largest
 * shared-memory carveout so that as many blocks fit per SM as registers allow. */
static void *efficient_setup(attn_problem *p)
{
    (void)p;
    CUDA_CHECK(cudaFuncSetAttribute(fmha_fwd_bf16_64x64_causal_2pass_d64_sm80,
                                    cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutMaxShared));
    CUDA_CHECK(cudaFuncSetAttribute(fmha_fwd_bf16_64x64_causal_2pass_d128_sm80,
                                    cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutMaxShared));
    return NULL;
}

/* One forward = one kernel launch on p->stream. */
static void efficient_forward(attn_problem *p)
{
    const attn_shape *s = &p->shape;
    fmha_params k;
    k.q = (const __nv_bfloat16 *)p->q;
    k.k = (const __nv_bfloat16 *)p->k;
    k.v = (const __nv_bfloat16 *)p->v;
    k.o = (__nv_bfloat16 *)p->o;
    k.seq = s->seq;
    k.num_q_tiles = (s->seq + TILE_Q - 1) / TILE_Q;
    k.scale_log2 = (float)((double)p->scale * CUDART_L2E);
    const dim3 grid((unsigned)(s->batch * s->heads), (unsigned)k.num_q_tiles);

    prof_range_push("_efficient_attention_forward");   /* as ATen names the op that launches cutlassF */
    if (s->head_dim == 64)
        fmha_fwd_bf16_64x64_causal_2pass_d64_sm80<<<grid, THREADS, 0, p->stream>>>(k);
    else
        fmha_fwd_bf16_64x64_causal_2pass_d128_sm80<<<grid, THREADS, 0, p->stream>>>(k);
    CUDA_CHECK_LAUNCH();
    prof_range_pop();
}

extern "C" const attn_stage ATTN_STAGE_SYMBOL = {
    "04_efficient",                                                     /* name */
    "one tiled kernel, 64x64 tiles on bf16 tensor cores, two sweeps over K, S never in memory",
    efficient_supports,                                                 /* supports */
    efficient_extra_bytes,                                              /* extra_bytes */
    efficient_setup,                                                    /* setup */
    efficient_forward,                                                  /* forward */
    NULL,                                                               /* teardown */
    NULL,                                                               /* parse_flag */
    NULL,                                                               /* flag_help */
    0.0,                                                                /* tolerance: 1e-2 */
};
