/* 05_flash: causal attention in one kernel and one sweep over K and V (FlashAttention-2).
 *
 * The idea: the online softmax folded into the output. A block owns BLOCK_M query rows and walks
 * the key tiles 0, 1, ... up to the diagonal once. After each key tile it knows a new running
 * maximum m of every row; instead of sweeping K a second time (04_efficient), it rescales what it
 * has accumulated so far, O and the row sum l, by alpha = exp(m_old - m_new), and adds the new
 * tile's P.V. O is divided by l once, at the end.
 *   Milakov & Gimelshein 2018, "Online normalizer calculation for softmax";
 *   Dao et al. 2022, "FlashAttention"; Dao 2023, "FlashAttention-2" (the work split below).
 *
 * Work split: 4 warps, each owns BLOCK_M/4 query rows (32 at BLOCK_M = 128, i.e. two m16 tiles),
 * all the keys of the tile and all head_dim columns of O, so a row's max and sum never leave its
 * warp: the 4 lanes of a quad hold a row, two shuffles reduce it.
 *
 * Per key tile, per warp (flash_key_tile below, the steps named as in README.md):
 *   S = Q.K^T        mma.sync m16n8k16 bf16 -> f32; Q from registers (d64) or by ldmatrix.x4
 *                    from shared memory (d128), K by ldmatrix.x4
 *   mask             only on tiles that cross the diagonal or the end of the sequence
 *   online softmax   m_new, alpha = 2^((m_old - m_new)*c), P = 2^(S*c - m_new*c), l = alpha*l + sum P,
 *                    O *= alpha, with c = scale*log2(e) folded into one FFMA per element;
 *                    O += P.V, P re-packed in registers as the A operand (the S accumulator layout
 *                    is the A layout), V by ldmatrix.x4.trans
 * K and V are double-buffered, two shared buffers each: cp.async brings the next
 * tile while the current one is computed. Shared tiles are stored with an XOR swizzle (16-byte
 * chunk c of row r at chunk c ^ (r & 7)) so every ldmatrix and every cp.async is free of bank
 * conflicts. Key tiles past the diagonal are never loaded; warps skip the key tiles that lie
 * wholly past their own last row. The grid launches the heaviest query
 * tiles (last rows, most key tiles) first. The tile machinery (loads, swizzle, the two matrix
 * products, mask, epilogue) is common/sm80/attn_tiles.cuh, shared with 04_efficient.
 *
 * Tensors: bf16 [batch, heads, seq, head_dim], contiguous. head_dim 64 or 128, any seq >= 1
 * (rows past seq are zero-filled on load and never stored). One launch per forward, no extra
 * device memory.
 *
 * Kernel names: flash_fwd_bf16_causal_<BLOCK_M>x<BLOCK_N>_d<head_dim>_sm80: FlashAttention,
 * forward, bf16 in and out, causal mask, BLOCK_M query rows x BLOCK_N keys per tile, the
 * head_dim it is compiled for, and sm80 for the instruction set (mma.sync, ldmatrix,
 * cp.async: sm_80 and newer, the H200 too).
 *
 * Tile shapes (compile-time knobs; the defaults are what the chapter measures), per head_dim:
 *   FLASH_D64_BLOCK_M, FLASH_D64_BLOCK_N, FLASH_D64_Q_IN_REGS, FLASH_D64_MIN_BLOCKS and the same
 *   for D128 but Q_IN_REGS (Q stays in shared memory at d128); e.g.
 *   make 05_flash NVCC="/usr/local/cuda/bin/nvcc -DFLASH_D64_BLOCK_N=128 -DFLASH_D64_Q_IN_REGS=0".
 *   The Makefile's flags stamp includes $(NVCC), so a changed -D recompiles by itself.
 *   04_efficient's tile shape (64x64, 16 rows per warp) isolates the one sweep:
 *   -DFLASH_D64_BLOCK_M=64 -DFLASH_D64_MIN_BLOCKS=3 -DFLASH_D128_BLOCK_M=64 -DFLASH_D128_BLOCK_N=64
 *   -DFLASH_D128_MIN_BLOCKS=3 (d64 at 04's 4 blocks per SM would cap it at 128 registers, which
 *   spills on sm_90; d128 keeps Q in shared memory).
 *   FLASH_POISON_SMEM fills shared memory with bf16 NaN first, so a missing zero-fill shows.
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

#ifndef FLASH_D64_BLOCK_M
#define FLASH_D64_BLOCK_M 128
#endif
#ifndef FLASH_D64_BLOCK_N
#define FLASH_D64_BLOCK_N 64
#endif
#ifndef FLASH_D64_Q_IN_REGS
#define FLASH_D64_Q_IN_REGS 1
#endif
#ifndef FLASH_D64_MIN_BLOCKS
#define FLASH_D64_MIN_BLOCKS 2
#endif
#ifndef FLASH_D128_BLOCK_M
#define FLASH_D128_BLOCK_M 128
#endif
#ifndef FLASH_D128_BLOCK_N
#define FLASH_D128_BLOCK_N 48
#endif
/* head_dim 128 keeps Q in shared memory: Q in registers there spills to local memory, and the CI
 * build refuses any spill (-Xptxas -warn-spills -Werror), so that choice is no knob. */
