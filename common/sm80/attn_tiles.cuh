/* attn_tiles.cuh: the tile machinery of the tensor-core attention kernels (04_efficient and
 * 05_flash), written once: what both do the same way, so that the two files differ in what the
 * two chapters are about (how the softmax reaches O) and in their tile shapes.
 *
 * The block: ATTN_WARPS = 4 warps (128 threads) own BM query rows of one (batch, head) and walk
 * K and V in tiles of BN keys through shared memory. Warp w owns R = BM/4 consecutive query rows
 * as MT = R/16 m16 tiles, all the keys of a key tile and all head_dim columns of O, so a row's
 * max and sum never leave the 4 lanes of a quad (quad_max, quad_sum).
 *
 *   swizzle_off         the XOR swizzle of every shared tile
 *   load_tile_async     ROWS rows of one [seq][D] matrix -> a swizzled shared tile (cp.async,
 *                       rows >= seq zero-filled)
 *   ldmatrix_lane_addrs this lane's ldmatrix addresses in the Q, K and V tiles
 *   load_q_fragments    a warp's Q rows -> mma A fragments in registers
 *   warp_scores         S = Q.K^T for a warp's rows and one key tile (raw, unscaled fp32)
 *   causal_mask         S = -inf where key > row or key >= seq
 *   causal_tiles        which key tiles a block and a warp visit, and which need the mask
 *   warp_pv             O += P.V for a warp's rows and one key tile, P as bf16 pairs
 *   stage_o_row,        O (fp32 fragments) -> bf16 -> global memory, through shared memory
 *   store_o_rows
 *
 * Fragment notation (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"):
 * lane = 4g + t (g = lane/4, t = lane%4); rows are relative to the warp's first row.
 *   s[mt][nt][i]   S element (row 16mt + g + 8(i/2), key 8nt + 2t + i%2) of the key tile
 *   pk[mt][nt][h]  P of (row 16mt + g + 8h, keys 8nt + 2t and 8nt + 2t + 1) as a bf16 pair;
 *                  pk[mt][2kk][0..1], pk[mt][2kk+1][0..1] are the A fragment of keys
 *                  16kk..16kk+15: the S accumulator layout is the A layout, nothing moves
 *   o[mt][dt][i]   O element (row 16mt + g + 8(i/2), column 8dt + 2t + i%2)
 *   qf[mt][kk]     the A fragment of Q rows 16mt.., head_dim columns 16kk..16kk+15
 * Requires sm_80+ (mma.sync bf16, ldmatrix, cp.async: mma_sm80.cuh).
 */
#ifndef ATTN_SM80_ATTN_TILES_CUH
#define ATTN_SM80_ATTN_TILES_CUH

#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#include "causal.cuh"
#include "mma_sm80.cuh"

#define ATTN_WARPS   4
#define ATTN_THREADS (32 * ATTN_WARPS)

/* ---- shared-memory tiles ---------------------------------------------------------------------
 * A tile is [rows][D] bf16, row-major, with its 16-byte chunks XOR-swizzled: chunk c of row r is
 * stored at chunk c ^ (r & 7). Any 8 consecutive rows then put a given chunk in 8 different bank
 * groups, so every ldmatrix and every 16-byte copy below is free of bank conflicts. */

/* Byte offset of 16-byte chunk c of row r in a swizzled tile with rows of D bf16. */
static __device__ __forceinline__ uint32_t swizzle_off(int r, int c, int D)
{
    return (uint32_t)(r * D * 2 + ((c ^ (r & 7)) << 4));
}

/* Start the copy of ROWS rows (row0 ...) of one [seq, D] matrix (g: its (batch, head) base) into
 * a swizzled shared tile. All 128 threads take part: thread i copies 16-byte chunk i % (D/8) of
 * rows i / (D/8) + k * (128 / (D/8)), so 8 neighbouring lanes read 128 contiguous bytes of global
 * memory and write 8 different bank groups of shared memory. Rows >= seq are zero-filled
 * (src_bytes 0, the source address clamped to row 0), so padded keys give S = 0 (then masked) and
 * padded values V = 0: stale shared memory could hold NaN, and 0 * NaN would poison a row of O.
 * Completes at the cp_async_wait that follows the caller's commit. */
