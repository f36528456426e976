/* tiled_stage.c: the shared supports / extra_bytes / set-up code of 04, 05 and 07 (tiled_stage.h). */
#include "tiled_stage.h"

#include <stdio.h>
#include <cuda_runtime.h>

#include "check.h"

int tiled_supports(const tiled_launch *l, const attn_shape *s, const struct cudaDeviceProp *prop,
                   char *why, size_t why_len)
{
    if (s->head_dim != 64 && s->head_dim != 128) {
        snprintf(why, why_len, "head_dim %d is not supported by %s (supported: 64, 128)",
                 s->head_dim, l->stage);
        return 1;
    }
    if (!prop) return 0; /* the device checks follow */
    if (prop->major < l->min_major || (l->exact_cc && (prop->major != l->min_major || prop->minor != 0))) {
        snprintf(why, why_len, "%s needs %s; %s is %d.%d", l->stage, l->needs, prop->name,
                 prop->major, prop->minor);
        return 1;
    }
    if (l->smem > prop->sharedMemPerBlockOptin) {
        snprintf(why, why_len, "%s at head_dim %d needs %zu bytes of shared memory per block; %s "
                 "allows %zu", l->stage, s->head_dim, l->smem, prop->name,
                 prop->sharedMemPerBlockOptin);
        return 1;
    }
    if (l->persistent) return 0;   /* grid = min(SMs, tiles) blocks */
    const int bm = l->block_m;
    const long long q_tiles = ((long long)s->seq + bm - 1) / bm;
    if (q_tiles > prop->maxGridSize[1]) {
        snprintf(why, why_len, "seq %d is too long for %s (at most %lld: %d query tiles of %d "
                 "rows)", s->seq, l->stage, (long long)prop->maxGridSize[1] * bm,
                 prop->maxGridSize[1], bm);
        return 1;
    }
    if ((long long)s->batch * s->heads > prop->maxGridSize[0]) {
        snprintf(why, why_len, "batch*heads %lld is too large for %s (at most %d)",
                 (long long)s->batch * s->heads, l->stage, prop->maxGridSize[0]);
        return 1;
    }
    return 0;
}

size_t tiled_no_extra_bytes(const attn_shape *s)
{
    (void)s;
    return 0;
}

void tiled_kernel_setup(const void *kernel, size_t smem, int max_shared_carveout)
{
    if (smem > 0)
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
    if (max_shared_carveout)
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared));
}
