/* eager_ops.cu: the eager ops 01_naive and 02_inplace share (see eager_ops.h): a cuBLASLt bf16
 * batched GEMM, the out-of-place scale, the in-place masked fill, the row softmax, the causal
 * mask builder, and the stages' common set-up. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math_constants.h>

#include "check.h"
#include "sm80/online_softmax.cuh"
#include "eager/eager_ops.h"
#include "harness.h"

enum { ELEMWISE_THREADS = 256, SOFTMAX_THREADS = 128, HEURISTIC_MAX = EAGER_HEURISTIC_MAX };

/* Blocks for `work` items at `threads` per block; the kernels loop grid-stride, so capping the
 * grid at CUDA's limit is safe. */
static unsigned grid_for(size_t work, unsigned threads)
{
    size_t blocks = (work + threads - 1) / threads;
    if (blocks == 0) blocks = 1;
    if (blocks > 0x7fffffffu) blocks = 0x7fffffffu;
    return (unsigned)blocks;
}

/* ================================ cuBLASLt batched GEMM =====================================
 * Row-major C[M x N] = A[M x K] · op(B) is, seen column-major, Cᵀ[N x M] = op(B)ᵀ · Aᵀ. So cuBLAS's
 * first operand is our B, its second our A, its output our C with leading dimension N:
 *   cuBLAS A := B memory: b_transposed ? stored K x N col-major (ld K), op T : N x K (ld N), op N
 *   cuBLAS B := A memory: K x M col-major (ld K), op N
 *   cuBLAS C := C memory: N x M col-major (ld N)
 * For S = Q·Kᵀ that is the "TN" GEMM (PyTorch's nvjet ..._TNT kernel); for O = P·V the "NN" one. */

void eager_blas_create(eager_blas *b)
{
    memset(b, 0, sizeof *b);
    b->allow_workspace = eager_gemm_workspace_allowed();
    CUBLASLT_CHECK(cublasLtCreate(&b->lt));
}

/* Grows b's workspace to at least bytes (the old buffer is free: nothing has run yet). */
static void blas_reserve(eager_blas *b, size_t bytes)
{
    if (bytes <= b->workspace_bytes) return;
    dev_free(b->workspace);
    b->workspace = dev_alloc(bytes, "cuBLASLt workspace");
    b->workspace_bytes = bytes;
}

void eager_blas_destroy(eager_blas *b)
{
    if (b->lt) CUBLASLT_CHECK(cublasLtDestroy(b->lt));
    dev_free(b->workspace);
    memset(b, 0, sizeof *b);
}

static cublasLtMatrixLayout_t make_layout(uint64_t rows, uint64_t cols, int64_t ld, int batch,
                                          int64_t stride)
{
    cublasLtMatrixLayout_t l;
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, rows, cols, ld));
    int32_t count = batch;
    CUBLASLT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                    sizeof count));
    CUBLASLT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                    &stride, sizeof stride));
    return l;
}

/* ATTN_GEMM_ALGO's index for plan `which` (0: the first, 1 and on: the second entry, or the
 * only one); 0 when unset. A malformed value: exit 2 (eager_read_gemm_env). */
static int gemm_algo_index(int which)
{
    eager_gemm_env e;
    eager_read_gemm_env(&e);
    return e.algo[which > 0 ? 1 : 0];
}

static uint32_t algo_attr_u32(const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t a)
{
    uint32_t v = 0;
    size_t written = 0;
    CUBLASLT_CHECK(cublasLtMatmulAlgoConfigGetAttribute(algo, a, &v, sizeof v, &written));
    return v;
}

static uint16_t algo_attr_u16(const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t a)
{
    uint16_t v = 0;
    size_t written = 0;
    CUBLASLT_CHECK(cublasLtMatmulAlgoConfigGetAttribute(algo, a, &v, sizeof v, &written));
    return v;
}

