/* tma.cuh: the Tensor Memory Accelerator (TMA) load of one tile, as inline PTX for sm_90.
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
 * Source: PTX ISA 8.x/9.x, "Data Movement and Conversion Instructions: cp.async.bulk.tensor"
 * and "Data Movement and Conversion Instructions: prefetch, prefetchu" (prefetch.tensormap);
 * "Tensor Access Modes" / "Tensor Copy Restrictions" for boxes, swizzle and out-of-bound fill;
 * the tensor-map fields are in cuda.h (cuTensorMapEncodeTiled).
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

#endif
