/* occupancy.c: theoretical occupancy from cuda_occupancy.h in C (see occupancy.h).
 *
 * cuda_occupancy.h is C-compatible, but its structs only get their defaults from C++
 * constructors. In C everything is zeroed by hand, and two fields must then be set explicitly:
 *   - cudaOccDeviceState.carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT (-1): zero means
 *     SHAREDMEM_CARVEOUT_MAX_L1, the smallest shared-memory carveout (1 block instead of 2 for
 *     the 255-register FlashAttention kernel);
 *   - cudaOccFuncAttributes.maxThreadsPerBlock = INT_MAX (no per-function block-size limit).
 * numBlockBarriers stays 0 (no barrier limit), as in Kineto's default-constructed attributes.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cuda_occupancy.h>

#include "occupancy.h"

static void device_props(const struct cudaDeviceProp *p, cudaOccDeviceProp *d)
{
    memset(d, 0, sizeof *d);
    d->computeMajor = p->major;
    d->computeMinor = p->minor;
    d->maxThreadsPerBlock = p->maxThreadsPerBlock;
    d->maxThreadsPerMultiprocessor = p->maxThreadsPerMultiProcessor;
    d->regsPerBlock = p->regsPerBlock;
    d->regsPerMultiprocessor = p->regsPerMultiprocessor;
    d->warpSize = p->warpSize;
    d->sharedMemPerBlock = p->sharedMemPerBlock;
    d->sharedMemPerMultiprocessor = p->sharedMemPerMultiprocessor;
    d->numSms = p->multiProcessorCount;
    d->sharedMemPerBlockOptin = p->sharedMemPerBlockOptin;
    d->reservedSharedMemPerBlock = p->reservedSharedMemPerBlock;
}

/* optin = 1: the kernel opted into the larger per-block limit (cudaFuncAttributeMax-
 * DynamicSharedMemorySize); its dynamic allowance is then everything the opt-in limit leaves. */
static void func_attrs(const struct cudaDeviceProp *p, const occ_kernel *k, int optin,
                       cudaOccFuncAttributes *f)
{
    memset(f, 0, sizeof *f);
    f->maxThreadsPerBlock = INT_MAX;
    f->numRegs = k->registers;
    f->sharedSizeBytes = (size_t)k->static_smem;
    f->partitionedGCConfig = PARTITIONED_GC_OFF;
    f->shmemLimitConfig = optin ? FUNC_SHMEM_LIMIT_OPTIN : FUNC_SHMEM_LIMIT_DEFAULT;
    f->maxDynamicSharedSizeBytes = 0;
    if (optin && p->sharedMemPerBlockOptin > (size_t)k->static_smem)
        f->maxDynamicSharedSizeBytes = p->sharedMemPerBlockOptin - (size_t)k->static_smem;
    f->numBlockBarriers = 0;
}

static int kineto_round(double occ) { return (int)(0.5 + occ * 100.0); }

void occupancy_limiter_name(unsigned flags, char *buf, size_t len)
{
    static const struct { unsigned bit; const char *word; } words[] = {
        { OCC_LIM_REGISTERS, "registers" }, { OCC_LIM_SHARED_MEMORY, "shared memory" },
        { OCC_LIM_WARPS, "warps" }, { OCC_LIM_BLOCKS, "blocks" }, { OCC_LIM_BARRIERS, "barriers" },
    };
    size_t o = 0;
    if (len == 0) return;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        if (!(flags & words[i].bit)) continue;
        int n = snprintf(buf + o, len - o, "%s%s", o ? " + " : "", words[i].word);
        if (n < 0 || (size_t)n >= len - o) return;
        o += (size_t)n;
    }
    if (o == 0) snprintf(buf, len, "none");
}