/* One line per candidate on stderr (ATTN_GEMM_VERBOSE=1). */
static void print_candidate(const char *label, int i, int picked,
                            const cublasLtMatmulHeuristicResult_t *r)
{
    const cublasLtMatmulAlgo_t *a = &r->algo;
    int32_t id = 0, splitk = 0;
    size_t written = 0;
    CUBLASLT_CHECK(cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id,
                                                        &written));
    CUBLASLT_CHECK(cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                                        sizeof splitk, &written));
    fprintf(stderr,
            "gemm %s: heuristic[%d]%s algo_id=%d tile_id=%u stages_id=%u splitk=%d reduction=%u "
            "swizzle=%u custom=%u inner_shape=%u cluster_shape=%u workspace=%zu waves=%.2f\n",
            label, i, picked ? " (picked)" : "", id,
            algo_attr_u32(a, CUBLASLT_ALGO_CONFIG_TILE_ID),
            algo_attr_u32(a, CUBLASLT_ALGO_CONFIG_STAGES_ID), splitk,
            algo_attr_u32(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
            algo_attr_u32(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
            algo_attr_u32(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
            (unsigned)algo_attr_u16(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID),
            (unsigned)algo_attr_u16(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID), r->workspaceSize,
            (double)r->wavesCount);
}

void eager_bmm_plan(eager_bmm *g, eager_blas *blas, int batch, int m, int n, int k,
                    int b_transposed, int which, const char *label)
{
    memset(g, 0, sizeof *g);
    g->blas = blas;
    g->m = m; g->n = n; g->k = k; g->batch = batch; g->b_transposed = b_transposed;

    CUBLASLT_CHECK(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));

    /* Strides in elements of the contiguous [batch, rows, cols] tensors. */
    const int64_t stride_b = (int64_t)n * k, stride_a = (int64_t)m * k, stride_c = (int64_t)m * n;
    const int64_t ld_b = b_transposed ? k : n;
    g->a = b_transposed ? make_layout((uint64_t)k, (uint64_t)n, ld_b, batch, stride_b)
                        : make_layout((uint64_t)n, (uint64_t)k, ld_b, batch, stride_b);
    g->b = make_layout((uint64_t)k, (uint64_t)m, k, batch, stride_a);
    g->c = make_layout((uint64_t)n, (uint64_t)m, n, batch, stride_c);

    /* The memset lesson, measured on the H200 with cuBLAS 13.1 (01_naive/README.md): with a
     * workspace allowed, all 8 heuristic candidates for S = Q·Kᵀ
     * (nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT, ...) report workspaceSize 4, and cuBLAS
     * memsets those 4 bytes before every call: one more GPU activity per step (PyTorch's 7 where
     * the blog's A100 shows 6). P·V's first candidate needs 0. Asking for algorithms with a
     * workspace limit of 0 removes the memset and leaves the time unchanged (01_naive/README.md
     * has the times with and without it). So:
     * limit 0 first; a workspace of up to EAGER_GEMM_WORKSPACE_BYTES only if no algorithm runs
     * without one (the fallback) or with ATTN_GEMM_WORKSPACE=1, which brings the memset back on
     * purpose. */
    cublasLtMatmulHeuristicResult_t results[HEURISTIC_MAX];
    int found = 0;
    uint64_t ws_limit = 0;
    for (int attempt = blas->allow_workspace ? 1 : 0; attempt < 2 && found <= 0; attempt++) {
        cublasLtMatmulPreference_t pref;
        CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
        ws_limit = attempt == 0 ? 0 : (uint64_t)EAGER_GEMM_WORKSPACE_BYTES;
        CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_limit, sizeof ws_limit));
        /* The alignment preferences stay at their default, 256 bytes: they describe the base
         * pointers (cudaMalloc'd, checked in eager_bmm_run); cuBLASLt sees the leading dimensions
         * and batch strides in the layouts and checks those itself. */
        memset(results, 0, sizeof results);
        found = 0;
        /* No algorithm within the limit can show as found == 0 or as CUBLAS_STATUS_NOT_SUPPORTED:
         * both mean "try the next limit" (and, after the last, exit 2 below). */
        const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
            blas->lt, g->op, g->a, g->b, g->c, g->c, pref, HEURISTIC_MAX, results, &found);
        if (status == CUBLAS_STATUS_NOT_SUPPORTED)
            found = 0;
        else if (status != CUBLAS_STATUS_SUCCESS)
            check_fail("cuBLAS", "cublasLtMatmulAlgoGetHeuristic(...)", __FILE__, __LINE__,
                       cublasGetStatusString(status), cublasGetStatusName(status));
        CUBLASLT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    }
    if (found <= 0)
        die_usage("gemm %s: cuBLASLt has no bf16 algorithm for batch %d, M %d, N %d, K %d",
                  label, batch, m, n, k);
    const int pick = gemm_algo_index(which);
    if (pick >= found)
        die_usage("ATTN_GEMM_ALGO: index %d for gemm %s, but cuBLASLt's heuristic offers %d "
                  "algorithms (0..%d) with a workspace limit of %llu bytes", pick, label, found,
                  found - 1, (unsigned long long)ws_limit);

    eager_gemm_env env;
    eager_read_gemm_env(&env);
    if (env.verbose) {
        fprintf(stderr, "gemm %s: batch %d, M %d, N %d, K %d (cuBLAS view: %c%c, m %d n %d k %d), "
                "workspace limit %llu B%s, %d candidates\n", label, batch, m, n, k,
                b_transposed ? 'T' : 'N', 'N', n, m, k, (unsigned long long)ws_limit,
                ws_limit && !blas->allow_workspace ? " (fallback: none runs without one)" : "",
                found);
        for (int i = 0; i < found; i++) print_candidate(label, i, i == pick, &results[i]);
    }
    g->algo = results[pick].algo;
    g->workspace_bytes = results[pick].workspaceSize;
    blas_reserve(blas, g->workspace_bytes);
}

