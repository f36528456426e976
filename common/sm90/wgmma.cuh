/* wgmma.cuh: Hopper's asynchronous warpgroup matrix multiply (wgmma), as inline PTX for sm_90a.
 *
 * One wgmma.mma_async is issued by a whole warpgroup (4 consecutive warps, 128 threads, the
 * first warp's index a multiple of 4) and computes D[64 x N] (+)= A[64 x 16] . B[16 x N] on the
 * tensor cores, asynchronously: the instruction returns at once, the result lands in D's
 * registers later. The protocol (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
 * Instructions", wgmma.fence / wgmma.commit_group / wgmma.wait_group):
 *
 *   wgmma_fence();                 before the first wgmma, and again whenever ordinary code has
 *                                  written D or the register A since the last wgmma (rescaled O,
 *                                  a new P)
 *   wgmma_m64n...(...) x k        the k16 steps of one product, all into the same D
 *   wgmma_commit();                close them into one group
 *   wgmma_wait<0>();               wait until at most 0 groups are pending: D is ready
 *
 * Reading or writing D (or a register A) between issue and the covering wait is undefined; the
 * register fences (wgmma_fence_regs below) keep the compiler from moving such accesses there.
 *
 * Operands. A comes from shared memory (descriptor) or registers; B from shared memory only.
 * Both shared-memory layouts here are 128-byte swizzled tiles written by TMA
 * (CU_TENSOR_MAP_SWIZZLE_128B): rows of 64 bf16 = 128 B, 8-row groups of 1024 B, the 16-byte
 * chunk c of row r stored at chunk c ^ (r % 8). A tile wider than 64 columns is stored as panels
 * of 64 columns one after another.
 *
 * Accumulator layout (bf16/f32, any N): warp w of the warpgroup, lane l, register v of D holds
 *   row 16w + l/4 + 8*((v >> 1) & 1),  column 8*(v >> 2) + 2*(l % 4) + (v & 1),
 * so each thread owns 2 rows, and each row lives in the 4 lanes of a quad.
 * For 16-bit inputs the register A operand of a 64x16 tile has the same layout as the
 * accumulator of a 64x16 tile: accumulator registers 8j..8j+7 (columns 16j..16j+15), packed in
 * pairs (0,1) (2,3) (4,5) (6,7) into bf16x2, are the A operand of k-step j. That is how P = S
 * goes from the first product into the second without touching shared memory.
 *
 * Sources: PTX ISA 8.x/9.x, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
 * Instructions" (wgmma.mma_async; "Matrix Descriptor Format"; "Register Fragments and Shared
 * Memory Matrix Layouts"; wgmma.fence, wgmma.commit_group, wgmma.wait_group). Descriptor fields
 * as CUTLASS's GmmaDescriptor (cute/arch/mma_sm90_desc.hpp) documents them.
 */
#ifndef ATTN_SM90_WGMMA_CUH
#define ATTN_SM90_WGMMA_CUH

#include <stdint.h>

/* PTX "Matrix Descriptor Format" (wgmma): the 64-bit shared-memory matrix descriptor.
 *   bits  0-13  start address >> 4 (a .shared address)
 *   bits 16-29  leading-dimension byte offset (LBO) >> 4
 *   bits 32-45  stride-dimension byte offset (SBO) >> 4
 *   bits 49-51  base offset (0: every swizzled tile starts on a 1024-byte boundary)
 *   bits 62-63  swizzle mode: 1 = 128-byte swizzle
 * For 128-byte swizzle, SBO = 1024 (the distance between 8-row groups). For a K-major operand
 * LBO is unused (set to 16 by convention); for an MN-major operand wider than 64 elements in N,
 * LBO is the distance between 64-column panels. Adding (bytes >> 4) to a descriptor moves its
 * start address (no carry out of bits 0-13 while the address stays below 256 KiB). */
static __device__ __forceinline__ uint64_t wgmma_desc_sw128(uint32_t smem, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((smem & 0x3FFFFu) >> 4) | ((uint64_t)((lbo & 0x3FFFFu) >> 4) << 16) |
           ((uint64_t)((sbo & 0x3FFFFu) >> 4) << 32) | (1ull << 62);
}

/* PTX wgmma.fence: orders this warpgroup's earlier register (and shared memory) accesses before
 * the wgmma.mma_async that follow. All 128 threads execute it. */
static __device__ __forceinline__ void wgmma_fence(void)
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

