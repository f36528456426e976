/* 04_efficient: causal attention in one kernel and two sweeps over K; S never leaves the chip.
 *
 * The idea: S = Q.K^T is made, used and thrown away tile by tile inside the SM, and the softmax
 * needs no rescaling. A block owns BLOCK_M query rows and walks the key tiles 0, 1, ... up to the
 * diagonal twice: sweep 1 finds each row's max m and sum l (the online normalizer), sweep 2
 * turns S into final probabilities P = exp(S*scale - m*scale) / l and accumulates O += P.V,
 * which needs no correction afterwards.
 *   Milakov & Gimelshein 2018, "Online normalizer calculation for softmax".
 *
 * Work split: 4 warps, each owns BLOCK_M/4 query rows (16 at BLOCK_M = 64, i.e. one m16 tile),
 * all the keys of the tile and all head_dim columns of O, so a row's max and sum never leave its
 * warp: the 4 lanes of a quad hold a row, two shuffles reduce it.
 *
 * Per key tile, per warp (the steps named as in README.md):
 *   S = Q.K^T        mma.sync m16n8k16 bf16 -> f32; Q from registers (both sweeps), K by
 *                    ldmatrix.x4
 *   mask             only on tiles that cross the diagonal or the end of the sequence
 *   sweep 1          m_new = max(m, rowmax S), l = l*2^((m - m_new)*c) + sum 2^(S*c - m_new*c);
 *                    at the end lse2 = m*c + log2(l), the row's log-sum-exp of S*c
 *   sweep 2          P = 2^(S*c - lse2), with c = scale*log2(e) folded into one FFMA per element;
 *                    O += P.V, P re-packed in registers as the A operand (the S accumulator layout
 *                    is the A layout), V by ldmatrix.x4.trans
 * Sweep 1 double-buffers K; in sweep 2 one buffer holds K, the other V: cp.async brings the next
 * tile while the current one is computed. Shared tiles are stored with an XOR swizzle (16-byte
 * chunk c of row r at chunk c ^ (r & 7)) so every ldmatrix and every cp.async is free of bank
 * conflicts. Key tiles past the diagonal are never loaded. The grid launches the heaviest query
 * tiles (last rows, most key tiles) first. The tile machinery (loads, swizzle, the two matrix
 * products, mask, epilogue) is common/sm80/attn_tiles.cuh, shared with 05_flash.
 *
 * Tensors: bf16 [batch, heads, seq, head_dim], contiguous. head_dim 64 or 128, any seq >= 1
 * (rows past seq are zero-filled on load and never stored). One launch per forward, no extra
 * device memory.
 *
 * Kernel names: fmha_fwd_bf16_64x64_causal_2pass_d<head_dim>_sm80: fused multi-head attention,
 * forward, bf16 in and out, BLOCK_M query rows x BLOCK_N keys per tile, causal mask, two sweeps
 * over K, the head_dim it is compiled for, and sm80 for the instruction set (mma.sync, ldmatrix,
 * cp.async: sm_80 and newer, the H200 too).
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <math_constants.h>   /* CUDART_L2E(_F) = log2(e) */
#include <stdint.h>
#include <stdio.h>

#include "harness.h"
#include "check.h"
#include "regions.cuh"
#include "tiled_stage.h"
#include "sm80/attn_tiles.cuh"

#define BLOCK_M 64                /* query rows per block: 16 per warp (the 64x64 of the names) */
#define BLOCK_N 64                /* keys per K/V tile */

/* Kernel arguments. Pointers are the bf16 tensors [batch, heads, seq, head_dim]. */
typedef struct {
    const __nv_bfloat16 *q, *k, *v;
    __nv_bfloat16 *o;
    int seq;
    float scale_log2;          /* scale * log2(e): exp(x*scale) = 2^(x*scale_log2) */
    attn_regions_param regions;   /* the regions build's record buffer; empty otherwise */
} fmha_params;

/* ---- the two-sweep softmax (the idea of this stage) ---------------------------------------------- */

/* Sweep 1, one key tile of S for this warp's rows (fragment notation:
 * common/sm80/attn_tiles.cuh): the online normalizer. m_run[mt][h] is the running max of row
 * 16mt + g + 8h in raw Q.K units (the same in the 4 lanes of the quad), l_run[mt][h] this lane's
 * part of the running sum of 2^((S - m)*c); when the max grows, the old sum is scaled by
 * 2^((m_old - m_new)*c). l stays per lane: every lane of the quad uses the same m, so the sum over
 * the quad can wait until the end of the sweep. c = scale * log2(e). */
