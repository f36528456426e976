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
 * This is rung 1 of the chapter's ladder (README.md, docs/perf-notes.md): no warp specialisation
 * yet. A block of 256 threads = 2 warpgroups owns one tile of 128 query rows (64 per warpgroup)
 * of one (batch, head) and walks the key tiles 0 .. diagonal of 128 keys each. Thread 0 doubles
 * as the loader: it issues Q and the first two K/V tiles, and after each key tile n, once both
 * warpgroups have released stage n % 2, the copies of tile n + 2 into it. Per key tile and
 * warpgroup:
 *   wait K[n] (full barrier)  ->  S = Q.K^T: head_dim/16 wgmma m64n128k16, A and B from shared
 *   mask (only on the tile that crosses the diagonal or the end of the sequence)
 *   online softmax on S in registers (4-lane quad reductions), P packed to bf16 pairs, O *= alpha
 *   wait V[n] (full barrier)  ->  O += P.V: 8 wgmma m64n<head_dim>k16, A = P from registers
 *   release stage n % 2 (empty barrier, one arrival per warp)
 * Key tiles past the diagonal are never loaded. Rows and keys past seq: TMA fills the parts of a
 * box outside the tensor with zeros, the mask hides keys >= seq, and rows >= seq are not stored.
 *
 * Shared memory (dynamic, rounded up to a 1024-byte boundary; each tile as TMA writes it with
 * 128-byte swizzle: [head_dim/64 panels][rows][64 bf16], 16-byte chunk c of row r at c ^ (r % 8)):
 *   Q 128 x head_dim (the O tile at the end), K 2 x 128 x head_dim, V 2 x 128 x head_dim,
 *   7 mbarriers: Q full, K full x 2, V full x 2, K/V empty x 2.
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "check.h"
#include "mma_sm80.cuh"        /* smem_addr, pack_bf16x2, exp2_approx, st_shared_b32, ld_shared_v4 */
#include "sm90/mbarrier.cuh"
#include "sm90/tma.cuh"
#include "sm90/wgmma.cuh"

#define H3_BLOCK_M     128                    /* query rows per block */
#define H3_BLOCK_N     128                    /* keys per key tile */
#define H3_WARPGROUPS  2                      /* 64 query rows each */
#define H3_THREADS     (128 * H3_WARPGROUPS)
#define H3_STAGES      2                      /* K/V tiles in flight */
#define LOG2E          1.4426950408889634f

/* Kernel arguments. The tensor maps describe Q, K, V as 4-D tensors {64, seq, head_dim/64,
 * batch*heads} (innermost first; see encode_qkv_map) with a box of {64, 128, head_dim/64, 1}:
 * one box is one tile. They live in the parameter space (__grid_constant__), where TMA reads them. */
typedef struct {
    CUtensorMap q_map, k_map, v_map;
    __nv_bfloat16 *o;          /* bf16 [batch, heads, seq, head_dim] */
    int seq;
    float scale_log2;          /* scale * log2(e): exp(x*scale) = 2^(x*scale_log2) */
} flash3_params;

/* Bytes of one tile of ROWS rows, and of the block's dynamic shared memory. */
#define H3_TILE_BYTES(D, ROWS) ((ROWS) * (D) * 2)
#define H3_BARRIERS            (1 + 3 * H3_STAGES)
#define H3_SMEM_BYTES(D) \
    ((size_t)1024 + H3_TILE_BYTES(D, H3_BLOCK_M) + 2 * H3_STAGES * H3_TILE_BYTES(D, H3_BLOCK_N) + 8 * H3_BARRIERS)

/* PTX "bar, barrier" (bar.sync with a thread count): a barrier among `count` threads (a multiple
 * of 32) on hardware barrier `id` (1..15; 0 is __syncthreads'). */
static __device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t count)
{
    asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(count) : "memory");
}

/* Loader (one thread): key tile n of K and V into stage s, each completing on its full barrier. */
template <int D>
static __device__ __forceinline__ void load_kv_tile(const flash3_params &p, uint32_t sK,
                                                    uint32_t sV, uint32_t k_full, uint32_t v_full,
                                                    int n, int bh)
{
    constexpr uint32_t BYTES = H3_TILE_BYTES(D, H3_BLOCK_N);
    mbar_arrive_expect_tx(k_full, BYTES);     /* the full box, even where it is past seq */
    tma_load_4d(sK, &p.k_map, k_full, 0, n * H3_BLOCK_N, 0, bh);
    mbar_arrive_expect_tx(v_full, BYTES);
    tma_load_4d(sV, &p.v_map, v_full, 0, n * H3_BLOCK_N, 0, bh);
}