/* PTX wgmma.commit_group: the wgmma.mma_async issued since the last commit form one group. */
static __device__ __forceinline__ void wgmma_commit(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* PTX wgmma.wait_group: wait until at most N of this warpgroup's groups are still pending. */
template <int N>
static __device__ __forceinline__ void wgmma_wait(void)
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory");
}

/* wgmma_wait<N>(), kept after the computation of a and b in the machine code. ptxas schedules the
 * SASS around a wait as it likes: the wait has no operands, so nothing ties it to the arithmetic
 * before it in the source, and ptxas may hoist it above that arithmetic (ptxas 13.0 does so above a
 * softmax: WARPGROUP.DEPBAR then sits at the softmax's top, and the product the softmax was to run
 * under is waited for first). The empty-asm fences cannot help: the PTX has the right order; the
 * move is ptxas's. What ptxas 13.0 was seen to keep in place is control flow: here a nanosleep
 * predicated on a < 0 or b < 0, which ptxas compiles to a branch around the sleep, then the wait.
 * a and b must be computed before the branch, and the wait stays after it. For a and b that are
 * sums of exponentials (>= 0, +inf or NaN; the compare is false for NaN) the sleep never runs, and
 * if it ran it would only sleep: no effect on any result. Cost: two compares and a branch. A
 * predicated wait would say the same more directly, but ptxas then serializes every wgmma (C7514).
 * This is observed behaviour, not documented: tests/07_ladder.bats checks the order in the SASS. */
template <int N>
static __device__ __forceinline__ void wgmma_wait_after(float a, float b)
{
    asm volatile("{\n"
                 ".reg .pred p, q;\n"
                 "setp.lt.f32 q, %1, 0f00000000;\n"
                 "setp.lt.or.f32 p, %0, 0f00000000, q;\n"
                 "@p nanosleep.u32 1;\n"
                 "}\n" :: "f"(a), "f"(b) : "memory");
    wgmma_wait<N>();
}

/* A compiler-only fence on n accumulator registers: an empty asm that "reads and writes" each of
 * them, so nvcc cannot move ordinary code that touches them across a wgmma issue or wait (as
 * CUTLASS's warpgroup_fence_operand). No instruction is emitted. */
template <int N>
static __device__ __forceinline__ void wgmma_fence_regs(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}

/* PTX "wgmma.mma_async" (SS form): D[64x128] (+)= A[64x16] . B[16x128], bf16 in, f32 accumulate;
 * A and B from shared memory by descriptor, both K-major (trans-a = trans-b = 0). d holds this
 * thread's 64 accumulator elements (layout in the file comment). scale_d = 0: D = A.B. */
static __device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t desc_a,
                                                          uint64_t desc_b, int scale_d)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, "
                 "%40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, "
                 "%56, %57, %58, %59, %60, %61, %62, %63"
                 "}, %64, %65, p, 1, 1, 0, 0;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* PTX "wgmma.mma_async" (SS form): D[64x64] (+)= A[64x16] . B[16x64], bf16 in, f32 accumulate;
 * as wgmma_m64n128k16_ss with half the columns: B is the first 64 rows (K-major) of the tile the
 * descriptor points at. d holds this thread's 32 accumulator elements. */
static __device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], uint64_t desc_a,
                                                         uint64_t desc_b, int scale_d)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31"
                 "}, %32, %33, p, 1, 1, 0, 0;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* PTX "wgmma.mma_async" (RS form): D[64x64] (+)= A[64x16] . B[16x64], bf16 in, f32 accumulate;
 * A from registers (a[0..3], the accumulator layout of a 64x16 tile packed to bf16 pairs), B from
 * shared memory by descriptor, MN-major (trans-b = 1: B is stored [k][n], n contiguous). */
static __device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4],
                                                          uint64_t desc_b, int scale_d)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31"
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

/* PTX "wgmma.mma_async" (RS form): D[64x128] (+)= A[64x16] . B[16x128], bf16 in, f32 accumulate;
 * A from registers (a[0..3], the accumulator layout of a 64x16 tile packed to bf16 pairs), B from
 * shared memory by descriptor, MN-major (trans-b = 1: B is stored [k][n], n contiguous). */
static __device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const uint32_t (&a)[4],
                                                          uint64_t desc_b, int scale_d)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, "
                 "%40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, "
                 "%56, %57, %58, %59, %60, %61, %62, %63"
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

#endif