template <int MT, int NT>
static __device__ __forceinline__ void update_row_stats(float (&m_run)[MT][2], float (&l_run)[MT][2],
                                                        const float (&s)[MT][NT][4], float c)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float m_new = quad_max(row_max(s, mt, h, m_run[mt][h]));
            /* A row that has seen only masked keys keeps m = -inf and l = 0; use 0 so that
             * -inf - -inf never happens. */
            const float m_use = m_new == -INFINITY ? 0.f : m_new;
            const float m_c   = m_use * c;
            float sum = 0.f;
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
                sum += exp2_approx(fmaf(s[mt][nt][2 * h], c, -m_c))
                     + exp2_approx(fmaf(s[mt][nt][2 * h + 1], c, -m_c));
            l_run[mt][h] = l_run[mt][h] * exp2_approx(m_run[mt][h] * c - m_c) + sum;
            m_run[mt][h] = m_new;
        }
}

/* End of sweep 1: sum l over the quad, then lse2 = m*c + log2(l), the row's log-sum-exp of S*c.
 * A row without any visible key (impossible for causal self-attention) gets +inf: P = 0. */
template <int MT>
static __device__ __forceinline__ void finish_row_stats(const float (&m_run)[MT][2],
                                                        const float (&l_run)[MT][2], float (&lse2)[MT][2],
                                                        float c)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float l = quad_sum(l_run[mt][h]);
            lse2[mt][h] = l > 0.f ? m_run[mt][h] * c + log2f(l) : INFINITY;
        }
}

/* Sweep 2, one key tile of S: P = 2^(S*c - lse2) = exp(S*scale - m*scale) / l, the final,
 * normalized probabilities, as bf16 pairs pk (the A operand of P.V), so O += P.V needs no
 * correction afterwards. */
template <int MT, int NT>
static __device__ __forceinline__ void scores_to_probs(uint32_t (&pk)[MT][NT][2],
                                                       const float (&s)[MT][NT][4],
                                                       const float (&lse2)[MT][2], float c)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
                pk[mt][nt][h] = bf16x2_bits(__floats2bfloat162_rn(
                    exp2_approx(fmaf(s[mt][nt][2 * h], c, -lse2[mt][h])),
                    exp2_approx(fmaf(s[mt][nt][2 * h + 1], c, -lse2[mt][h]))));
}

/* ---- the kernel --------------------------------------------------------------------------------- */

/* One block = one query tile of BM rows of one (batch, head); see the file comment.
 * Grid: x = batch*heads, y = query tiles, heaviest (last) tile first. Block: 128 threads.
 * Static shared memory: (BM + 2*BN) rows of D bf16: the Q tile (the O tile at the end) and two
 * buffers of BN rows that hold K, K in sweep 1 (double buffering) and K, V in sweep 2. */