/* One block = one query tile of 128 rows of one (batch, head); see the file comment.
 * Grid: x = batch*heads, y = query tiles, heaviest (last) tile first. Block: 256 threads.
 * Dynamic shared memory: H3_SMEM_BYTES(D).
 *
 * Register bookkeeping of one thread: warpgroup wg (rows 64wg..64wg+63 of the tile), warp w in
 * it, lane = 4g + t. By the wgmma accumulator layout (wgmma.cuh) the thread owns rows
 * 16w + g + 8h (h = 0, 1) of its warpgroup's 64 and, in each 8-column group j, columns 8j + 2t
 * and 8j + 2t + 1:
 *   s[4j + 2h + e]  S then P of (row h, key 8j + 2t + e) of the current key tile
 *   o[4j + 2h + e]  O of (row h, column 8j + 2t + e)
 *   pk[k][i]        P as the A operand of k-step k (keys 16k..16k+15): i = 0, 1 the keys of group
 *                   2k for rows h = 0, 1; i = 2, 3 those of group 2k + 1
 *   m_run[h]        running max of row h (raw Q.K units), l_run[h] this lane's part of its sum */
template <int D>
static __device__ __forceinline__ void flash3_fwd_tile(const flash3_params &p)
{
    constexpr int BM = H3_BLOCK_M, BN = H3_BLOCK_N;
    constexpr uint32_t Q_BYTES = H3_TILE_BYTES(D, BM), KV_BYTES = H3_TILE_BYTES(D, BN);
    constexpr int SN = BN / 2;                /* S floats per thread (64 x BN over 128 threads) */
    constexpr int ON = D / 2;                 /* O floats per thread */
    static_assert(D == 64 || D == 128, "head_dim 64 or 128");
    static_assert(BM == 64 * H3_WARPGROUPS && BN % 16 == 0, "tile shape");

    extern __shared__ uint8_t smem_raw[];
    const uint32_t sQ = (smem_addr(smem_raw) + 1023u) & ~1023u;   /* 128B swizzle: 1024-B aligned */
    const uint32_t sK = sQ + Q_BYTES;                             /* H3_STAGES tiles */
    const uint32_t sV = sK + H3_STAGES * KV_BYTES;                /* H3_STAGES tiles */
    const uint32_t bar = sV + H3_STAGES * KV_BYTES;
    const uint32_t q_full = bar;
#define K_FULL(s)   (bar + 8u * (1 + (s)))
#define V_FULL(s)   (bar + 8u * (1 + H3_STAGES + (s)))
#define KV_EMPTY(s) (bar + 8u * (1 + 2 * H3_STAGES + (s)))

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wg = warp >> 2, w = warp & 3, g = lane >> 2, t = lane & 3;
    const int seq = p.seq;
    const int bh = blockIdx.x;
    const int m0 = (int)(gridDim.y - 1 - blockIdx.y) * BM;        /* heaviest query tile first */

    /* Causal bounds: key tiles 0 .. n_end-1 reach the block's last row (or seq); none past that
     * is ever loaded. With BM == BN both warpgroups need every one of them. */
    const int n_tiles = (seq + BN - 1) / BN;
    const int n_end = min(n_tiles, (m0 + BM - 1) / BN + 1);

    if (tid == 0) {
        tma_prefetch_map(&p.q_map);
        tma_prefetch_map(&p.k_map);
        tma_prefetch_map(&p.v_map);
        mbar_init(q_full, 1);                 /* the loader's expect_tx arrival + Q's bytes */
        for (int s = 0; s < H3_STAGES; ++s) {
            mbar_init(K_FULL(s), 1);
            mbar_init(V_FULL(s), 1);
            mbar_init(KV_EMPTY(s), 4 * H3_WARPGROUPS);   /* one arrival per consumer warp */
        }
        mbar_fence_init();
    }
    __syncthreads();
    if (tid == 0) {
        mbar_arrive_expect_tx(q_full, Q_BYTES);
        tma_load_4d(sQ, &p.q_map, q_full, 0, m0, 0, bh);
        for (int s = 0; s < H3_STAGES && s < n_end; ++s)
            load_kv_tile<D>(p, sK + s * KV_BYTES, sV + s * KV_BYTES, K_FULL(s), V_FULL(s), s, bh);
    }
    __syncwarp();

    /* Descriptors (wgmma.cuh): Q rows 64wg.. of panel 0 and K of stage 0, K-major; V of stage 0,
     * MN-major, its 64-column panels BN*128 bytes apart (LBO). Offsets are added per k-step. */
    const uint64_t q_desc = wgmma_desc_sw128(sQ + wg * 64 * 128, 16, 1024);
    const uint64_t k_desc = wgmma_desc_sw128(sK, 16, 1024);
    const uint64_t v_desc = wgmma_desc_sw128(sV, BN * 128, 1024);

    const int row0 = m0 + wg * 64 + 16 * w + g;   /* global row of h = 0; h = 1 is row0 + 8 */
    const float c = p.scale_log2;
    float o[ON];
    float m_run[2] = { -INFINITY, -INFINITY }, l_run[2] = { 0.f, 0.f };
#pragma unroll
    for (int i = 0; i < ON; ++i) o[i] = 0.f;

    mbar_wait(q_full, 0);
    for (int n = 0; n < n_end; ++n) {
        const int s = n % H3_STAGES;
        const uint32_t phase = (uint32_t)(n / H3_STAGES) & 1u;
        const uint32_t kv_off = (uint32_t)s * KV_BYTES;

        /* S = Q.K^T: head_dim/16 k-steps; step kk reads 32 bytes further into each 128-byte row,
         * then the next 64-column panel. */
        float sacc[SN];
        mbar_wait(K_FULL(s), phase);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const uint32_t q_off = (uint32_t)((kk / 4) * BM * 128 + (kk % 4) * 32);
            const uint32_t k_off = kv_off + (uint32_t)((kk / 4) * BN * 128 + (kk % 4) * 32);
            wgmma_m64n128k16_ss(sacc, q_desc + (q_off >> 4), k_desc + (k_off >> 4), kk > 0);
        }
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_regs(sacc);

        /* Mask by assignment (-inf): key col is visible to row iff col <= row and col < seq.
         * Only the tile that crosses this warpgroup's diagonal or the end of seq needs it. */
        const int key0 = n * BN;
        if (key0 + BN - 1 > m0 + wg * 64 || key0 + BN > seq) {      /* warpgroup-uniform */
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

        /* Online softmax, one row h at a time; the quad (4 lanes) holds the row. */
        uint32_t pk[BN / 16][4];
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
            const float alpha = exp2_approx((m_run[h] - m_use) * c);
            const float m_c = m_use * c;
            m_run[h] = m_new;
            float sum = 0.f;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                const float p0 = exp2_approx(fmaf(sacc[4 * j + 2 * h], c, -m_c));
                const float p1 = exp2_approx(fmaf(sacc[4 * j + 2 * h + 1], c, -m_c));
                sum += p0 + p1;
                pk[j / 2][(j % 2) * 2 + h] = pack_bf16x2(p0, p1);
            }
            l_run[h] = fmaf(l_run[h], alpha, sum);
#pragma unroll
            for (int j = 0; j < D / 8; ++j) {
                o[4 * j + 2 * h]     *= alpha;
                o[4 * j + 2 * h + 1] *= alpha;
            }
        }

        /* O += P.V: BN/16 k-steps, A = P from registers, B = V rows 16k..16k+15 (2048 bytes a
         * step inside each panel). */
        mbar_wait(V_FULL(s), phase);
        wgmma_fence();                        /* O and P were written by ordinary code */