#ifdef FLASH_D128_Q_IN_REGS
#error "FLASH_D128_Q_IN_REGS was removed: Q in registers at head_dim 128 spills (see 05_flash/README.md)"
#endif
#ifndef FLASH_D128_MIN_BLOCKS
#define FLASH_D128_MIN_BLOCKS 2
#endif


/* Kernel arguments. Pointers are the bf16 tensors [batch, heads, seq, head_dim]. */
typedef struct {
    const __nv_bfloat16 *q, *k, *v;
    __nv_bfloat16 *o;
    int seq;
    float scale_log2;          /* scale * log2(e): exp(x*scale) = 2^(x*scale_log2) */
    attn_regions_param regions;   /* the regions build's record buffer; empty otherwise */
} flash_params;

/* Shared-memory bytes of one block: Q tile (reused for the O tile at the end) + 2 K + 2 V tiles. */
#define FLASH_SMEM_BYTES(D, BM, BN) ((size_t)((BM) + 4 * (BN)) * (D) * 2)

/* ---- the online softmax (the idea of this stage) ------------------------------------------------ */

/* The online softmax, one key tile of S for this warp's rows (fragment notation:
 * common/sm80/attn_tiles.cuh). m_run[mt][h] is the running max of row 16mt + g + 8h in raw Q.K
 * units (the same in the 4 lanes of the quad), l_run[mt][h] this lane's part of the row sum
 * (quad-reduced at the end). m_new = max(m_old, rowmax S); P = 2^(S*c - m_new*c) as bf16 pairs
 * pk (S's floats are dead before P.V starts); alpha = 2^((m_old - m_new)*c) rescales what was
 * accumulated on the old max: l = alpha*l + rowsum P and O *= alpha, so that O += P.V then adds
 * the new tile on the new scale. c = scale * log2(e). */
template <int MT, int NT, int DT>
static __device__ __forceinline__ void online_softmax(float (&o)[MT][DT][4], float (&m_run)[MT][2],
                                                      float (&l_run)[MT][2], const float (&s)[MT][NT][4],
                                                      uint32_t (&pk)[MT][NT][2], float c)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float m_new = quad_max(row_max(s, mt, h, m_run[mt][h]));
            /* A row that has seen only masked keys keeps m = -inf; use 0 so that -inf - -inf
             * never happens (alpha and P are then exactly 0). */
            const float m_use = m_new == -INFINITY ? 0.f : m_new;
            const float alpha = exp2_approx((m_run[mt][h] - m_use) * c);
            const float m_c   = m_use * c;
            m_run[mt][h] = m_new;
            float sum = 0.f;
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
                const float p0 = exp2_approx(fmaf(s[mt][nt][2 * h], c, -m_c));
                const float p1 = exp2_approx(fmaf(s[mt][nt][2 * h + 1], c, -m_c));
                sum += p0 + p1;
                pk[mt][nt][h] = bf16x2_bits(__floats2bfloat162_rn(p0, p1));
            }
            l_run[mt][h] = fmaf(l_run[mt][h], alpha, sum);
#pragma unroll
            for (int dt = 0; dt < DT; ++dt) {
                o[mt][dt][2 * h]     *= alpha;
                o[mt][dt][2 * h + 1] *= alpha;
            }
        }
}

