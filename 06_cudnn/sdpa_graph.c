/* sdpa_graph.c: the 14-operation causal SDPA graph, heuristics and plan (see sdpa_graph.h).
 *
 * Tensor table and operation list (drawn in 06_cudnn/README.md, "The graph"), following
 * cudnn-frontend's CompositeSDPANode (include/cudnn_frontend/node/scaled_dot_product_flash_attention.h),
 * CompositeDiagonalBandMaskNode and CompositeSoftmaxNode. Two details are not optional (cuDNN
 * finds no engine without them, validated on 9.14 and 9.19): the softmax keeps its LOG/ADD
 * log-sum-exp branch as a virtual tensor, and P (the A operand of the second matmul) is bf16.
 */
#include "sdpa_graph.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Virtual tensors (they never leave the fused kernel); uids only need to be distinct. */
enum {
    UID_S = 100,           /* Q·Kᵀ                     FLOAT   [B,H,S,S] */
    UID_S_SCALED,          /* S·scale                  FLOAT   [B,H,S,S] */
    UID_ROW,               /* query index (axis 2)     INT32   [B,H,S,S] */
    UID_COL,               /* key index (axis 3)       INT32   [B,H,S,S] */
    UID_KEEP,              /* row >= col               BOOLEAN [B,H,S,S] */
    UID_S_MASKED,          /* keep ? S·scale : -inf    FLOAT   [B,H,S,S] */
    UID_ROW_MAX,           /* max over keys            FLOAT   [B,H,S,1] */
    UID_S_SHIFTED,         /* S - max                  FLOAT   [B,H,S,S] */
    UID_EXP,               /* exp(S - max)             FLOAT   [B,H,S,S] */
    UID_ROW_SUM,           /* sum over keys            FLOAT   [B,H,S,1] */
    UID_LOG_SUM,           /* log(sum)                 FLOAT   [B,H,S,1] */
    UID_LSE,               /* max + log(sum)           FLOAT   [B,H,S,1] */
    UID_P                  /* exp / sum                BF16    [B,H,S,S] */
};

/* Builds the tensors and the 14 operations and returns the finalized operation graph, or NULL
 * with why set if cuDNN refuses it. */