template <int D, int ROWS>
static __device__ __forceinline__ void load_tile_async(uint32_t s_tile, const __nv_bfloat16 *g,
                                                       int row0, int seq)
{
    constexpr int CHUNKS = D / 8;
    constexpr int ROWS_PER_PASS = ATTN_THREADS / CHUNKS;   /* 16 (d64) or 8 (d128) */
    static_assert(ROWS % ROWS_PER_PASS == 0, "tile rows must be a multiple of a pass");
    static_assert(ROWS_PER_PASS % 8 == 0, "a pass must keep row & 7, hence the swizzle, fixed");
    const int c = threadIdx.x % CHUNKS;
    const int r = threadIdx.x / CHUNKS;
    const uint32_t dst = s_tile + swizzle_off(r, c, D);
#pragma unroll
    for (int i = 0; i < ROWS / ROWS_PER_PASS; ++i) {
        const int row = row0 + r + i * ROWS_PER_PASS;
        const bool inside = row < seq;
        cp_async_16(dst + i * ROWS_PER_PASS * D * 2, g + (inside ? row : 0) * D + c * 8,
                    inside ? 16 : 0);
    }
}

/* ---- ldmatrix lane addresses -------------------------------------------------------------------
 * ldmatrix .x4: lanes 8i..8i+7 give the row addresses of 8x8 matrix i, and the four matrices are
 * the mma fragment's registers in order (PTX ISA, ldmatrix). So
 *   Q (A operand) and V (.trans B operand): lane gives row (lane & 15), chunk 2kk + lane/16;
 *   K (B operand): row (lane & 7) + 8*(lane/16), chunk 2kk + (lane/8 & 1).
 * The 8 rows of one 8x8 matrix all have row & 7 == lane & 7, so the swizzled chunk is
 * (2kk + b) ^ (lane & 7) = 2kk ^ y with y = b ^ (lane & 7), i.e. byte (16y) ^ (32kk) in the row.
 * Rows start on 128-byte (d64) or 256-byte (d128) boundaries and 32kk < 2*D, so
 *   address(kk) = (row start + 16y) ^ (32kk):
 * one XOR with an immediate per k-step on one base register, the other offsets (m16 tile, n16
 * pair, k16 step of V) being immediates of the ldmatrix. Needs each tile to start on a 256-byte
 * boundary. */

/* This thread's ldmatrix addresses at kk = 0 (lane = threadIdx.x % 32 of warp threadIdx.x / 32):
 * q in the Q tile sQ, for the warp's R rows R*warp.. of the tile; k and v in the K and V tiles sK
 * and sV. In a tile of the same shape elsewhere in shared memory (the other buffer) the address
 * is the same plus the tile's offset. */
typedef struct {
    uint32_t q, k, v;
} lane_addrs;

template <int D, int R>
static __device__ __forceinline__ lane_addrs ldmatrix_lane_addrs(uint32_t sQ, uint32_t sK, uint32_t sV)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t y_a = (uint32_t)(((lane >> 4) ^ (lane & 7)) << 4);
    const uint32_t y_k = (uint32_t)((((lane >> 3) & 1) ^ (lane & 7)) << 4);
    lane_addrs a;
    a.q = sQ + (warp * R + (lane & 15)) * (D * 2) + y_a;
    a.k = sK + ((lane & 7) + ((lane >> 4) << 3)) * (D * 2) + y_k;
    a.v = sV + (lane & 15) * (D * 2) + y_a;
    return a;
}

/* ---- the two matrix products ------------------------------------------------------------------ */

/* This warp's Q rows (MT m16 tiles x D) as mma A fragments, from the Q tile (q_lane: the q of
 * ldmatrix_lane_addrs), once the tile has landed for every thread. */