/* One key tile for one warp: S = Q.K^T, the mask (if mask: the tile crosses this warp's
 * diagonal or the end of the sequence; warp-uniform), the online softmax, O += P.V. q_lane,
 * k_lane, v_lane are this lane's ldmatrix addresses (k_lane, v_lane in this tile's buffer);
 * row_g = the global row of (mt 0, h 0); key0 = the tile's first key. rg: the warp's region
 * markers (common/regions.cuh; nothing outside the regions build). */
template <int D, int BM, int BN, bool Q_IN_REGS>
static __device__ __forceinline__ void flash_key_tile(
    float (&o)[BM / ATTN_WARPS / 16][D / 8][4], float (&m_run)[BM / ATTN_WARPS / 16][2],
    float (&l_run)[BM / ATTN_WARPS / 16][2],
    const uint32_t (&qf)[Q_IN_REGS ? BM / ATTN_WARPS / 16 : 1][Q_IN_REGS ? D / 16 : 1][4],
    uint32_t q_lane, uint32_t k_lane, uint32_t v_lane, bool mask, int row_g, int key0, int seq, int t,
    float c, attn_regions_ctx &rg)
{
    constexpr int MT = BM / ATTN_WARPS / 16, NT = BN / 8, DT = D / 8;
    float s[MT][NT][4];
    attn_region_begin(rg, ATTN_REGION_S);
    warp_scores<D, MT, NT, Q_IN_REGS>(s, qf, q_lane, k_lane);
    attn_region_end(rg, ATTN_REGION_S);
    attn_region_begin(rg, ATTN_REGION_SOFTMAX);
    if (mask)
        causal_mask<MT, NT>(s, row_g, key0, seq, t);
    uint32_t pk[MT][NT][2];
    online_softmax<MT, NT, DT>(o, m_run, l_run, s, pk, c);
    attn_region_end(rg, ATTN_REGION_SOFTMAX);
    attn_region_begin(rg, ATTN_REGION_PV);
    warp_pv<D, MT, NT>(o, pk, v_lane);
    attn_region_end(rg, ATTN_REGION_PV);
}

/* ---- the kernel --------------------------------------------------------------------------------- */

/* Top of key-tile iteration n, for all 128 threads of the block: tile n has landed (it is the
 * only copy group in flight) and every warp is done with tile n-1, whose buffers the copies of
 * tile n+1 (if any) now overwrite. Called by every thread, once per key tile of the block:
 * one __syncthreads, one commit group (possibly empty). */
template <int D, int BN>
static __device__ __forceinline__ void key_tile_arrive(int n, int n_end, uint32_t sK, uint32_t sV,
                                                       const __nv_bfloat16 *k,
                                                       const __nv_bfloat16 *v, int seq)
{
    cp_async_wait<0>();
    __syncthreads();
    if (n + 1 < n_end) {
        const uint32_t next = (uint32_t)(((n + 1) & 1) * BN * D * 2);
        load_tile_async<D, BN>(sK + next, k, (n + 1) * BN, seq);
        load_tile_async<D, BN>(sV + next, v, (n + 1) * BN, seq);
    }
    cp_async_commit();                       /* possibly empty: keeps the group count simple */
}

/* One block = one query tile of BM rows of one (batch, head); see the file comment.
 * Grid: x = batch*heads, y = query tiles, heaviest (last) tile first. Block: 128 threads.
 * Dynamic shared memory: FLASH_SMEM_BYTES(D, BM, BN). */
