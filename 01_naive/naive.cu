/* 01_naive: attention the way eager PyTorch runs the blog's naive module, one op per launch.
 *
 *     S = Q·Kᵀ                      cuBLASLt bf16 batched GEMM (tensor cores, FP32 accumulate)
 *     S = S * scale                 out-of-place: a new score tensor
 *     S = S.masked_fill(mask, -inf) out-of-place: ATen clones S (a device-to-device copy), then
 *                                   fills the copy in place
 *     P = softmax(S, dim=-1)        one warp per row, FP32 math
 *     O = P·V                       cuBLASLt bf16 batched GEMM
 *
 * GPU activities per step: GEMM, mul kernel, Memcpy DtoD, masked-fill kernel, softmax kernel,
 * GEMM = 6 (plus any launch of cuBLASLt's own; see README.md). The ops live in
 * common/eager/eager_ops.cu, shared with 02_inplace; this file is only the forward.
 *
 * Buffers (eager_setup): two score-sized bf16 buffers, used as PyTorch's caching allocator would
 * hand out blocks: the scores in s_a; the scaled scores in s_b (s_a is free again once `scores`
 * is rebound); the masked copy back in s_a; the softmax output in s_b (the scaled scores died with
 * the masked_fill). extra_bytes = 2 · batch·heads·seq²·2 (scores/masked copy, scaled/P) + seq²
 * (mask). No cuBLASLt workspace by default (the GEMMs run algorithms that need none); with
 * ATTN_GEMM_WORKSPACE=1 (or in the fallback when none runs without one), plus what the picked
 * algorithms ask for (4 bytes on the H200).
 */
#include <math.h>

#include <cuda_runtime.h>

#include "check.h"
#include "eager/eager_ops.h"
#include "harness.h"

static void naive_forward(attn_problem *p)
{
    eager_state *st = (eager_state *)p->state;
    const attn_shape *s = &p->shape;
    const size_t rows = (size_t)s->batch * s->heads * s->seq;

    prof_range_push("matmul");                       /* scores = q @ k.transpose(-2, -1) */
    eager_bmm_run(&st->qk, p->q, p->k, st->s_a, p->stream);
    prof_range_pop();

    prof_range_push("mul");                          /* scores = torch.mul(scores, scale) */
    eager_mul_bf16(st->s_b, st->s_a, p->scale, st->s_elems, p->stream);
    prof_range_pop();

    prof_range_push("masked_fill");                  /* scores = scores.masked_fill(mask, -inf) */
    prof_range_push("clone");                        /* ATen: result = self.clone() ... */
    CUDA_CHECK(cudaMemcpyAsync(st->s_a, st->s_b, st->s_elems * 2, cudaMemcpyDeviceToDevice,
                               p->stream));
    prof_range_pop();
    prof_range_push("masked_fill_");                 /* ... result.masked_fill_(mask, value) */
    eager_masked_fill_bf16(st->s_a, st->mask, -INFINITY, (size_t)s->batch * s->heads, s->seq,
                           p->stream);
    prof_range_pop();
    prof_range_pop();

    prof_range_push("softmax");                      /* attn = torch.softmax(scores, dim=-1) */
    eager_softmax_rows_bf16(st->s_b, st->s_a, rows, s->seq, p->stream);
    prof_range_pop();

    prof_range_push("matmul");                       /* out = attn @ v */
    eager_bmm_run(&st->pv, st->s_b, p->v, p->o, p->stream);
    prof_range_pop();
}

const attn_stage ATTN_STAGE_SYMBOL = {
    /* name */        "01_naive",
    /* idea */        "cuBLAS bf16 GEMM Q.K^T -> S; out-of-place scale; out-of-place mask "
                      "(DtoD copy + fill); softmax; GEMM P.V",
    /* supports */    eager_supports,
    /* extra_bytes */ eager_extra_bytes,
    /* setup */       eager_setup,
    /* forward */     naive_forward,
    /* teardown */    eager_teardown,
    /* parse_flag */  NULL,
    /* flag_help */   NULL,
    /* tolerance */   0.0,
    /* env_help */    EAGER_ENV_HELP,
    /* check_env */   eager_check_env,
};