template <int D, int BM, int BN>
static __device__ __forceinline__ void fmha_fwd_2pass_block(const fmha_params &p)
{
    constexpr int R = BM / ATTN_WARPS, MT = R / 16, NT = BN / 8, KD = D / 16, DT = D / 8;
    static_assert(R % 16 == 0 && BN % 16 == 0 && D % 16 == 0, "tile shape");

    __shared__ __align__(1024) __nv_bfloat16 smem[(BM + 2 * BN) * D];
    const uint32_t sQ = smem_addr(smem);                   /* BM rows; the O tile at the end */
    const uint32_t buf0 = sQ + BM * D * 2;                 /* 2 buffers of BN rows: K or V */
    const uint32_t buf1 = buf0 + BN * D * 2;

    const int seq  = p.seq;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int m0 = (int)(gridDim.y - 1 - blockIdx.y) * BM;  /* heaviest query tile first */
    const size_t bh = (size_t)blockIdx.x * seq * D;
    const __nv_bfloat16 *q = p.q + bh, *k = p.k + bh, *v = p.v + bh;
    const causal_tiles ct = causal_tile_bounds<BM, BN, R>(m0, warp, seq);
    const lane_addrs la = ldmatrix_lane_addrs<D, R>(sQ, buf0, buf0);   /* K and V: + buffer offset */
    attn_regions_ctx rg = attn_regions_start(p.regions, warp, lane == 0);

    /* Prologue: Q tile and K tile 0 (one group); Q goes to registers for both sweeps. */
    attn_region_begin(rg, ATTN_REGION_LOAD);
    load_tile_async<D, BM>(sQ, q, m0, seq);
    load_tile_async<D, BN>(buf0, k, 0, seq);
    cp_async_commit();

    float o[MT][DT][4];
    float m_run[MT][2], l_run[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int dt = 0; dt < DT; ++dt)
#pragma unroll
            for (int i = 0; i < 4; ++i) o[mt][dt][i] = 0.f;
#pragma unroll
        for (int h = 0; h < 2; ++h) { m_run[mt][h] = -INFINITY; l_run[mt][h] = 0.f; }
    }

    /* Q kept in registers for both sweeps. */
    uint32_t qf[MT][KD][4];
    cp_async_wait<0>();                      /* this thread's Q and K copies have landed ... */
    __syncthreads();                         /* ... and everybody's */
    load_q_fragments<D, MT>(qf, la.q);
    attn_region_end(rg, ATTN_REGION_LOAD);

    /* Sweep 1: keys 0 -> diagonal, row max and sum of exponentials. K tile n is in buf0 (n even)
     * or buf1 (n odd); the copy of tile n+1 into the other buffer runs while tile n is used. */
    const int row_g = m0 + warp * R + g;            /* the global row of (mt 0, h 0) */
    float s[MT][NT][4];
    for (int n = 0; n < ct.n_end; ++n) {
        if (n + 1 < ct.n_end)
            load_tile_async<D, BN>((n & 1) ? buf0 : buf1, k, (n + 1) * BN, seq);
        cp_async_commit();
        const uint32_t buf = (uint32_t)((n & 1) * BN * D * 2);
        attn_region_begin(rg, ATTN_REGION_S);
        warp_scores<D, MT, NT, true>(s, qf, la.q, la.k + buf);
        attn_region_end(rg, ATTN_REGION_S);
        attn_region_begin(rg, ATTN_REGION_STATS);
        if (n >= ct.w_n_full)
            causal_mask<MT, NT>(s, row_g, n * BN, seq, t);
        update_row_stats<MT, NT>(m_run, l_run, s, p.scale_log2);
        attn_region_end(rg, ATTN_REGION_STATS);
        attn_region_begin(rg, ATTN_REGION_LOAD);
        cp_async_wait<0>();   /* tile n+1 has landed ... */
        __syncthreads();       /* ... for every warp, and no warp still reads tile n */
        attn_region_end(rg, ATTN_REGION_LOAD);
    }
    float lse2[MT][2];
    finish_row_stats<MT>(m_run, l_run, lse2, p.scale_log2);

    /* Sweep 2: diagonal -> key 0. The last K tile of sweep 1 is still in its buffer, so sweep 2
     * starts there without a copy; the other buffer takes V. The V copy runs under Q.K^T, the copy
     * of the next K tile under P.V. */
    const uint32_t sK = ((ct.n_end - 1) & 1) ? buf1 : buf0, sV = ((ct.n_end - 1) & 1) ? buf0 : buf1;
    for (int n = ct.n_end - 1; n >= 0; --n) {
        load_tile_async<D, BN>(sV, v, n * BN, seq);
        cp_async_commit();
        attn_region_begin(rg, ATTN_REGION_S);
        warp_scores<D, MT, NT, true>(s, qf, la.q, la.k + (sK - buf0));
        attn_region_end(rg, ATTN_REGION_S);
        attn_region_begin(rg, ATTN_REGION_SOFTMAX);
        if (n >= ct.w_n_full)
            causal_mask<MT, NT>(s, row_g, n * BN, seq, t);
        uint32_t pk[MT][NT][2];
        scores_to_probs<MT, NT>(pk, s, lse2, p.scale_log2);
        attn_region_end(rg, ATTN_REGION_SOFTMAX);
        attn_region_begin(rg, ATTN_REGION_LOAD);
        cp_async_wait<0>();   /* V tile n has landed; every warp is done with K tile n */
        __syncthreads();
        if (n > 0)
            load_tile_async<D, BN>(sK, k, (n - 1) * BN, seq);
        cp_async_commit();
        attn_region_end(rg, ATTN_REGION_LOAD);
        attn_region_begin(rg, ATTN_REGION_PV);
        warp_pv<D, MT, NT>(o, pk, la.v + (sV - buf0));
        attn_region_end(rg, ATTN_REGION_PV);
        attn_region_begin(rg, ATTN_REGION_LOAD);
        cp_async_wait<0>();   /* K tile n-1 has landed; every warp is done with V tile n */
        __syncthreads();
        attn_region_end(rg, ATTN_REGION_LOAD);
    }

    /* Epilogue: O is final (P was normalized), to bf16, to global memory. */
    attn_region_begin(rg, ATTN_REGION_EPILOGUE);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
            stage_o_row<D, MT>(o, mt, h, 1.f, sQ, warp, lane);
    store_o_rows<D, R>(sQ, p.o + bh, m0, seq, warp, lane);
    attn_region_end(rg, ATTN_REGION_EPILOGUE);
    attn_regions_finish(rg);
}

