/* tma.cuh: the Tensor Memory Accelerator (TMA) load and store of one tile, as inline PTX for
 * sm_90.
 *
 * A TMA copy moves a whole box of a tensor from global to shared memory without any thread
 * touching the data: one thread issues it with the address of a tensor map (CUtensorMap, 128 B,
 * made on the host by cuTensorMapEncodeTiled: the tensor's dims and strides, the box, the
 * shared-memory swizzle) and the box's coordinates; the bytes land asynchronously and are
 * counted off an mbarrier's transaction count (mbarrier.cuh). Elements of the box that fall
 * outside the tensor are filled with zeros (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) and still count
 * as bytes, so the expected byte count is always the full box.
 *
 * The tensor map is passed as a `const __grid_constant__` kernel parameter; its generic address
 * is what the PTX takes.
 *
 * The store goes the other way: one thread hands the TMA unit a box of shared memory and its
 * coordinates in the tensor, and the unit writes the box's elements that lie inside the tensor
 * (those outside are not written: a last tile that runs past the end of a sequence stores only
 * its rows inside it). Its completion is not counted on an mbarrier but on the issuing thread's
 * bulk async-groups: tma_store_commit closes a group, tma_store_wait_read waits until the
 * groups have finished reading shared memory (the buffer may then be written again),
 * tma_store_wait until their writes are done. Shared memory written by ordinary stores must be
 * handed over first: each writing thread's fence.proxy.async.shared::cta (named_barrier.cuh),
 * then a barrier with the issuing thread.
 *
 * Source: PTX ISA 8.x/9.x, "Data Movement and Conversion Instructions: cp.async.bulk.tensor",
 * "Data Movement and Conversion Instructions: cp.async.bulk.commit_group" and
 * "... cp.async.bulk.wait_group", and "Data Movement and Conversion Instructions: prefetch,
 * prefetchu" (prefetch.tensormap); "Tensor Access Modes" / "Tensor Copy Restrictions" for
 * boxes, swizzle and out-of-bound elements; the tensor-map fields are in cuda.h
 * (cuTensorMapEncodeTiled).
 */
#ifndef ATTN_SM90_TMA_CUH
#define ATTN_SM90_TMA_CUH

#include <stdint.h>

/* PTX "cp.async.bulk.tensor" (.4d, .tile, global -> shared, completing on an
 * mbarrier): load the box at element coordinates (c0, c1, c2, c3), innermost first, of the tensor
 * described by *map into shared memory at dst (aligned as the map's swizzle requires: 1024 B for
 * 128-byte swizzle). Issued by one thread; bar receives the transaction bytes. */
static __device__ __forceinline__ void tma_load_4d(uint32_t dst, const void *map, uint32_t bar,
                                                   int c0, int c1, int c2, int c3)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
                 :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
                 : "memory");
}

/* PTX "prefetch" (prefetch.tensormap): bring the tensor map (a kernel parameter) into the cache the
 * TMA unit reads it from, before the first copy needs it. */
static __device__ __forceinline__ void tma_prefetch_map(const void *map)
{
    asm volatile("prefetch.tensormap [%0];\n" :: "l"(map) : "memory");
}

/* PTX "cp.async.bulk.tensor" (.4d, .tile, shared::cta -> global, .bulk_group completion): store
 * the shared-memory box at src (laid out and aligned as the map's swizzle requires, as a load
 * would have written it) to element coordinates (c0, c1, c2, c3), innermost first, of the tensor
 * described by *map; elements outside the tensor are not written. Issued by one thread; it joins
 * that thread's current bulk async-group (tma_store_commit). */
static __device__ __forceinline__ void tma_store_4d(const void *map, uint32_t src,
                                                    int c0, int c1, int c2, int c3)
{
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group"
                 " [%0, {%2, %3, %4, %5}], [%1];\n"
                 :: "l"(map), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
                 : "memory");
}

/* PTX "cp.async.bulk.commit_group": close this thread's bulk async-group (the stores issued
 * since the last commit). */
static __device__ __forceinline__ void tma_store_commit(void)
{
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

/* PTX "cp.async.bulk.wait_group" (.read, 0): wait until every committed group of this thread has
 * finished reading its shared memory (the writes to global memory may still be in flight). */
static __device__ __forceinline__ void tma_store_wait_read(void)
{
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}

/* PTX "cp.async.bulk.wait_group" (0): wait until every committed group of this thread is
 * complete, its writes to global memory included. */
static __device__ __forceinline__ void tma_store_wait(void)
{
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

#endif