int occupancy_compute(const struct cudaDeviceProp *prop, const occ_kernel *k, occ_result *out)
{
    memset(out, 0, sizeof *out);
    const int sms = prop->multiProcessorCount;
    out->blocks_per_sm = sms > 0 ? (double)k->grid_blocks / sms : INFINITY;
    out->warps_per_sm = out->blocks_per_sm * k->threads / 32.0;
    out->kineto_pct = -1;
    out->est_pct = -1;
    if (k->threads <= 0 || prop->maxThreadsPerMultiProcessor <= 0) return -1;

    cudaOccDeviceProp dev;
    device_props(prop, &dev);
    cudaOccDeviceState state;
    memset(&state, 0, sizeof state);
    state.cacheConfig = CACHE_PREFER_NONE;
    state.carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT; /* the C pitfall: 0 is "max L1" */

    /* Kineto's inputs: default limit, no dynamic opt-in. */
    cudaOccFuncAttributes fk;
    func_attrs(prop, k, 0, &fk);
    cudaOccResult rk;
    memset(&rk, 0, sizeof rk);
    if (cudaOccMaxActiveBlocksPerMultiprocessor(&rk, &dev, &fk, &state, k->threads,
                                                (size_t)k->dynamic_smem) == CUDA_OCC_SUCCESS) {
        out->kineto_active_blocks = rk.activeBlocksPerMultiprocessor;
        double b = fmin((double)rk.activeBlocksPerMultiprocessor, out->blocks_per_sm);
        out->kineto_pct = kineto_round(b * k->threads / prop->maxThreadsPerMultiProcessor);
    }

    /* Ours: opt-in when the record says so, or when the block needs more than the default. */
    const long long total_smem = (long long)k->static_smem + k->dynamic_smem;
    out->optin = k->smem_optin || total_smem > (long long)prop->sharedMemPerBlock;
    cudaOccFuncAttributes f;
    func_attrs(prop, k, out->optin, &f);
    cudaOccResult r;
    memset(&r, 0, sizeof r);
    if (cudaOccMaxActiveBlocksPerMultiprocessor(&r, &dev, &f, &state, k->threads,
                                                (size_t)k->dynamic_smem) != CUDA_OCC_SUCCESS)
        return -1;
    out->ok = 1;
    out->active_blocks = r.activeBlocksPerMultiprocessor;
    const int warps_per_block = (k->threads + prop->warpSize - 1) / prop->warpSize;
    out->active_warps = out->active_blocks * warps_per_block;
    out->occupancy_pct = 100.0 * out->active_blocks * k->threads / prop->maxThreadsPerMultiProcessor;
    out->limiter_flags = r.limitingFactors;
    occupancy_limiter_name(r.limitingFactors, out->limiter, sizeof out->limiter);
    out->block_limit_regs = r.blockLimitRegs;
    out->block_limit_smem = r.blockLimitSharedMem;
    out->block_limit_warps = r.blockLimitWarps;
    out->block_limit_blocks = r.blockLimitBlocks;
    double b = fmin((double)out->active_blocks, out->blocks_per_sm);
    out->est_pct = kineto_round(b * k->threads / prop->maxThreadsPerMultiProcessor);
    return 0;
}

int occupancy_of_activity(const struct cudaDeviceProp *prop, const gpu_activity *a, occ_result *out)
{
    occ_kernel k;
    k.threads = a->block[0] * a->block[1] * a->block[2];
    k.registers = a->registers;
    k.static_smem = a->static_smem;
    k.dynamic_smem = a->dynamic_smem;
    k.smem_optin = a->smem_optin;
    k.grid_blocks = (long long)a->grid[0] * a->grid[1] * a->grid[2];
    return occupancy_compute(prop, &k, out);
}

int occupancy_blocks_zeroed_state(const struct cudaDeviceProp *prop, const occ_kernel *k)
{
    cudaOccDeviceProp dev;
    device_props(prop, &dev);
    cudaOccDeviceState state;
    memset(&state, 0, sizeof state); /* carveoutConfig = 0 = SHAREDMEM_CARVEOUT_MAX_L1 */
    const long long total_smem = (long long)k->static_smem + k->dynamic_smem;
    cudaOccFuncAttributes f;
    func_attrs(prop, k, k->smem_optin || total_smem > (long long)prop->sharedMemPerBlock, &f);
    cudaOccResult r;
    memset(&r, 0, sizeof r);
    if (cudaOccMaxActiveBlocksPerMultiprocessor(&r, &dev, &f, &state, k->threads,
                                                (size_t)k->dynamic_smem) != CUDA_OCC_SUCCESS)
        return -1;
    return r.activeBlocksPerMultiprocessor;
}
