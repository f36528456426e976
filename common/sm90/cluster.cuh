/* cluster.cuh: thread-block clusters, as inline PTX for sm_90: a block's rank in its cluster, the
 * cluster-wide barrier, an arrival on an mbarrier in another block's shared memory, and a TMA load
 * that lands in the shared memory of several blocks of the cluster at once (multicast).
 *
 * A cluster is a group of blocks (here two) that the hardware places on SMs of one GPC at the
 * same time; each block can address the others' shared memory ("distributed shared memory") and
 * their mbarriers. A TMA load with .multicast::cluster reads its box from global memory (through
 * L2) once and writes it into the shared memory of every block named in the mask, at the same
 * offset in each, completing transaction bytes on the mbarrier at the same offset in each.
 *
 *   every block:  mbarriers initialised, mbar_fence_init(), cluster_sync()   (before any remote use)
 *   producer:     mbar_arrive_expect_tx(full, whole tile); tma_load_4d_multicast(its part, mask)
 *   consumer:     mbar_wait(full) ... mbar_arrive_remote_if(empty, lane, lane < blocks): lane r on rank r
 *   every block:  cluster_sync() before it exits (no remote arrival may reach an exited block)
 *
 * Sources: PTX ISA 8.x/9.x, "Special Registers: %cluster_ctarank", "Parallel Synchronization and
 * Communication Instructions: barrier.cluster", "... mbarrier" (mbarrier.arrive with
 * .shared::cluster), "Data Movement and Conversion Instructions: mapa" and "...
 * cp.async.bulk.tensor" (.multicast::cluster, the 16-bit ctaMask); CUDA C++ Programming Guide,
 * "Thread Block Clusters" and "Distributed Shared Memory"; CUTLASS's ClusterBarrier
 * (cutlass/arch/barrier.h).
 */
#ifndef ATTN_SM90_CLUSTER_CUH
#define ATTN_SM90_CLUSTER_CUH

#include <stdint.h>

/* %cluster_ctarank: this block's rank in its cluster, 0 .. cluster size - 1. */
static __device__ __forceinline__ uint32_t cluster_rank(void)
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

/* barrier.cluster.arrive.release + barrier.cluster.wait.acquire: every non-exited thread of every
 * block of the cluster arrives, then waits for all the others; this thread's earlier memory
 * operations (its mbarrier initialisation included, after mbar_fence_init) are visible to the
 * cluster's threads after theirs. */
static __device__ __forceinline__ void cluster_sync(void)
{
    asm volatile("barrier.cluster.arrive.release;\n"
                 "barrier.cluster.wait.acquire;\n" ::: "memory");
}

/* mapa + @p mbarrier.arrive.shared::cluster: where `pred` is non-zero, one arrival on the mbarrier
 * at .shared address bar (this block's layout) in the shared memory of the cluster's block of rank
 * `rank`, with the default semantics (.release at .cta scope), as CUTLASS's
 * ClusterBarrier::arrive(cta_id, pred) does for a consumer freeing a multicast stage. The hazard
 * it guards is write-after-read: the warp's reads of the stage (its wgmma) have completed before
 * it arrives (wgmma.wait_group returned them), and the other block's producer issues its next TMA
 * write into the stage only after the phase it waits on has flipped. A .cta release paired with
 * the producer's .cta acquire is not, in the PTX memory model's terms, a synchronisation across
 * the two blocks; what makes the protocol safe is that order of completed reads and later writes,
 * as in CUTLASS's pipelines. The predicate is inside the instruction, not a branch, so the warp
 * never diverges (the
 * warpgroup's .sync.aligned instructions that follow need it converged). rank must name a block
 * of the cluster in every lane, predicated off or not (mapa runs in all). */
static __device__ __forceinline__ void mbar_arrive_remote_if(uint32_t bar, uint32_t rank, uint32_t pred)
{
    asm volatile("{\n"
                 "  .reg .b32 remote;\n"
                 "  .reg .pred p;\n"
                 "  setp.ne.u32 p, %2, 0;\n"
                 "  mapa.shared::cluster.u32 remote, %0, %1;\n"
                 "  @p mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
                 "}\n" :: "r"(bar), "r"(rank), "r"(pred) : "memory");
}

/* cp.async.bulk.tensor (.4d, .tile, global -> shared::cluster, .multicast::cluster): the box at
 * element coordinates (c0, c1, c2, c3) of the tensor *map, read once, written to shared memory
 * offset dst of every block whose bit is set in cta_mask (bit r: rank r), each completing the
 * box's bytes on its own mbarrier at offset bar. Issued by one thread. */
static __device__ __forceinline__ void tma_load_4d_multicast(uint32_t dst, const void *map, uint32_t bar,
                                                             int c0, int c1, int c2, int c3,
                                                             uint16_t cta_mask)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%2, %3, %4, %5}], [%6], %7;\n"
                 :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar), "h"(cta_mask)
                 : "memory");
}

#endif