static cudnnBackendDescriptor_t build_graph(be_arena *a, cudnnHandle_t handle, const attn_shape *s,
                                            char *why, size_t why_len)
{
    const int64_t B = s->batch, H = s->heads, S = s->seq, D = s->head_dim;
    const int64_t bhsd[4] = {B, H, S, D}, bhsd_str[4] = {H * S * D, S * D, D, 1};
    const int64_t kt[4] = {B, H, D, S}, kt_str[4] = {H * S * D, S * D, 1, D};   /* K seen as Kᵀ */
    const int64_t bhss[4] = {B, H, S, S}, bhss_str[4] = {H * S * S, S * S, S, 1};
    const int64_t bhs1[4] = {B, H, S, 1}, bhs1_str[4] = {H * S, S, 1, 1};
    const int64_t one[4] = {1, 1, 1, 1};
    const cudnnDataType_t BF16 = CUDNN_DATA_BFLOAT16, F32 = CUDNN_DATA_FLOAT;

    cudnnBackendDescriptor_t q = be_tensor(a, SDPA_UID_Q, BF16, bhsd, bhsd_str, 0);
    cudnnBackendDescriptor_t k_t = be_tensor(a, SDPA_UID_K, BF16, kt, kt_str, 0);
    cudnnBackendDescriptor_t v = be_tensor(a, SDPA_UID_V, BF16, bhsd, bhsd_str, 0);
    cudnnBackendDescriptor_t o = be_tensor(a, SDPA_UID_O, BF16, bhsd, bhsd_str, 0);
    cudnnBackendDescriptor_t scale = be_tensor(a, SDPA_UID_SCALE, F32, one, one, BE_BY_VALUE);
    cudnnBackendDescriptor_t neg_inf = be_tensor(a, SDPA_UID_NEG_INF, F32, one, one, BE_BY_VALUE);

    cudnnBackendDescriptor_t s_raw = be_tensor(a, UID_S, F32, bhss, bhss_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t s_scaled = be_tensor(a, UID_S_SCALED, F32, bhss, bhss_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t row = be_tensor(a, UID_ROW, CUDNN_DATA_INT32, bhss, bhss_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t col = be_tensor(a, UID_COL, CUDNN_DATA_INT32, bhss, bhss_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t keep = be_tensor(a, UID_KEEP, CUDNN_DATA_BOOLEAN, bhss, bhss_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t s_masked = be_tensor(a, UID_S_MASKED, F32, bhss, bhss_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t row_max = be_tensor(a, UID_ROW_MAX, F32, bhs1, bhs1_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t s_shifted = be_tensor(a, UID_S_SHIFTED, F32, bhss, bhss_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t e = be_tensor(a, UID_EXP, F32, bhss, bhss_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t row_sum = be_tensor(a, UID_ROW_SUM, F32, bhs1, bhs1_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t log_sum = be_tensor(a, UID_LOG_SUM, F32, bhs1, bhs1_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t lse = be_tensor(a, UID_LSE, F32, bhs1, bhs1_str, BE_VIRTUAL);
    cudnnBackendDescriptor_t p = be_tensor(a, UID_P, BF16, bhss, bhss_str, BE_VIRTUAL);

    /* Operations in cudnn-frontend's order (one statement each: creation order is deterministic). */
    cudnnBackendDescriptor_t ops[SDPA_N_OPS];
    int n = 0;
    /* S = Q·Kᵀ, then · scale */
    ops[n++] = be_matmul(a, q, k_t, s_raw);
    ops[n++] = be_pointwise(a, CUDNN_POINTWISE_MUL, F32, s_raw, scale, NULL, s_scaled);
    /* causal mask, top-left: keep key col <= query row, else -inf */
    ops[n++] = be_gen_index(a, s_scaled, 2, row);
    ops[n++] = be_gen_index(a, s_scaled, 3, col);
    ops[n++] = be_pointwise(a, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, NULL, keep);
    ops[n++] = be_pointwise(a, CUDNN_POINTWISE_BINARY_SELECT, F32, s_scaled, neg_inf, keep, s_masked);
    /* softmax with its log-sum-exp branch (virtual: inference needs no stats output) */
    ops[n++] = be_reduction(a, CUDNN_REDUCE_TENSOR_MAX, s_masked, row_max);
    ops[n++] = be_pointwise(a, CUDNN_POINTWISE_SUB, F32, s_masked, row_max, NULL, s_shifted);
    ops[n++] = be_pointwise(a, CUDNN_POINTWISE_EXP, F32, s_shifted, NULL, NULL, e);
    ops[n++] = be_reduction(a, CUDNN_REDUCE_TENSOR_ADD, e, row_sum);
    ops[n++] = be_pointwise(a, CUDNN_POINTWISE_LOG, F32, row_sum, NULL, NULL, log_sum);
    ops[n++] = be_pointwise(a, CUDNN_POINTWISE_ADD, F32, row_max, log_sum, NULL, lse);
    ops[n++] = be_pointwise(a, CUDNN_POINTWISE_DIV, F32, e, row_sum, NULL, p);
    /* O = P·V */
    ops[n++] = be_matmul(a, p, v, o);
    return be_op_graph(a, handle, ops, n, why, why_len);
}

/* cuDNN refused the problem: one line with its reason, exit 2. */
static void refuse(const attn_shape *s, const char *why)
{
    const size_t v = cudnnGetVersion();   /* 91400 = 9.14.0 */
    die_usage("06_cudnn: cuDNN %zu.%zu.%zu has no engine for causal SDPA at batch %d, heads %d, seq %d, "
              "head_dim %d: %s", v / 10000, v % 10000 / 100, v % 100,
              s->batch, s->heads, s->seq, s->head_dim, why);
}

void sdpa_plan_build(sdpa_plan *p, cudnnHandle_t handle, const attn_shape *s)
{
    char why[1536] = {0};
    memset(p, 0, sizeof *p);

    cudnnBackendDescriptor_t graph = build_graph(&p->arena, handle, s, why, sizeof why);
    if (!graph)
        refuse(s, why);

    cudnnBackendDescriptor_t *cfgs = NULL;
    p->returned = be_heuristics(&p->arena, graph, CUDNN_HEUR_MODE_A, &cfgs, &p->offered, why, sizeof why);
    if (p->returned == 0) {
        free(cfgs);
        refuse(s, why);
    }

    /* The first config that finalizes wins; finalizing is where cuDNN generates the kernel. */
    for (int i = 0; i < p->returned && !p->plan; i++) {
        p->plan = be_plan(&p->arena, cfgs[i], why, sizeof why);
        if (p->plan) {
            p->chosen = i;
            be_engine_read(cfgs[i], &p->engine);
        }
    }
    free(cfgs);
    if (!p->plan)
        refuse(s, why);
    p->workspace_bytes = be_plan_workspace(p->plan);
}

void sdpa_plan_free(sdpa_plan *p)
{
    be_arena_free(&p->arena);
    memset(p, 0, sizeof *p);
}