template <int D, int MT>
static __device__ __forceinline__ void load_q_fragments(uint32_t (&qf)[MT][D / 16][4], uint32_t q_lane)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
            ldmatrix_x4(qf[mt][kk], (q_lane ^ (32u * kk)) + mt * 16 * D * 2);
}

/* S = Q.K^T for this warp: MT m16 tiles of rows x NT n8 tiles of keys, raw (unscaled) fp32.
 * Q from registers (Q_IN_REGS: qf) or by ldmatrix.x4 from the Q tile (q_lane); K by ldmatrix.x4
 * (k_lane: the k of ldmatrix_lane_addrs, in this key tile's buffer). B(k = d, n = key) =
 * K[key][d] is a row of the K tile, so a plain ldmatrix gives it; each K fragment (two n8 tiles
 * of keys) feeds all MT m16 tiles of the warp. */
template <int D, int MT, int NT, bool Q_IN_REGS>
static __device__ __forceinline__ void warp_scores(
    float (&s)[MT][NT][4], const uint32_t (&qf)[Q_IN_REGS ? MT : 1][Q_IN_REGS ? D / 16 : 1][4],
    uint32_t q_lane, uint32_t k_lane)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) s[mt][nt][i] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t qa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            if constexpr (Q_IN_REGS) {
#pragma unroll
                for (int i = 0; i < 4; ++i) qa[mt][i] = qf[mt][kk][i];
            } else {
                ldmatrix_x4(qa[mt], (q_lane ^ (32u * kk)) + mt * 16 * D * 2);
            }
        }
#pragma unroll
        for (int np = 0; np < NT / 2; ++np) {
            uint32_t kb[4];
            ldmatrix_x4(kb, (k_lane ^ (32u * kk)) + np * 16 * D * 2);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                mma_bf16_16816(s[mt][2 * np], qa[mt], kb[0], kb[1]);
                mma_bf16_16816(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
            }
        }
    }
}

/* O += P.V for this warp: P as bf16 pairs pk (the A fragment of keys 16kk..16kk+15 is
 * pk[mt][2kk] and pk[mt][2kk+1]), V by ldmatrix.x4.trans (v_lane: the v of ldmatrix_lane_addrs,
 * in this key tile's buffer). B(k = key, n = d) = V[key][d] runs along a row of the V tile, so
 * lanes 0-15 address keys 16kk..16kk+15 at column d0, lanes 16-31 the same keys at d0+8 -> B of
 * columns d0..d0+7 in {r0, r1}, d0+8.. in {r2, r3}. */
template <int D, int MT, int NT>
static __device__ __forceinline__ void warp_pv(float (&o)[MT][D / 8][4], const uint32_t (&pk)[MT][NT][2],
                                               uint32_t v_lane)
{
#pragma unroll
    for (int kk = 0; kk < NT / 2; ++kk) {
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {       /* head_dim columns 16dp..16dp+15 */
            uint32_t vb[4];
            ldmatrix_x4_trans(vb, (v_lane ^ (32u * dp)) + kk * 16 * D * 2);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                const uint32_t pa[4] = { pk[mt][2 * kk][0], pk[mt][2 * kk][1],
                                         pk[mt][2 * kk + 1][0], pk[mt][2 * kk + 1][1] };
                mma_bf16_16816(o[mt][2 * dp], pa, vb[0], vb[1]);
                mma_bf16_16816(o[mt][2 * dp + 1], pa, vb[2], vb[3]);
            }
        }
    }
}

/* ---- causal mask and bounds ------------------------------------------------------------------- */

/* Mask by assignment (-inf): key col is visible to row iff col <= row and col < seq, i.e. iff
 * col - key0 - 2t < min(row + 1, seq) - key0 - 2t =: limit. row_g = the global row of
 * (mt 0, h 0) = the warp's first row + g; key0 = the key tile's first key. */
template <int MT, int NT>
static __device__ __forceinline__ void causal_mask(float (&s)[MT][NT][4], int row_g, int key0, int seq,
                                                   int t)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int limit = causal_mask_limit(row_g + mt * 16 + 8 * h, seq, key0, t);
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    if (nt * 8 + e >= limit) s[mt][nt][2 * h + e] = -INFINITY;
        }
}

