/* mbarrier.cuh: the shared-memory barriers that asynchronous copies (TMA) complete on, as inline
 * PTX for sm_90. One mbarrier is 8 bytes of shared memory (8-byte aligned) holding a phase bit,
 * a count of pending arrivals and a count of pending transaction bytes. A phase completes when
 * both counts reach zero; then the phase bit flips and the arrival count is re-armed.
 *
 *   producer:  mbar_arrive_expect_tx(full, bytes); cp.async.bulk.tensor ... [full]  (tma.cuh)
 *   consumer:  mbar_wait(full, parity)  ... use the tile ...  mbar_arrive(empty)
 *
 * Parity: a waiter names the phase it waits for by its parity (0, 1, 0, ...). The k-th completion
 * of a barrier (k = 0, 1, ...) has parity k & 1; on a fresh barrier a wait for parity 1 passes at
 * once (the "previous" phase counts as complete), a wait for parity 0 blocks.
 *
 * Source: PTX ISA 8.x/9.x, "Parallel Synchronization and Communication Instructions: mbarrier"
 * (mbarrier.init, mbarrier.arrive, mbarrier.expect_tx, mbarrier.test_wait/try_wait) and
 * "Parallel Synchronization and Communication Instructions: membar/fence" (fence.mbarrier_init).
 * Addresses are 32-bit .shared addresses (smem_addr in mma_sm80.cuh).
 */
#ifndef ATTN_SM90_MBARRIER_CUH
#define ATTN_SM90_MBARRIER_CUH

#include <stdint.h>

/* PTX "mbarrier.init": arm the barrier for `count` arrivals per phase, phase 0.
 * One thread; follow with mbar_fence_init() and a __syncthreads() before anyone uses it. */
static __device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}

/* PTX "membar/fence" (fence.mbarrier_init): makes the initialised barriers visible to the async proxy
 * (the TMA unit completes transactions on them) and to other threads after the next barrier. */
static __device__ __forceinline__ void mbar_fence_init(void)
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* PTX "mbarrier.arrive" with .expect_tx ("mbarrier.expect_tx"): one arrival that also adds
 * `bytes` to the transaction count of the current phase. The copies that follow subtract their
 * bytes as they land; the phase completes when both counts are zero. */
static __device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n"
                 :: "r"(bar), "r"(bytes) : "memory");
}

/* PTX "mbarrier.arrive": one arrival (release: this thread's earlier memory accesses,
 * e.g. its reads of the tile, are ordered before the arrival). */
static __device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}

/* PTX "mbarrier.test_wait/try_wait" (try_wait.parity): block until the phase of parity `parity` has
 * completed (acquire: the data the phase guarded, e.g. a TMA tile, is visible afterwards).
 * try_wait suspends the thread for a system-dependent time; the loop retries until it passes. */
static __device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile("{\n"
                 "  .reg .pred done;\n"
                 "wait_%=:\n"
                 "  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1;\n"
                 "  @!done bra wait_%=;\n"
                 "}\n" :: "r"(bar), "r"(parity) : "memory");
}

#endif