void eager_bmm_run(const eager_bmm *g, const void *a, const void *b, void *c, cudaStream_t stream)
{
    if ((((uintptr_t)a) | ((uintptr_t)b) | ((uintptr_t)c)) & 255)
        check_fail("eager_ops", "eager_bmm_run", __FILE__, __LINE__,
                   "operands must be 256-byte aligned (cudaMalloc'd)", NULL);
    if (g->workspace_bytes > g->blas->workspace_bytes)
        check_fail("eager_ops", "eager_bmm_run", __FILE__, __LINE__,
                   "the plan needs more workspace than its handle holds", NULL);
    const float alpha = 1.0f, beta = 0.0f;
    CUBLASLT_CHECK(cublasLtMatmul(g->blas->lt, g->op, &alpha, b, g->a, a, g->b, &beta, c, g->c, c,
                                  g->c, &g->algo, g->blas->workspace, g->workspace_bytes, stream));
}

void eager_bmm_destroy(eager_bmm *g)
{
    if (g->a) CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(g->a));
    if (g->b) CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(g->b));
    if (g->c) CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(g->c));
    if (g->op) CUBLASLT_CHECK(cublasLtMatmulDescDestroy(g->op));
    memset(g, 0, sizeof *g);
}

/* ==================================== elementwise ===========================================
 * One 16-byte vector (8 bf16) per thread per grid-stride iteration; the n % 8 tail elements go
 * to the first threads, one each. */

/* out = bf16(float(in) * scale) over n elements (ATen's AUnaryFunctor<MulFunctor<float>>). */
__global__ void mul_bf16_kernel(__nv_bfloat16 *out, const __nv_bfloat16 *in, float scale, size_t n)
{
    const size_t nvec = n / 8, stride = (size_t)gridDim.x * blockDim.x;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t v = t; v < nvec; v += stride) {
        uint4 x = ((const uint4 *)in)[v];
        __nv_bfloat162 *h = (__nv_bfloat162 *)&x;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 f = __bfloat1622float2(h[i]);
            h[i] = __floats2bfloat162_rn(f.x * scale, f.y * scale);
        }
        ((uint4 *)out)[v] = x;
    }
    for (size_t e = nvec * 8 + t; e < n; e += stride)
        out[e] = __float2bfloat16_rn(__bfloat162float(in[e]) * scale);
}

void eager_mul_bf16(void *out, const void *in, float scale, size_t n, cudaStream_t stream)
{
    if (n == 0) return;
    const size_t work = n / 8 > 0 ? n / 8 : n;
    mul_bf16_kernel<<<grid_for(work, ELEMWISE_THREADS), ELEMWISE_THREADS, 0, stream>>>(
        (__nv_bfloat16 *)out, (const __nv_bfloat16 *)in, scale, n);
    CUDA_CHECK_LAUNCH();
}

/* s[e] = mask[e % mask_n] ? value : s[e] over n = bh·mask_n elements, in place. VEC = 8: each
 * thread reads 8 scores (16 bytes) and 8 mask bytes (needs mask_n % 8 == 0, so a vector never
 * straddles two score matrices); VEC = 1: one element per thread. */