/* Causal bounds of one block (BM rows from m0) and one of its warps (R rows from w_row0 =
 * m0 + warp*R), key tiles of BN keys in forward order n = 0, 1, ...
 *   n_end:    the block's key tiles are 0 .. n_end-1 (those reaching its last row); none past
 *             that is ever loaded;
 *   w_n_full: tiles 0 .. w_n_full-1 lie wholly at or below the warp's first row and inside seq
 *             (no mask); w_n_full .. w_n_end-1 cross its diagonal or seq (masked);
 *   w_n_end:  the rest up to n_end lie wholly past the warp's last row: the warp only helps load
 *             them. A warp whose rows are all >= seq has w_n_end = 0. */
typedef struct {
    int n_end, w_n_end, w_n_full;
} causal_tiles;

template <int BM, int BN, int R>
static __device__ __forceinline__ causal_tiles causal_tile_bounds(int m0, int warp, int seq)
{
    causal_tiles b;
    const int n_tiles = (seq + BN - 1) / BN;
    b.n_end    = causal_key_tiles(m0, BM, BN, seq);
    const int w_row0 = m0 + warp * R;
    b.w_n_end  = w_row0 < seq ? min(n_tiles, (w_row0 + R - 1) / BN + 1) : 0;
    b.w_n_full = min(b.w_n_end, min((w_row0 + 1) / BN, seq / BN));
    return b;
}

/* ---- quad reductions and the epilogue --------------------------------------------------------- */

/* Max of this lane's part of row (mt, h) of S (its NT pairs) and m, before the quad reduction. */
template <int MT, int NT>
static __device__ __forceinline__ float row_max(const float (&s)[MT][NT][4], int mt, int h, float m)
{
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
        m = fmaxf(m, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
    return m;
}

/* A row of S or O is spread over the 4 lanes of a quad: reduce across them. */
static __device__ __forceinline__ float quad_max(float x)
{
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

static __device__ __forceinline__ float quad_sum(float x)
{
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/* The epilogue moves O through this warp's own rows of a shared tile sO (the Q tile: no other warp
 * reads them, and it is swizzled like any tile) so that each lane stores whole 16-byte chunks to
 * global memory, coalesced:
 *   stage_o_row   row (mt, h) of this lane's O fragments, times inv (1/l, or 1) -> bf16 -> sO;
 *   store_o_rows  once every row is staged: this warp's R rows of sO -> global rows
 *                 m0 + warp*R .. of out ([seq][D], this (batch, head)); rows >= seq not stored.
 * The caller makes sure every lane of the warp is done reading its Q rows before the first
 * stage_o_row (__syncwarp). */
template <int D, int MT>
static __device__ __forceinline__ void stage_o_row(const float (&o)[MT][D / 8][4], int mt, int h, float inv,
                                                   uint32_t sO, int warp, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    const int r = warp * 16 * MT + mt * 16 + g + 8 * h;       /* row in the tile; r & 7 == g */
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
        st_shared_b32(sO + swizzle_off(r, dt, D) + 4 * t,
                      bf16x2_bits(__floats2bfloat162_rn(o[mt][dt][2 * h] * inv,
                                                        o[mt][dt][2 * h + 1] * inv)));
}

template <int D, int R>
static __device__ __forceinline__ void store_o_rows(uint32_t sO, __nv_bfloat16 *out, int m0, int seq,
                                                    int warp, int lane)
{
    constexpr int CHUNKS = D / 8;
    __syncwarp();                                                /* every row is staged */
#pragma unroll
    for (int i = 0; i < R * CHUNKS / 32; ++i) {
        const int idx = i * 32 + lane;
        const int r = warp * R + idx / CHUNKS, ch = idx % CHUNKS;
        if (m0 + r < seq)
            *(uint4 *)(out + (size_t)(m0 + r) * D + ch * 8) =
                *(const uint4 *)__cvta_shared_to_generic(sO + swizzle_off(r, ch, D));
    }
}

#endif
