/* 02_inplace: 01_naive with one change, the blog's second script (04_b_inplace_ops_attention.py):
 * the mask is applied in place,
 *
 *     scores.masked_fill_(mask, float("-inf"))
 *
 * so ATen no longer clones the scaled scores: the Memcpy DtoD of 01 is gone and the fill kernel
 * writes straight into the scaled scores. Everything else (the ops in common/eager/eager_ops.cu,
 * the GEMM plans, the buffers) is 01's.
 *
 * GPU activities per step: GEMM, mul kernel, masked-fill kernel, softmax kernel, GEMM = 5.
 *
 * Buffers (eager_setup), as the caching allocator would hand them out: the scores in s_a; the
 * scaled (then masked, in place) scores in s_b; the softmax output back in s_a. extra_bytes is
 * 01's: 2 · batch·heads·seq²·2 + seq² (mask); no cuBLASLt workspace by default (with
 * ATTN_GEMM_WORKSPACE=1, plus what the picked algorithms ask for: 4 bytes on the H200). In eager
 * PyTorch the copy of 01 costs time and bandwidth, not peak memory: its block comes from the cache.
 */
#include <math.h>

#include <cuda_runtime.h>

#include "eager/eager_ops.h"
#include "harness.h"

static void inplace_forward(attn_problem *p)
{
    eager_state *st = (eager_state *)p->state;
    const attn_shape *s = &p->shape;
    const size_t rows = (size_t)s->batch * s->heads * s->seq;

    prof_range_push("matmul");                       /* scores = q @ k.transpose(-2, -1) */
    eager_bmm_run(&st->qk, p->q, p->k, st->s_a, p->stream);
    prof_range_pop();

    prof_range_push("mul");                          /* scores = scores * scale */
    eager_mul_bf16(st->s_b, st->s_a, p->scale, st->s_elems, p->stream);
    prof_range_pop();

    prof_range_push("masked_fill_");                 /* scores.masked_fill_(mask, -inf) */
    eager_masked_fill_bf16(st->s_b, st->mask, -INFINITY, (size_t)s->batch * s->heads, s->seq,
                           p->stream);
    prof_range_pop();

    prof_range_push("softmax");                      /* attn = torch.softmax(scores, dim=-1) */
    eager_softmax_rows_bf16(st->s_a, st->s_b, rows, s->seq, p->stream);
    prof_range_pop();

    prof_range_push("matmul");                       /* out = attn @ v */
    eager_bmm_run(&st->pv, st->s_a, p->v, p->o, p->stream);
    prof_range_pop();
}

const attn_stage ATTN_STAGE_SYMBOL = {
    /* name */        "02_inplace",
    /* idea */        "01 with the mask applied in place (masked_fill_): the DtoD copy is gone",
    /* supports */    eager_supports,
    /* extra_bytes */ eager_extra_bytes,
    /* setup */       eager_setup,
    /* forward */     inplace_forward,
    /* teardown */    eager_teardown,
    /* parse_flag */  NULL,
    /* flag_help */   NULL,
    /* tolerance */   0.0,
    /* env_help */    EAGER_ENV_HELP,
    /* check_env */   eager_check_env,
};