template <int D, int BM, int BN, bool Q_IN_REGS>
static __device__ __forceinline__ void flash_fwd_tile(const flash_params &p)
{
    constexpr int R = BM / ATTN_WARPS, MT = R / 16, KD = D / 16, DT = D / 8;
    static_assert(R % 16 == 0 && BN % 16 == 0 && D % 16 == 0, "tile shape");

    extern __shared__ __align__(1024) uint4 smem[];
    const uint32_t sQ = smem_addr(smem);                   /* BM rows; the O tile at the end */
    const uint32_t sK = sQ + BM * D * 2;                   /* 2 buffers of BN rows */
    const uint32_t sV = sK + 2 * BN * D * 2;               /* 2 buffers of BN rows */

#ifdef FLASH_POISON_SMEM
    for (int i = threadIdx.x; i < (int)(FLASH_SMEM_BYTES(D, BM, BN) / 4); i += ATTN_THREADS)
        st_shared_b32(sQ + 4 * i, 0xFFFFFFFFu);
    __syncthreads();
#endif

    const int seq  = p.seq;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int m0 = (int)(gridDim.y - 1 - blockIdx.y) * BM;  /* heaviest query tile first */
    const size_t bh = (size_t)blockIdx.x * seq * D;
    const __nv_bfloat16 *q = p.q + bh, *k = p.k + bh, *v = p.v + bh;
    const causal_tiles ct = causal_tile_bounds<BM, BN, R>(m0, warp, seq);
    const lane_addrs la = ldmatrix_lane_addrs<D, R>(sQ, sK, sV);
    if (sQ & 255u) __trap();                 /* dynamic shared memory not 256-byte aligned */
    attn_regions_ctx rg = attn_regions_start(p.regions, warp, lane == 0);

    /* Prologue: Q tile (group 1), K and V tile 0 (group 2). */
    attn_region_begin(rg, ATTN_REGION_LOAD);
    load_tile_async<D, BM>(sQ, q, m0, seq);
    cp_async_commit();
    load_tile_async<D, BN>(sK, k, 0, seq);
    load_tile_async<D, BN>(sV, v, 0, seq);
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

    /* Q kept in registers for the whole sweep (Q_IN_REGS), else re-read from the Q tile. */
    uint32_t qf[Q_IN_REGS ? MT : 1][Q_IN_REGS ? KD : 1][4];
    if constexpr (Q_IN_REGS) {
        cp_async_wait<1>();                  /* this thread's Q copies have landed ... */
        __syncthreads();                     /* ... and everybody's */
        load_q_fragments<D, MT>(qf, la.q);
    } else {
        qf[0][0][0] = qf[0][0][1] = qf[0][0][2] = qf[0][0][3] = 0u;   /* unused */
    }
    attn_region_end(rg, ATTN_REGION_LOAD);

    /* The sweep: keys 0 -> diagonal, once. All warps run the same loop, so all meet at the same
     * barrier instruction (bar.sync is .aligned: every thread of the block must execute the very
     * same one); a warp computes only the tiles up to its own last row and just helps load the
     * rest. */
    const int row_g = m0 + warp * R + g;            /* the global row of (mt 0, h 0) */
    for (int n = 0; n < ct.n_end; ++n) {
        attn_region_begin(rg, ATTN_REGION_LOAD);
        key_tile_arrive<D, BN>(n, ct.n_end, sK, sV, k, v, seq);
        attn_region_end(rg, ATTN_REGION_LOAD);
        if (n < ct.w_n_end) {                /* warp-uniform */
            const uint32_t buf = (uint32_t)((n & 1) * BN * D * 2);
            flash_key_tile<D, BM, BN, Q_IN_REGS>(o, m_run, l_run, qf, la.q, la.k + buf, la.v + buf,
                                                 n >= ct.w_n_full, row_g, n * BN, seq, t, p.scale_log2,
                                                 rg);
        }
    }

    /* Epilogue: O /= l (a row that saw no key keeps O = 0), to bf16, to global memory. */
    attn_region_begin(rg, ATTN_REGION_EPILOGUE);
    __syncwarp();                            /* every lane is done with this warp's Q rows */
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float l = quad_sum(l_run[mt][h]);
            stage_o_row<D, MT>(o, mt, h, l > 0.f ? 1.f / l : 1.f, sQ, warp, lane);
        }
    store_o_rows<D, R>(sQ, p.o + bh, m0, seq, warp, lane);
    attn_region_end(rg, ATTN_REGION_EPILOGUE);
    attn_regions_finish(rg);
}

/* The two kernels, one per head_dim, named after their tile shape (see the file comment). */
#define FLASH_KERNEL_NAME(BM, BN, D)  FLASH_KERNEL_NAME_(BM, BN, D)
#define FLASH_KERNEL_NAME_(BM, BN, D) ATTN_REGIONS_NAME(flash_fwd_bf16_causal_##BM##x##BN##_d##D##_sm80)
#define FLASH_D64_KERNEL  FLASH_KERNEL_NAME(FLASH_D64_BLOCK_M, FLASH_D64_BLOCK_N, 64)
#define FLASH_D128_KERNEL FLASH_KERNEL_NAME(FLASH_D128_BLOCK_M, FLASH_D128_BLOCK_N, 128)