#pragma unroll
        for (int k = 0; k < BN / 16; ++k) {
            const uint32_t v_off = kv_off + (uint32_t)k * 2048u;
            if constexpr (D == 64)
                wgmma_m64n64k16_rs(o, pk[k], v_desc + (v_off >> 4), 1);
            else
                wgmma_m64n128k16_rs(o, pk[k], v_desc + (v_off >> 4), 1);
        }
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_regs(o);

        /* Release stage s: this warp's wgmma reads of K[n] and V[n] are complete. */
        __syncwarp();
        if (lane == 0) mbar_arrive(KV_EMPTY(s));
        /* The loader refills stage s with tile n + 2 once all 8 warps have released it. */
        if (tid == 0 && n + H3_STAGES < n_end) {
            mbar_wait(KV_EMPTY(s), phase);
            load_kv_tile<D>(p, sK + kv_off, sV + kv_off, K_FULL(s), V_FULL(s), n + H3_STAGES, bh);
        }
        __syncwarp();
    }

    /* Epilogue: O /= l (a row that saw no key keeps O = 0), to bf16, into this warpgroup's own
     * rows of the Q tile (same panel layout and swizzle; its wgmma reads of Q are complete and
     * the other warpgroup reads only its own rows), then 16-byte coalesced global stores. */
    const int r_base = wg * 64 + 16 * w + g;                      /* row in the tile; & 7 == g */
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
                          pack_bf16x2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv));
    }
    named_barrier_sync(1 + wg, 128);          /* this warpgroup's rows are complete */
    constexpr int CHUNKS = D / 8;             /* 16-byte chunks per row */
    const int wtid = tid & 127;
    __nv_bfloat16 *o_bh = p.o + (size_t)bh * seq * D;
