/* named_barrier.cuh: barriers among some warps of a block, and the proxy fence that hands shared
 * memory written by ordinary stores over to the asynchronous units, as inline PTX for sm_90.
 *
 * A block has 16 hardware barriers; __syncthreads() is barrier 0 over all threads. bar.sync and
 * bar.arrive name another one and a thread count (a multiple of 32): the barrier completes when
 * that many threads have arrived, and only bar.sync waits for it. Two warpgroups take turns with
 * them (ping-pong), one warpgroup syncs its own warps without stopping the others.
 *
 * Sources: PTX ISA 8.x/9.x, "Parallel Synchronization and Communication Instructions: bar,
 * barrier" (bar.sync, bar.arrive) and "Parallel Synchronization and Communication Instructions:
 * membar/fence" (fence.proxy.async).
 */
#ifndef ATTN_SM90_NAMED_BARRIER_CUH
#define ATTN_SM90_NAMED_BARRIER_CUH

#include <stdint.h>

/* PTX "bar, barrier" (bar.sync with a thread count): wait until `count` threads (a multiple of
 * 32, this warp's included) have arrived at hardware barrier `id` (1..15; 0 is __syncthreads'). */
static __device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t count)
{
    asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(count) : "memory");
}

/* PTX "bar, barrier" (bar.arrive): count this warp's threads towards the `count` of barrier `id`
 * without waiting for it. */
static __device__ __forceinline__ void named_barrier_arrive(uint32_t id, uint32_t count)
{
    asm volatile("bar.arrive %0, %1;\n" :: "r"(id), "r"(count) : "memory");
}

/* PTX "membar/fence" (fence.proxy.async.shared::cta): orders this thread's earlier ordinary
 * (generic-proxy) shared-memory accesses before later asynchronous-proxy accesses (a TMA copy
 * into the same bytes), once the release/acquire of an mbarrier has passed between them. */
static __device__ __forceinline__ void fence_proxy_async_smem(void)
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

#endif