__global__ void __launch_bounds__(ATTN_THREADS, FLASH_D64_MIN_BLOCKS)
FLASH_D64_KERNEL(const flash_params p)
{
    flash_fwd_tile<64, FLASH_D64_BLOCK_M, FLASH_D64_BLOCK_N, (FLASH_D64_Q_IN_REGS != 0)>(p);
}

__global__ void __launch_bounds__(ATTN_THREADS, FLASH_D128_MIN_BLOCKS)
FLASH_D128_KERNEL(const flash_params p)
{
    flash_fwd_tile<128, FLASH_D128_BLOCK_M, FLASH_D128_BLOCK_N, false>(p);
}

/* ---- the stage -------------------------------------------------------------------------------- */

static int block_m_for(int head_dim)
{
    return head_dim == 64 ? FLASH_D64_BLOCK_M : FLASH_D128_BLOCK_M;
}

static size_t smem_for(int head_dim)
{
    return head_dim == 64 ? FLASH_SMEM_BYTES(64, FLASH_D64_BLOCK_M, FLASH_D64_BLOCK_N)
                          : FLASH_SMEM_BYTES(128, FLASH_D128_BLOCK_M, FLASH_D128_BLOCK_N);
}

/* head_dim 64 or 128; compute capability 8.0+; the block's shared memory within the opt-in
 * limit; query tiles within the grid's y limit; batch*heads within its x limit. */
static int flash_supports(const attn_shape *s, const cudaDeviceProp *prop, char *why, size_t why_len)
{
    const tiled_launch l = { "05_flash", 8, 0,
                             "compute capability 8.0 or newer (bf16 mma.sync, ldmatrix, cp.async)",
                             block_m_for(s->head_dim), 0, smem_for(s->head_dim) };
    return tiled_supports(&l, s, prop, why, why_len);
}

/* Opt the kernel into its dynamic shared memory (80 KiB at head_dim 128 is over the default
 * 48 KiB) and prefer the largest shared-memory carveout, so blocks per SM are limited by
 * registers, not by the L1/shared split. No state. */
static void *flash_setup(attn_problem *p)
{
    const void *kernel = p->shape.head_dim == 64 ? (const void *)FLASH_D64_KERNEL
                                                 : (const void *)FLASH_D128_KERNEL;
    tiled_kernel_setup(kernel, smem_for(p->shape.head_dim), 1);
    return NULL;
}

/* One launch: grid (batch*heads, query tiles), 128 threads. */
static void flash_forward(attn_problem *p)
{
    const attn_shape *s = &p->shape;
    flash_params fp;
    fp.q = (const __nv_bfloat16 *)p->q;
    fp.k = (const __nv_bfloat16 *)p->k;
    fp.v = (const __nv_bfloat16 *)p->v;
    fp.o = (__nv_bfloat16 *)p->o;
    fp.seq = s->seq;
    fp.scale_log2 = p->scale * CUDART_L2E_F;
    fp.regions = attn_regions_param_of(p);
    const int bm = block_m_for(s->head_dim);
    const dim3 grid((unsigned)(s->batch * s->heads), (unsigned)((s->seq + bm - 1) / bm));
    const size_t smem = smem_for(s->head_dim);

    prof_range_push("_flash_attention_forward");   /* as ATen names the op that launches FA2 */
    if (s->head_dim == 64)
        FLASH_D64_KERNEL<<<grid, ATTN_THREADS, smem, p->stream>>>(fp);
    else
        FLASH_D128_KERNEL<<<grid, ATTN_THREADS, smem, p->stream>>>(fp);
    CUDA_CHECK_LAUNCH();
    prof_range_pop();
}

const attn_stage ATTN_STAGE_SYMBOL = {
    /* name */        "05_flash",
    /* idea */        "one kernel, one sweep over K and V: the online softmax rescales the output "
                      "accumulator (FlashAttention-2 work split, mma.sync, cp.async)",
    /* supports */    flash_supports,
    /* extra_bytes */ tiled_no_extra_bytes,
    /* setup */       flash_setup,
    /* forward */     flash_forward,
    /* teardown */    NULL,
    /* parse_flag */  NULL,
    /* flag_help */   NULL,
    /* tolerance */   0.0,
    /* env_help */    NULL,
    /* check_env */   NULL,
};
ATTN_REGIONS_REGISTER("warp")
