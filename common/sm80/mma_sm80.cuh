/* mma_sm80.cuh: the sm_80 instructions the tensor-core stages (04_efficient, 05_flash) are
 * built from, as inline PTX where CUDA C has no intrinsic for them.
 *
 *   cp.async.cg (16 B, zero-fill)   global -> shared without passing through registers
 *   cp.async.commit_group / wait    group the copies, wait for them
 *   ldmatrix .x4 (and .trans)       four 8x8 bf16 matrices from shared memory into mma fragments
 *   mma.sync m16n8k16 bf16 -> f32   one warp-wide 16x8x16 tensor-core product
 *   ex2.approx.ftz.f32              2^x on the special-function unit
 * plus a plain 32-bit shared store and 16-byte shared load by .shared address (the epilogue), and
 * bf16x2_bits: a bf16 pair from CUDA's __floats2bfloat162_rn (cvt.rn.bf16x2.f32) as the 32-bit
 * register the mma A operand of P.V and the epilogue's stores take.
 *
 * Sources: PTX ISA 9.x, "Warp-level matrix instructions: mma" (fragment layouts of m16n8k16,
 * section 9.7.14.5.8), "ldmatrix" (9.7.14.5.15), "cp.async", "ex2". The lane -> address
 * formulas for Q, K and V tiles are written out in sm80/attn_tiles.cuh. Available on sm_80 and
 * newer (Ampere, Ada, Hopper): the same instructions FlashAttention-2 uses on the H100/H200.
 *
 * Shared-memory addresses are 32-bit offsets in the shared window (smem_addr below), as PTX's
 * .shared state space wants them.
 */
#ifndef ATTN_MMA_SM80_CUH
#define ATTN_MMA_SM80_CUH

#include <cuda_bf16.h>
#include <stdint.h>
#include <string.h>

/* Generic pointer to shared memory -> 32-bit .shared address. */
static __device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* Copy 16 bytes global -> shared, asynchronously, caching in L2 only (.cg). The last
 * 16 - src_bytes bytes of the destination are zero-filled: src_bytes = 0 writes 16 zero bytes
 * (used for rows past the end of the sequence; src must still be a valid address). dst and src
 * 16-byte aligned. */
static __device__ __forceinline__ void cp_async_16(uint32_t dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

/* Close this thread's outstanding cp.async copies into one group (an empty group is fine). */
static __device__ __forceinline__ void cp_async_commit(void)
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Wait until at most N of this thread's most recent groups are still in flight. Completion is
 * per thread: other threads see the data only after a __syncthreads() that follows. */
template <int N>
static __device__ __forceinline__ void cp_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

/* ldmatrix .x4: lanes 8i..8i+7 give the row addresses (16 contiguous bytes each) of matrix i;
 * r[i] of lane (g = lane/4, t = lane%4) receives row g, columns 2t, 2t+1 of matrix i
 * (the lower column in the low 16 bits). */
static __device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

/* ldmatrix .x4.trans: as above, but lane (g, t) receives rows 2t and 2t+1 of column g of
 * matrix i (row 2t in the low 16 bits): the stored matrix, transposed. */
static __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

/* d += A.B on the tensor cores: A 16x16 bf16 (row-major fragment, 4 registers), B 16x8 bf16
 * (column fragment, 2 registers), d 16x8 f32 (4 registers). Lane (g, t) holds
 *   A: a[0] = (g, 2t..2t+1)  a[1] = (g+8, 2t..2t+1)  a[2] = (g, 2t+8..2t+9)  a[3] = (g+8, 2t+8..2t+9)
 *   B: b0 = (k 2t..2t+1, n g)   b1 = (k 2t+8..2t+9, n g)
 *   d: d[0] = (g, 2t)  d[1] = (g, 2t+1)  d[2] = (g+8, 2t)  d[3] = (g+8, 2t+1)           */
static __device__ __forceinline__ void mma_bf16_16816(float d[4], const uint32_t a[4],
                                                      uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* The 32 bits of a bf16 pair (x in bits 15:0, y in bits 31:16), as mma.sync's A operand and a
 * 32-bit store take it. The pair itself comes from CUDA: __floats2bfloat162_rn(lo, hi) rounds two
 * floats to nearest even (one cvt.rn.bf16x2.f32 on sm_80+). */
static __device__ __forceinline__ uint32_t bf16x2_bits(__nv_bfloat162 v)
{
    uint32_t r;
    memcpy(&r, &v, sizeof r);
    return r;
}

/* 2^x, approximate (2 ulp), denormals flushed; 2^-inf = +0. One MUFU.EX2. */
static __device__ __forceinline__ float exp2_approx(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* Plain shared-memory store of one 32-bit word and load of 16 bytes, by .shared address (the
 * epilogue stages the O tile through shared memory to write global memory in 16-byte pieces). */
static __device__ __forceinline__ void st_shared_b32(uint32_t addr, uint32_t v)
{
    asm volatile("st.shared.b32 [%0], %1;\n" :: "r"(addr), "r"(v) : "memory");
}

static __device__ __forceinline__ uint4 ld_shared_v4(uint32_t addr)
{
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
    return v;
}

#endif
