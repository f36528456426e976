/* tiled_stage.h: the host-side checks and set-up shared by the one-kernel stages that tile the
 * query rows over blocks (04_efficient, 05_flash, 07_hopper): which shapes and devices they run,
 * their zero extra device bytes, and the kernel attributes set once before the first launch.
 *
 * A stage describes its launch at one shape with a tiled_launch and answers its `supports` hook
 * (harness.h) with tiled_supports; every refusal is one line naming the stage and the limit. */
#ifndef ATTN_TILED_STAGE_H
#define ATTN_TILED_STAGE_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *stage;         /* "05_flash": named in every refusal */
    int min_major;             /* compute capability major the kernel needs at least ... */
    int exact_cc;              /* ... 1: exactly min_major.0 (an sm_90a binary runs nowhere else) */
    const char *needs;         /* what the device must have, for the refusal: "compute capability
                                * 8.0 or newer (bf16 mma.sync, ldmatrix, cp.async)" */
    int block_m;               /* query rows per block at this head_dim */
    int persistent;            /* 1: grid = min(SMs, tiles) blocks, so no grid-size limit applies;
                                * 0: grid (batch*heads, query tiles) */
    size_t smem;               /* dynamic shared memory per block in bytes at this head_dim; 0:
                                * none beyond the static (no opt-in check) */
} tiled_launch;

/* The stage's supports hook for head_dim 64 and 128 (harness.h: prop NULL checks the head_dim
 * alone, without a device). With the device's properties: the compute capability, the dynamic
 * shared memory against the opt-in limit, and (not persistent) ceil(seq/block_m) query tiles
 * within the grid's y limit and batch*heads within its x limit. 0 if the shape runs, else 1 with
 * one line in why. */
int tiled_supports(const tiled_launch *l, const attn_shape *s, const struct cudaDeviceProp *prop,
                   char *why, size_t why_len);

/* The stages' extra_bytes hook: S and P never leave the chip, 0 bytes. */
size_t tiled_no_extra_bytes(const attn_shape *s);

/* Once per kernel before its first launch: opt it into `smem` bytes of dynamic shared memory
 * (over the default 48 KiB; skipped when 0) and, if max_shared_carveout, prefer the largest
 * shared-memory carveout (blocks per SM then limited by registers, not by the L1/shared split).
 * A CUDA error exits 1 (check.h). */
void tiled_kernel_setup(const void *kernel, size_t smem, int max_shared_carveout);

#ifdef __cplusplus
}
#endif
#endif