#pragma unroll
    for (int i = 0; i < 64 * CHUNKS / 128; ++i) {
        const int idx = i * 128 + wtid;
        const int r = idx / CHUNKS, ch = idx % CHUNKS;            /* r: row in the warpgroup */
        const int row = m0 + wg * 64 + r;
        if (row < seq) {
            const uint32_t a = sQ + (uint32_t)((ch / 8) * BM * 128 + (wg * 64 + r) * 128 +
                                               (((ch % 8) ^ (r & 7)) << 4));
            *(uint4 *)(o_bh + (size_t)row * D + ch * 8) = ld_shared_v4(a);
        }
    }
#undef K_FULL
#undef V_FULL
#undef KV_EMPTY
}

/* The two kernels, one per head_dim, named after their tile shape (see the file comment). */
#define H3_KERNEL_NAME(BM, BN, D)  H3_KERNEL_NAME_(BM, BN, D)
#define H3_KERNEL_NAME_(BM, BN, D) flash3_fwd_bf16_causal_##BM##x##BN##_d##D##_sm90a
#define H3_D64_KERNEL  H3_KERNEL_NAME(H3_BLOCK_M, H3_BLOCK_N, 64)
#define H3_D128_KERNEL H3_KERNEL_NAME(H3_BLOCK_M, H3_BLOCK_N, 128)

__global__ void __launch_bounds__(H3_THREADS, 1) H3_D64_KERNEL(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    flash3_fwd_tile<64>(p);
#endif
}

__global__ void __launch_bounds__(H3_THREADS, 1) H3_D128_KERNEL(const __grid_constant__ flash3_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    flash3_fwd_tile<128>(p);
#endif
}

/* ---- the stage -------------------------------------------------------------------------------- */

/* The tensor maps of the last forward and the tensors they describe (re-encoded when those
 * change). */
typedef struct {
    PFN_cuTensorMapEncodeTiled_v12000 encode;
    PFN_cuGetErrorString_v6000 error_string;
    CUtensorMap q_map, k_map, v_map;
    const void *q, *k, *v;
    attn_shape shape;
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
    encode_qkv_map(st, &st->q_map, p->q, &p->shape, H3_BLOCK_M);
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
    const size_t smem = H3_SMEM_BYTES(s->head_dim);
    if (smem > prop->sharedMemPerBlockOptin) {
        snprintf(why, why_len, "07_hopper at head_dim %d needs %zu bytes of shared memory per "
                 "block; %s allows %zu", s->head_dim, smem, prop->name, prop->sharedMemPerBlockOptin);
        return 1;
    }
    const long long q_tiles = ((long long)s->seq + H3_BLOCK_M - 1) / H3_BLOCK_M;
    if (q_tiles > prop->maxGridSize[1]) {
        snprintf(why, why_len, "seq %d is too long for 07_hopper (at most %lld: %d query tiles of "
                 "%d rows)", s->seq, (long long)prop->maxGridSize[1] * H3_BLOCK_M,
                 prop->maxGridSize[1], H3_BLOCK_M);
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
    const void *kernel = p->shape.head_dim == 64 ? (const void *)H3_D64_KERNEL
                                                 : (const void *)H3_D128_KERNEL;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)H3_SMEM_BYTES(p->shape.head_dim)));
    return st;
}

/* One launch: grid (batch*heads, query tiles), 256 threads. */
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
    fp.scale_log2 = p->scale * LOG2E;
    const dim3 grid((unsigned)(s->batch * s->heads), (unsigned)((s->seq + H3_BLOCK_M - 1) / H3_BLOCK_M));
    const size_t smem = H3_SMEM_BYTES(s->head_dim);

    prof_range_push("flash3_attention_forward");
    if (s->head_dim == 64)
        H3_D64_KERNEL<<<grid, H3_THREADS, smem, p->stream>>>(fp);
    else
        H3_D128_KERNEL<<<grid, H3_THREADS, smem, p->stream>>>(fp);
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
};
