/* builder.c: one helper per cuDNN backend descriptor kind (see builder.h).
 *
 * Attribute names, types and order follow the cuDNN 9 backend docs and cudnn-frontend's own
 * builders (06_cudnn/README.md, "Building it"). Only API present in cuDNN 9.14 is used (the GPU
 * machine's system library); attributes newer than that are guarded by version checks.
 */
#include "builder.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Set one attribute; a failure names the attribute (CUDNN_CHECK prints the call's text). */
#define BE_SET(desc, attr, type, count, ptr) \
    CUDNN_CHECK(cudnnBackendSetAttribute((desc), attr, type, (count), (ptr)))

/* Room for an engine's numerical and behavior notes (cuDNN 9 defines fewer than 16 of each). */
#define BE_MAX_NOTES 32

/* ---- arena ------------------------------------------------------------------------------------ */

static void arena_push(be_arena *a, cudnnBackendDescriptor_t d)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        cudnnBackendDescriptor_t *grown = (cudnnBackendDescriptor_t *)realloc(a->desc, cap * sizeof *grown);
        if (!grown) {
            fprintf(stderr, "06_cudnn: out of host memory for descriptors\n");
            attn_exit(1);
        }
        a->desc = grown;
        a->cap = cap;
    }
    a->desc[a->n++] = d;
}

static cudnnBackendDescriptor_t create(be_arena *a, cudnnBackendDescriptorType_t type)
{
    cudnnBackendDescriptor_t d = NULL;
    CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d));
    arena_push(a, d);
    return d;
}

void be_arena_free(be_arena *a)
{
    while (a->n > 0)
        CUDNN_CHECK(cudnnBackendDestroyDescriptor(a->desc[--a->n]));
    free(a->desc);
    a->desc = NULL;
    a->cap = 0;
}

/* ---- refusals --------------------------------------------------------------------------------- */

/* why = "<status string>: <cudnnGetLastErrorString>" on one line (newlines become spaces). */
static void reason(cudnnStatus_t s, char *why, size_t why_len)
{
    char detail[1024] = {0};
    cudnnGetLastErrorString(detail, sizeof detail);
    if (detail[0])
        snprintf(why, why_len, "%s: %s", cudnnGetErrorString(s), detail);
    else
        snprintf(why, why_len, "%s", cudnnGetErrorString(s));
    for (char *c = why; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
}

/* Finalize where cuDNN may refuse: 0 on success, -1 on a status of the NOT_SUPPORTED family
 * (CUDNN_STATUS_NOT_SUPPORTED*, why set). Any other failure (out of memory, internal error, bad
 * parameter, ...) is a library failure: CUDNN_CHECK's message naming `what` at the caller's line,
 * exit 1. */
static int finalize_or_refuse(cudnnBackendDescriptor_t d, const char *what, int line,
                              char *why, size_t why_len)
{
    cudnnStatus_t s = cudnnBackendFinalize(d);
    if (s == CUDNN_STATUS_SUCCESS)
        return 0;
    if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED) {
        reason(s, why, why_len);
        return -1;
    }
    char detail[1024] = {0};
    cudnnGetLastErrorString(detail, sizeof detail);
    check_fail("cuDNN", what, __FILE__, line, cudnnGetErrorString(s), detail);
    return -1;
}

/* ---- tensors and operations ------------------------------------------------------------------- */