template <int VEC>
__global__ void masked_fill_bf16_kernel(__nv_bfloat16 *s, const unsigned char *mask,
                                        __nv_bfloat16 value, size_t n, size_t mask_n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (VEC == 8) {
        const size_t nvec = n / 8;
        for (size_t v = t; v < nvec; v += stride) {
            const size_t m = (v * 8) % mask_n;
            const uint2 mb = *(const uint2 *)(mask + m);
            const unsigned char *mk = (const unsigned char *)&mb;
            uint4 x = ((const uint4 *)s)[v];
            __nv_bfloat16 *h = (__nv_bfloat16 *)&x;
#pragma unroll
            for (int i = 0; i < 8; i++)
                if (mk[i]) h[i] = value;
            ((uint4 *)s)[v] = x;
        }
    } else {
        for (size_t e = t; e < n; e += stride)
            if (mask[e % mask_n]) s[e] = value;
    }
}

void eager_masked_fill_bf16(void *s, const unsigned char *mask, float value, size_t bh, int seq,
                            cudaStream_t stream)
{
    const size_t mask_n = (size_t)seq * seq, n = bh * mask_n;
    if (n == 0) return;
    const __nv_bfloat16 v = __float2bfloat16_rn(value);
    if (mask_n % 8 == 0)
        masked_fill_bf16_kernel<8><<<grid_for(n / 8, ELEMWISE_THREADS), ELEMWISE_THREADS, 0, stream>>>(
            (__nv_bfloat16 *)s, mask, v, n, mask_n);
    else
        masked_fill_bf16_kernel<1><<<grid_for(n, ELEMWISE_THREADS), ELEMWISE_THREADS, 0, stream>>>(
            (__nv_bfloat16 *)s, mask, v, n, mask_n);
    CUDA_CHECK_LAUNCH();
}

/* mask[i, j] = j > i for a [seq, seq] bool. */
__global__ void causal_mask_kernel(unsigned char *mask, int seq)
{
    const size_t n = (size_t)seq * seq, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride)
        mask[e] = (unsigned char)(e % seq > e / seq);
}

void eager_causal_mask(unsigned char *mask, int seq, cudaStream_t stream)
{
    const size_t n = (size_t)seq * seq;
    causal_mask_kernel<<<grid_for(n, ELEMWISE_THREADS), ELEMWISE_THREADS, 0, stream>>>(mask, seq);
    CUDA_CHECK_LAUNCH();
}

/* ===================================== softmax ==============================================
 * One warp per row, SOFTMAX_THREADS / 32 rows per block, grid-stride over rows. Sweep 1: each
 * lane folds its columns into a running (max, sum) in base 2 and the warp merges the 32 pairs
 * (common/sm80/online_softmax.cuh). Sweep 2 re-reads the row (from L1/L2) and writes
 * 2^(x·log2 e - m) / l in bf16. */
template <int VEC>
__device__ __forceinline__ void load_bf16(const __nv_bfloat16 *x, float *v)
{
    if (VEC == 8) {
        const uint4 raw = *(const uint4 *)x;
        const __nv_bfloat162 *h = (const __nv_bfloat162 *)&raw;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 f = __bfloat1622float2(h[i]);
            v[2 * i] = f.x;
            v[2 * i + 1] = f.y;
        }
    } else {
        v[0] = __bfloat162float(x[0]);
    }
}

template <int VEC>
__global__ void softmax_rows_bf16_kernel(__nv_bfloat16 *p, const __nv_bfloat16 *s, size_t rows, int cols)
{
    const int lane = threadIdx.x & 31;
    const size_t warps = blockDim.x / 32;
    const size_t row_stride = (size_t)gridDim.x * warps;
    for (size_t row = (size_t)blockIdx.x * warps + threadIdx.x / 32; row < rows; row += row_stride) {
        const __nv_bfloat16 *x = s + row * (size_t)cols;
        __nv_bfloat16 *y = p + row * (size_t)cols;
        float m = -INFINITY, l = 0.0f; /* base 2: m = max(x)·log2 e, l = Σ 2^(x·log2 e - m) */
        for (int c = lane * VEC; c < cols; c += 32 * VEC) {
            float v[VEC];
            load_bf16<VEC>(x + c, v);
            online_max_sum_update<VEC>(&m, &l, v);
        }
        warp_max_sum_merge(&m, &l);
        const float inv = 1.0f / l;
        for (int c = lane * VEC; c < cols; c += 32 * VEC) {
            float v[VEC];
            load_bf16<VEC>(x + c, v);
            if (VEC == 8) {
                uint4 out;
                __nv_bfloat162 *h = (__nv_bfloat162 *)&out;
#pragma unroll
                for (int i = 0; i < 4; i++)
                    h[i] = __floats2bfloat162_rn(exp2f(fmaf(v[2 * i], CUDART_L2E_F, -m)) * inv,
                                                 exp2f(fmaf(v[2 * i + 1], CUDART_L2E_F, -m)) * inv);
                *(uint4 *)(y + c) = out;
            } else {
                y[c] = __float2bfloat16_rn(exp2f(fmaf(v[0], CUDART_L2E_F, -m)) * inv);
            }
        }
    }
}