/* The two kernels, one per head_dim. __launch_bounds__(128 threads, min blocks per SM) caps the
 * registers so that 4 blocks (D = 64: <= 128 registers) or 3 blocks (D = 128: <= 168) fit in an
 * SM's 65536 registers; ptxas -v shows no spills at these caps. */
/* The kernels' names (the regions build adds _regions: common/regions.cuh). */
#define FMHA_D64_KERNEL  ATTN_REGIONS_NAME(fmha_fwd_bf16_64x64_causal_2pass_d64_sm80)
#define FMHA_D128_KERNEL ATTN_REGIONS_NAME(fmha_fwd_bf16_64x64_causal_2pass_d128_sm80)

__global__ void __launch_bounds__(ATTN_THREADS, 4)
FMHA_D64_KERNEL(const fmha_params p)
{
    fmha_fwd_2pass_block<64, BLOCK_M, BLOCK_N>(p);
}

__global__ void __launch_bounds__(ATTN_THREADS, 3)
FMHA_D128_KERNEL(const fmha_params p)
{
    fmha_fwd_2pass_block<128, BLOCK_M, BLOCK_N>(p);
}

/* ---- the stage -------------------------------------------------------------------------------- */

/* head_dim 64 or 128; compute capability 8.0+; query tiles within the grid's y limit;
 * batch*heads within its x limit. */
static int efficient_supports(const attn_shape *s, const cudaDeviceProp *prop, char *why, size_t why_len)
{
    const tiled_launch l = { "04_efficient", 8, 0,
                             "compute capability 8.0 or newer (bf16 mma.sync, ldmatrix, cp.async)",
                             BLOCK_M, 0, 0 };
    return tiled_supports(&l, s, prop, why, why_len);
}

/* Prefer the largest shared-memory carveout (cp.async.cg bypasses L1: shared memory is all this
 * kernel caches), so blocks per SM are limited by registers, not by the L1/shared split. No
 * state. */
static void *efficient_setup(attn_problem *p)
{
    const void *kernel = p->shape.head_dim == 64
                             ? (const void *)FMHA_D64_KERNEL
                             : (const void *)FMHA_D128_KERNEL;
    tiled_kernel_setup(kernel, 0, 1);
    return NULL;
}

/* One launch: grid (batch*heads, query tiles), 128 threads. */
static void efficient_forward(attn_problem *p)
{
    const attn_shape *s = &p->shape;
    fmha_params fp;
    fp.q = (const __nv_bfloat16 *)p->q;
    fp.k = (const __nv_bfloat16 *)p->k;
    fp.v = (const __nv_bfloat16 *)p->v;
    fp.o = (__nv_bfloat16 *)p->o;
    fp.seq = s->seq;
    fp.scale_log2 = (float)((double)p->scale * CUDART_L2E);
    fp.regions = attn_regions_param_of(p);
    const int bm = BLOCK_M;
    const dim3 grid((unsigned)(s->batch * s->heads), (unsigned)((s->seq + bm - 1) / bm));

    prof_range_push("_efficient_attention_forward");   /* as ATen names the op that launches cutlassF */
    if (s->head_dim == 64)
        FMHA_D64_KERNEL<<<grid, ATTN_THREADS, 0, p->stream>>>(fp);
    else
        FMHA_D128_KERNEL<<<grid, ATTN_THREADS, 0, p->stream>>>(fp);
    CUDA_CHECK_LAUNCH();
    prof_range_pop();
}

const attn_stage ATTN_STAGE_SYMBOL = {
    /* name */        "04_efficient",
    /* idea */        "one tiled kernel, 64x64 tiles on bf16 tensor cores, two sweeps over K, "
                      "S never in memory",
    /* supports */    efficient_supports,
    /* extra_bytes */ tiled_no_extra_bytes,
    /* setup */       efficient_setup,
    /* forward */     efficient_forward,
    /* teardown */    NULL,
    /* parse_flag */  NULL,
    /* flag_help */   NULL,
    /* tolerance */   0.0,
    /* env_help */    NULL,
    /* check_env */   NULL,
};
ATTN_REGIONS_REGISTER("warp")