cudnnBackendDescriptor_t be_tensor(be_arena *a, int64_t uid, cudnnDataType_t type,
                                   const int64_t dims[4], const int64_t strides[4], unsigned flags)
{
    cudnnBackendDescriptor_t t = create(a, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t alignment = 16;
    const bool yes = true;
    BE_SET(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    BE_SET(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    BE_SET(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    BE_SET(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    BE_SET(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    if (flags & BE_VIRTUAL)
        BE_SET(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
    if (flags & BE_BY_VALUE)
        BE_SET(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes);
    CUDNN_CHECK(cudnnBackendFinalize(t));
    return t;
}

/* The pointwise descriptor (mode, precision, GEN_INDEX axis if axis >= 0) and its operation. */
static cudnnBackendDescriptor_t pointwise_op(be_arena *a, cudnnPointwiseMode_t mode, cudnnDataType_t prec,
                                             int64_t axis, cudnnBackendDescriptor_t x,
                                             cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t,
                                             cudnnBackendDescriptor_t y)
{
    cudnnBackendDescriptor_t pw = create(a, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    BE_SET(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    BE_SET(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (axis >= 0)
        BE_SET(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    CUDNN_CHECK(cudnnBackendFinalize(pw));

    cudnnBackendDescriptor_t op = create(a, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    const float one = 1.0f;
    BE_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    BE_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b)
        BE_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    if (t)
        BE_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
    BE_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    BE_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
    BE_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
    CUDNN_CHECK(cudnnBackendFinalize(op));
    return op;
}

cudnnBackendDescriptor_t be_pointwise(be_arena *a, cudnnPointwiseMode_t mode, cudnnDataType_t math_prec,
                                      cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                      cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y)
{
    return pointwise_op(a, mode, math_prec, -1, x, b, t, y);
}

cudnnBackendDescriptor_t be_gen_index(be_arena *a, cudnnBackendDescriptor_t x, int64_t axis,
                                      cudnnBackendDescriptor_t y)
{
    return pointwise_op(a, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, axis, x, NULL, NULL, y);
}

cudnnBackendDescriptor_t be_reduction(be_arena *a, cudnnReduceTensorOp_t reduce_op,
                                      cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
{
    cudnnBackendDescriptor_t rd = create(a, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    BE_SET(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    BE_SET(rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce_op);
#if CUDNN_VERSION >= 91100
    if (cudnnGetVersion() >= 91100) {   /* the attribute exists from 9.11; the frontend sets false */
        const bool deterministic = false;
        BE_SET(rd, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &deterministic);
    }
#endif
    CUDNN_CHECK(cudnnBackendFinalize(rd));

    cudnnBackendDescriptor_t op = create(a, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    BE_SET(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd);
    BE_SET(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    BE_SET(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    CUDNN_CHECK(cudnnBackendFinalize(op));
    return op;
}

cudnnBackendDescriptor_t be_matmul(be_arena *a, cudnnBackendDescriptor_t a_mat,
                                   cudnnBackendDescriptor_t b_mat, cudnnBackendDescriptor_t c)
{
    cudnnBackendDescriptor_t md = create(a, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    BE_SET(md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    CUDNN_CHECK(cudnnBackendFinalize(md));

    cudnnBackendDescriptor_t op = create(a, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    BE_SET(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a_mat);
    BE_SET(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b_mat);
    BE_SET(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
    BE_SET(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md);
    CUDNN_CHECK(cudnnBackendFinalize(op));
    return op;
}

/* ---- graph, heuristics, plan ------------------------------------------------------------------ */

cudnnBackendDescriptor_t be_op_graph(be_arena *a, cudnnHandle_t handle,
                                     const cudnnBackendDescriptor_t *ops, int n_ops,
                                     char *why, size_t why_len)
{
    cudnnBackendDescriptor_t g = create(a, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    BE_SET(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n_ops, ops);
    /* A deprecated attribute in cuDNN 9, still set by cudnn-frontend: the device to plan for. */
    BE_SET(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    if (finalize_or_refuse(g, "cudnnBackendFinalize(operation graph)", __LINE__, why, why_len) != 0)
        return NULL;
    return g;
}

int be_heuristics(be_arena *a, cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode,
                  cudnnBackendDescriptor_t **cfgs, int64_t *offered, char *why, size_t why_len)
{
    *cfgs = NULL;
    *offered = 0;
    cudnnBackendDescriptor_t h = create(a, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    BE_SET(h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    BE_SET(h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (finalize_or_refuse(h, "cudnnBackendFinalize(engine heuristics)", __LINE__, why, why_len) != 0)
        return 0;

    /* First call: how many configs; second call: fill pre-created config descriptors. The second
     * call runs cuDNN's support checks and may hand back fewer than announced. */
    int64_t n = 0, returned = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                         0, &n, NULL));
    *offered = n;
    if (n > 0) {
        cudnnBackendDescriptor_t *list = (cudnnBackendDescriptor_t *)calloc((size_t)n, sizeof *list);
        if (!list) {
            fprintf(stderr, "06_cudnn: out of host memory for engine configs\n");
            attn_exit(1);
        }
        for (int64_t i = 0; i < n; i++)
            list[i] = create(a, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        CUDNN_CHECK(cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &returned, list));
        *cfgs = list;
    }
    if (returned == 0) {
        char detail[1024] = {0};
        cudnnGetLastErrorString(detail, sizeof detail);
        for (char *c = detail; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        snprintf(why, why_len, "heuristics offered %lld engine configs and none passed cuDNN's support "
                 "checks%s%s (CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=stderr prints each refusal)",
                 (long long)n, detail[0] ? ": " : "", detail);
    }
    return (int)returned;
}

cudnnBackendDescriptor_t be_plan(be_arena *a, cudnnBackendDescriptor_t cfg, char *why, size_t why_len)
{
    cudnnBackendDescriptor_t plan = NULL;
    CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
    BE_SET(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
    /* Finalizing generates and compiles the kernel. NOT_SUPPORTED*: this config does not work
     * here, the caller tries the next one; anything else (out of memory, internal error) exits 1. */
    if (finalize_or_refuse(plan, "cudnnBackendFinalize(execution plan)", __LINE__, why, why_len) != 0) {
        CUDNN_CHECK(cudnnBackendDestroyDescriptor(plan));
        return NULL;
    }
    arena_push(a, plan);
    return plan;
}

int64_t be_plan_workspace(cudnnBackendDescriptor_t plan)
{
    int64_t bytes = 0, n = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                         1, &n, &bytes));
    return bytes;
}

/* ---- engine config read-back ------------------------------------------------------------------ */

void be_engine_read(cudnnBackendDescriptor_t cfg, be_engine_info *info)
{
    memset(info, 0, sizeof *info);
    be_arena tmp = {0};
    int64_t n = 0;

    cudnnBackendDescriptor_t engine = create(&tmp, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    CUDNN_CHECK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                         1, &n, &engine));
    CUDNN_CHECK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64,
                                         1, &n, &info->engine));

    /* n is the number of notes the engine has, which may exceed what fits: read at most BE_MAX_NOTES. */
    cudnnBackendNumericalNote_t num[BE_MAX_NOTES];
    CUDNN_CHECK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                         BE_MAX_NOTES, &n, num));
    for (int64_t i = 0; i < n && i < BE_MAX_NOTES; i++)
        info->tensor_core |= num[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
    cudnnBackendBehaviorNote_t beh[BE_MAX_NOTES];
    CUDNN_CHECK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                         BE_MAX_NOTES, &n, beh));
    for (int64_t i = 0; i < n && i < BE_MAX_NOTES; i++)
        info->runtime_compiled |= beh[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;

    cudnnBackendDescriptor_t knob[BE_MAX_KNOBS];
    for (int i = 0; i < BE_MAX_KNOBS; i++)
        knob[i] = create(&tmp, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    CUDNN_CHECK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                         BE_MAX_KNOBS, &n, knob));
    info->n_knobs = (int)(n < BE_MAX_KNOBS ? n : BE_MAX_KNOBS);
    for (int i = 0; i < info->n_knobs; i++) {
        cudnnBackendKnobType_t type;
        int64_t got = 0;
        CUDNN_CHECK(cudnnBackendGetAttribute(knob[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE,
                                             1, &got, &type));
        CUDNN_CHECK(cudnnBackendGetAttribute(knob[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64,
                                             1, &got, &info->knob_value[i]));
        info->knob_type[i] = (int)type;
    }
    be_arena_free(&tmp);
}

const char *be_knob_name(int knob_type)
{
    /* cudnnBackendKnobType_t, in enum order (cudnn_graph.h; values only grow between versions). */
    static const char *const names[] = {
        "SPLIT_K", "SWIZZLE", "TILE_SIZE", "USE_TEX", "EDGE", "KBLOCK", "LDGA", "LDGB", "CHUNK_K",
        "SPLIT_H", "WINO_TILE", "MULTIPLY", "SPLIT_K_BUF", "TILEK", "STAGES", "REDUCTION_MODE",
        "CTA_SPLIT_K_MODE", "SPLIT_K_SLC", "IDX_MODE", "SLICED", "SPLIT_RS", "SINGLEBUFFER", "LDGC",
        "SPECFILT", "KERNEL_CFG", "WORKSPACE", "TILE_CGA", "TILE_CGA_M", "TILE_CGA_N", "BLOCK_SIZE",
        "OCCUPANCY", "ARRAY_SIZE_PER_THREAD", "NUM_C_PER_BLOCK", "SPLIT_COLS", "TILE_ROWS",
        "TILE_COLS", "LOAD_SIZE", "CTA_COUNT", "STREAM_K", "SPLIT_P_SLC", "TILE_M", "TILE_N",
        "WARP_SPEC_CFG", "SWAP_AB",
    };
    if (knob_type < 0 || (size_t)knob_type >= sizeof names / sizeof names[0])
        return NULL;
    return names[knob_type];
}

/* ---- variant pack ----------------------------------------------------------------------------- */

cudnnBackendDescriptor_t be_variant_pack(be_arena *a, int n, const int64_t *uids, void *const *ptrs,
                                         void *workspace)
{
    cudnnBackendDescriptor_t vp = create(a, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    BE_SET(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    BE_SET(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
    BE_SET(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    CUDNN_CHECK(cudnnBackendFinalize(vp));
    return vp;
}