void eager_softmax_rows_bf16(void *p, const void *s, size_t rows, int cols, cudaStream_t stream)
{
    if (rows == 0 || cols <= 0) return;
    const unsigned blocks = grid_for(rows, SOFTMAX_THREADS / 32);
    if (cols % 8 == 0)
        softmax_rows_bf16_kernel<8><<<blocks, SOFTMAX_THREADS, 0, stream>>>(
            (__nv_bfloat16 *)p, (const __nv_bfloat16 *)s, rows, cols);
    else
        softmax_rows_bf16_kernel<1><<<blocks, SOFTMAX_THREADS, 0, stream>>>(
            (__nv_bfloat16 *)p, (const __nv_bfloat16 *)s, rows, cols);
    CUDA_CHECK_LAUNCH();
}

/* ================================ the shared set-up =========================================*/

int eager_supports(const attn_shape *s, const struct cudaDeviceProp *prop, char *why, size_t why_len)
{
    if (prop && prop->major < 8) {
        snprintf(why, why_len, "%s has compute capability %d.%d; the bf16 stages need 8.0 or newer",
                 prop->name, prop->major, prop->minor);
        return 1;
    }
    if ((long long)s->batch * s->heads > INT_MAX) {
        snprintf(why, why_len, "batch x heads = %lld exceeds cuBLASLt's batch count limit %d",
                 (long long)s->batch * s->heads, INT_MAX);
        return 1;
    }
    return 0;
}

size_t eager_extra_bytes(const attn_shape *s)
{
    (void)eager_gemm_workspace_allowed();   /* a malformed value exits 2 before any allocation */
    const size_t s_elems = (size_t)s->batch * s->heads * s->seq * s->seq;
    return 2 * s_elems * sizeof(__nv_bfloat16) + (size_t)s->seq * s->seq;
}

void *eager_setup(attn_problem *p)
{
    const attn_shape *s = &p->shape;
    eager_state *st = (eager_state *)calloc(1, sizeof *st);
    if (!st) die_usage("eager set-up: %zu bytes of host memory not available", sizeof *st);
    const int bh = s->batch * s->heads;
    st->s_elems = (size_t)bh * s->seq * s->seq;
    eager_blas_create(&st->blas);
    st->s_a = dev_alloc(st->s_elems * sizeof(__nv_bfloat16), "score buffer A [batch, heads, seq, seq]");
    st->s_b = dev_alloc(st->s_elems * sizeof(__nv_bfloat16), "score buffer B [batch, heads, seq, seq]");
    st->mask = (unsigned char *)dev_alloc((size_t)s->seq * s->seq, "causal mask [seq, seq]");

    prof_range_push("triu");
    eager_causal_mask(st->mask, s->seq, p->stream);
    prof_range_pop();

    eager_bmm_plan(&st->qk, &st->blas, bh, s->seq, s->seq, s->head_dim, 1, 0, "S = Q.K^T");
    eager_bmm_plan(&st->pv, &st->blas, bh, s->seq, s->head_dim, s->seq, 0, 1, "O = P.V");
    /* The workspace is what the picked algorithms need: 0 by default, 4 bytes on the H200 with
     * ATTN_GEMM_WORKSPACE=1. */
    p->extra_bytes = eager_extra_bytes(s) + st->blas.workspace_bytes;
    return st;
}

void eager_teardown(attn_problem *p)
{
    eager_state *st = (eager_state *)p->state;
    if (!st) return;
    CUDA_CHECK(cudaStreamSynchronize(p->stream));
    eager_bmm_destroy(&st->qk);
    eager_bmm_destroy(&st->pv);
    dev_free(st->s_a);
    dev_free(st->s_b);
    dev_free(st->mask);
    eager_blas_destroy(&st->blas);
    free(st);
    p->state = NULL;
}
