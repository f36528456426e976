/* occupancy.h: theoretical occupancy of a kernel launch, from NVIDIA's occupancy calculator
 * (cuda_occupancy.h, header-only, used here from C), with the kernel's own shared-memory limit
 * config — and, side by side, the number torch.profiler (Kineto) prints for the same record.
 *
 * Why both: Kineto calls the calculator with FUNC_SHMEM_LIMIT_DEFAULT and
 * maxDynamicSharedSizeBytes = 0 (libkineto DeviceProperties.cpp), so every kernel that opted into
 * more than the default 48 KiB per block computes as 0 resident blocks -> "0%" (the cuDNN SDPA
 * kernel, FlashAttention at head_dim 128). We pass CUPTI's shmemLimitConfig (opt-in) and the
 * opt-in limit, and get the real number. See 06_cudnn/README.md ("The real occupancy, and why
 * torch.profiler says 0%") and Kineto's libkineto/src/DeviceProperties.cpp.
 *
 * H200 (sm_90, 132 SMs, 64 warps and 65536 registers per SM, 227 KiB opt-in per block):
 *   255 regs x 128 threads, 48 KiB           -> 2 blocks/SM, 8 warps, 12.50%, registers
 *   168 regs x 384 threads, 134144 B opt-in  -> 1 block/SM, 12 warps, 18.75%,
 *                                               registers + shared memory (Kineto: 0%)
 */
#ifndef ATTN_OCCUPANCY_H
#define ATTN_OCCUPANCY_H

#include <cuda_runtime_api.h>

#include "profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One launch configuration, as a CUPTI kernel record gives it. */
typedef struct {
    int threads;               /* per block (blockX*blockY*blockZ) */
    int registers;             /* per thread */
    int static_smem;           /* bytes per block */
    int dynamic_smem;          /* bytes per block */
    int smem_optin;            /* record's shmemLimitConfig was opt-in */
    long long grid_blocks;     /* gridX*gridY*gridZ (only for Kineto's grid averages) */
} occ_kernel;

/* Limiting-factor bits, as cuda_occupancy.h's cudaOccLimitingFactor. */
enum { OCC_LIM_WARPS = 0x1, OCC_LIM_REGISTERS = 0x2, OCC_LIM_SHARED_MEMORY = 0x4,
       OCC_LIM_BLOCKS = 0x8, OCC_LIM_BARRIERS = 0x10 };

typedef struct {
    int ok;                    /* 0: the calculator refused the input (fields below are 0) */
    int optin;                 /* computed with the opt-in per-block limit */
    /* ours: the kernel's real shared-memory config */
    int active_blocks;         /* resident blocks per SM */
    int active_warps;          /* resident warps per SM */
    double occupancy_pct;      /* theoretical: active threads / max threads per SM x 100 */
    unsigned limiter_flags;    /* OCC_LIM_* bits of the factors at the minimum */
    char limiter[64];          /* "registers", "registers + shared memory", ... */
    int block_limit_regs, block_limit_smem, block_limit_warps, block_limit_blocks;
    /* Kineto's grid averages and its "est. achieved occupancy %" formula:
     *   round(100 * min(active, blocks_per_sm) * threads / max threads per SM) */
    double blocks_per_sm;      /* grid_blocks / SMs */
    double warps_per_sm;       /* blocks_per_sm * threads / 32 */
    int est_pct;               /* that formula with our active blocks (what our trace prints) */
    int kineto_active_blocks;  /* Kineto's inputs: default config, no dynamic opt-in */
    int kineto_pct;            /* what torch.profiler prints for this record */
} occ_result;

/* Fills *out for kernel k on device prop. Returns 0, or -1 when the calculator rejects the input
 * (unknown architecture, zero threads); out->ok says the same. */
int occupancy_compute(const struct cudaDeviceProp *prop, const occ_kernel *k, occ_result *out);

/* occupancy_compute for a kernel record of the profile. */
int occupancy_of_activity(const struct cudaDeviceProp *prop, const gpu_activity *a, occ_result *out);

/* Resident blocks per SM with a zeroed cudaOccDeviceState (carveoutConfig 0 = "max L1"): the C
 * pitfall occupancy_compute avoids by setting SHAREDMEM_CARVEOUT_DEFAULT. For the unit tests. */
int occupancy_blocks_zeroed_state(const struct cudaDeviceProp *prop, const occ_kernel *k);

/* The limiter bits as words joined by " + " ("none" if 0). */
void occupancy_limiter_name(unsigned flags, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
