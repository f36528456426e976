/* builder.h: a small builder for cuDNN 9 backend descriptors, in C.
 *
 * cuDNN's backend API ("graph API", cudnn_graph.h) is a set of opaque descriptors filled one
 * attribute at a time with cudnnBackendSetAttribute and sealed with cudnnBackendFinalize. This file
 * gives one helper per descriptor kind the attention graph needs (tensor, pointwise, reduction,
 * matmul, operation graph, heuristics, engine config read-back, execution plan, variant pack), each
 * setting the attributes in the order cudnn-frontend sets them (NVIDIA cuDNN docs, "Backend
 * Descriptor Types"; the call sequence is walked through in 06_cudnn/README.md, "Building it").
 *
 * Ownership: every descriptor a helper creates is recorded in a be_arena; be_arena_free destroys
 * them all (newest first). A finalized execution plan needs the descriptors it was built from to
 * stay alive, so an arena lives exactly as long as its plan.
 *
 * Errors: every cuDNN status is checked. A failure exits 1 through CUDNN_CHECK (check.h), with
 * cudnnGetLastErrorString's detail, except where cuDNN *refuses* the problem (a status of the
 * NOT_SUPPORTED family while finalizing the graph, the heuristics or a plan; no engine config
 * returned): those helpers return NULL / 0 and write cuDNN's reason into `why`, so the caller can
 * try the next engine config or exit 2 (bad input).
 *
 * Every tensor of the attention graph is rank 4, so the tensor helper takes exactly 4 dims.
 */
#ifndef ATTN_CUDNN_BUILDER_H
#define ATTN_CUDNN_BUILDER_H

#include <stddef.h>
#include <stdint.h>
#include <cudnn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The descriptors behind one plan. Zero-initialize ({0}) before first use. */
typedef struct {
    cudnnBackendDescriptor_t *desc;
    size_t n, cap;
} be_arena;

/* Destroys every descriptor in the arena (newest first) and empties it; the arena can be reused. */
void be_arena_free(be_arena *a);

/* Tensor flags. */
enum {
    BE_VIRTUAL  = 1,   /* lives only inside the fused kernel: no pointer in the variant pack */
    BE_BY_VALUE = 2    /* a scalar passed as a host pointer in the variant pack (scale, -inf) */
};

/* A finalized rank-4 tensor descriptor: data type, dims, strides (elements), unique id, 16-byte
 * alignment (cudnn-frontend's default), flags BE_VIRTUAL / BE_BY_VALUE. */
cudnnBackendDescriptor_t be_tensor(be_arena *a, int64_t uid, cudnnDataType_t type,
                                   const int64_t dims[4], const int64_t strides[4], unsigned flags);

/* A finalized pointwise operation y = mode(x[, b][, t]) computed in math_prec. b is NULL for
 * unary modes (EXP, LOG), t is NULL except for BINARY_SELECT (y = t ? x : b). */
cudnnBackendDescriptor_t be_pointwise(be_arena *a, cudnnPointwiseMode_t mode, cudnnDataType_t math_prec,
                                      cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                      cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y);

/* A finalized GEN_INDEX pointwise operation: y[...] = the index of the element along `axis` of x's
 * shape (axis 2 = query row, axis 3 = key column for a [B,H,S,S] score tensor). */
cudnnBackendDescriptor_t be_gen_index(be_arena *a, cudnnBackendDescriptor_t x, int64_t axis,
                                      cudnnBackendDescriptor_t y);

/* A finalized reduction operation y = reduce_op(x) over the dims where y has extent 1, in FLOAT. */
cudnnBackendDescriptor_t be_reduction(be_arena *a, cudnnReduceTensorOp_t reduce_op,
                                      cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y);

/* A finalized batched matmul operation c = a_mat · b_mat over the last two dims, FLOAT accumulate. */
cudnnBackendDescriptor_t be_matmul(be_arena *a, cudnnBackendDescriptor_t a_mat,
                                   cudnnBackendDescriptor_t b_mat, cudnnBackendDescriptor_t c);

/* A finalized operation graph of n_ops operations on handle. NULL if cuDNN refuses the graph (a
 * NOT_SUPPORTED status): why holds the reason. */
cudnnBackendDescriptor_t be_op_graph(be_arena *a, cudnnHandle_t handle,
                                     const cudnnBackendDescriptor_t *ops, int n_ops,
                                     char *why, size_t why_len);

/* Asks cuDNN's heuristics (mode, e.g. CUDNN_HEUR_MODE_A) for engine configs for graph, best first.
 * Returns how many it handed back and sets *cfgs to a malloc'd array of them (free() it; the
 * descriptors belong to the arena) and *offered to how many it first announced (it can return fewer
 * after its support checks, even 0). 0 with why set: cuDNN refused (no engine for this graph). */
int be_heuristics(be_arena *a, cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode,
                  cudnnBackendDescriptor_t **cfgs, int64_t *offered, char *why, size_t why_len);

/* A finalized execution plan for one engine config (this is where cuDNN generates and compiles the
 * kernel), or NULL with why set if cuDNN does not support this config (a CUDNN_STATUS_NOT_SUPPORTED*
 * status: the caller tries the next config). Any other failure (out of memory, internal error)
 * exits 1 through check_fail, like CUDNN_CHECK. */
cudnnBackendDescriptor_t be_plan(be_arena *a, cudnnBackendDescriptor_t cfg, char *why, size_t why_len);

/* The device workspace (bytes) a finalized plan needs. */
int64_t be_plan_workspace(cudnnBackendDescriptor_t plan);

/* What an engine config holds, read back from cuDNN (for printing). */
#define BE_MAX_KNOBS 16
typedef struct {
    int64_t engine;                    /* CUDNN_ATTR_ENGINE_GLOBAL_INDEX */
    int n_knobs;
    int knob_type[BE_MAX_KNOBS];       /* cudnnBackendKnobType_t */
    int64_t knob_value[BE_MAX_KNOBS];
    int tensor_core;                   /* numerical note TENSOR_CORE */
    int runtime_compiled;              /* behavior note RUNTIME_COMPILATION (NVRTC at plan build) */
} be_engine_info;

void be_engine_read(cudnnBackendDescriptor_t cfg, be_engine_info *info);

/* "KERNEL_CFG", "TILE_SIZE", ... for a cudnnBackendKnobType_t value, or NULL if unknown. */
const char *be_knob_name(int knob_type);

/* A finalized variant pack: n (uid, pointer) pairs plus the device workspace (NULL if 0 bytes).
 * Device tensors take device pointers, BE_BY_VALUE tensors host pointers; they are read at
 * cudnnBackendExecute, so they must stay valid as long as the pack is used. */
cudnnBackendDescriptor_t be_variant_pack(be_arena *a, int n, const int64_t *uids, void *const *ptrs,
                                         void *workspace);

#ifdef __cplusplus
}
#endif
#endif
