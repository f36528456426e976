/* sdpa_graph.h: causal bf16 SDPA forward as a cuDNN 9 operation graph, and its execution plan.
 *
 * The graph is the 14-operation "composite" SDPA that cudnn-frontend's CompositeSDPANode emits for
 * causal inference on cuDNN < 9.21 (the single SDPA_FWD operation cannot express a causal mask
 * before 9.21): S = Q·Kᵀ, S·scale, causal mask (GEN_INDEX row/col, CMP_GE, BINARY_SELECT -inf),
 * softmax (MAX, SUB, EXP, ADD, LOG + ADD into a virtual log-sum-exp, DIV), O = P·V. cuDNN fuses
 * it into one flash-attention kernel. Source: cudnn-frontend's CompositeSDPANode (validated on the
 * H200); the graph is drawn and explained in 06_cudnn/README.md, "The graph".
 *
 * Tensors: Q, K, V, O bf16 [batch, heads, seq, head_dim], contiguous; K is passed as the same
 * buffer, described as Kᵀ [batch, heads, head_dim, seq] through swapped strides (no copy).
 */
#ifndef ATTN_CUDNN_SDPA_GRAPH_H
#define ATTN_CUDNN_SDPA_GRAPH_H

#include "harness.h"
#include "builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The non-virtual tensors: what the variant pack binds at every execute. */
enum {
    SDPA_UID_Q = 1,        /* device bf16 */
    SDPA_UID_K = 2,        /* device bf16, seen as Kᵀ */
    SDPA_UID_V = 3,        /* device bf16 */
    SDPA_UID_O = 4,        /* device bf16 */
    SDPA_UID_SCALE = 5,    /* host float, by value: 1/sqrt(head_dim) */
    SDPA_UID_NEG_INF = 6,  /* host float, by value: -inf, the mask's fill value */
    SDPA_N_IO = 6
};

#define SDPA_N_OPS 14

/* One built plan and everything it was built from. */
typedef struct {
    be_arena arena;                  /* every descriptor behind the plan */
    cudnnBackendDescriptor_t plan;   /* finalized execution plan */
    int64_t workspace_bytes;         /* device workspace the plan needs at execute */
    int64_t offered;                 /* engine configs the heuristics announced */
    int returned;                    /* ... and handed back after their support checks */
    int chosen;                      /* index of the first config that finalized */
    be_engine_info engine;           /* the chosen config, read back from cuDNN */
} sdpa_plan;

/* Builds the graph for shape s on handle's device, asks heuristics mode A for engine configs, and
 * finalizes the first one that works (cudnn-frontend's HEURISTICS_CHOICE policy). If cuDNN refuses
 * the problem (graph not supported, no engine config, every config's plan NOT_SUPPORTED) it prints
 * one line with cuDNN's reason (the last config's) on stderr and exits 2 (die_usage). Other cuDNN
 * failures, a plan finalize out of memory or with an internal error included, exit 1. */
void sdpa_plan_build(sdpa_plan *p, cudnnHandle_t handle, const attn_shape *s);

/* Destroys the plan and all its descriptors; *p is zeroed. */
void sdpa_plan_free(sdpa_plan *p);

#ifdef __cplusplus
}
#endif
#endif
