/* 03_math: PyTorch's SDPA "math" backend rebuilt launch for launch, as it runs on the H200 for
 * F.scaled_dot_product_attention(q, k, v, is_causal=True) with bf16 inputs
 * (at::_scaled_dot_product_attention_math; PyTorch's own trace: docs/pytorch-h200/sdpa_math.json):
 * the inputs are upcast to FP32, the scale is split as sqrt(scale) over Q and K, the causal mask
 * is rebuilt on every call as an additive 0/-inf bias, both GEMMs run in FP32 on CUDA cores
 * (cuBLAS SGEMM, default math mode: no TF32), the softmax is the NaN-safe _safe_softmax, and the
 * results are cast back to bf16 (the attention weights too, which SDPA returns and nobody reads).
 *
 * The 20 GPU activities of one step, in order (host op -> our kernel; PyTorch's kernel):
 *   1-3  _to_copy        to_f32_kernel x3: Q, K, V bf16 -> FP32       (direct_copy_kernel_cuda)
 *   4    mul            mul_f32_kernel: Q *= sqrt(scale)               (AUnaryFunctor<MulFunctor>)
 *   5    ones           fill_bool_kernel: [seq, seq] = true            (FillFunctor<bool>)
 *   6    tril           tril_bool_kernel: lower triangle kept          (triu_tril_kernel)
 *   7    scalar_tensor  fill_f32_kernel: a 0-d tensor = -inf           (FillFunctor<float>)
 *   8    where          fill_f32_kernel: a 0-d tensor = 0              (FillFunctor<float>)
 *   9    where          where_scalar_f32_kernel: bias = tril ? 0 : -inf  (where_kernel_impl)
 *   10   mul            mul_f32_kernel: K *= sqrt(scale)               (AUnaryFunctor<MulFunctor>)
 *   11   matmul         cuBLAS SGEMM: S = Q·Kᵀ, FP32 FFMA              (sm80_xmma_gemm_..._ffma_...)
 *   12   add_           add_bias_f32_kernel: S += bias (broadcast)     (CUDAFunctor_add<float>)
 *   13   _softmax       softmax_rows_f32_kernel: P = softmax(S)        (softmax_warp_forward<float>)
 *   14   isneginf       isneginf_f32_kernel: M = (S == -inf)           (isneginf_kernel_impl)
 *   15   all            all_rows_kernel: R = all(M, dim=-1)            (reduce_kernel<and>)
 *   16   scalar_tensor  fill_f32_kernel: a 0-d tensor = 0              (FillFunctor<float>)
 *   17   where          where_rows_f32_kernel: P = R ? 0 : P           (where_kernel_impl)
 *   18   _to_copy       to_bf16_kernel: the attention weights -> bf16  (bfloat16_copy_kernel_cuda)
 *   19   matmul         cuBLAS SGEMM: O = P·V, FP32 FFMA               (sm80_xmma_gemm_..._ffma_...)
 *   20   _to_copy       to_bf16_kernel: O -> bf16                      (bfloat16_copy_kernel_cuda)
 * 13-17 sit inside a `_safe_softmax` range, 8-9 inside `where`, all inside
 * `_scaled_dot_product_attention_math`, as on PyTorch's CPU lane.
 *
 * Buffers (set-up; reused where PyTorch's caching allocator would reuse a freed block):
 *   q32, k32, v32, o32  FP32 [batch, heads, seq, head_dim]; Q and K scaled in place
 *   ones, causal        bool [seq, seq];  bias FP32 [seq, seq];  scalars: three FP32 0-d tensors
 *   s32                 FP32 [batch, heads, seq, seq]: S, S + bias, then the NaN-safe P
 *   p32                 FP32 [batch, heads, seq, seq]: softmax(S), then the bf16 attention weights
 *   neginf              bool [batch, heads, seq, seq];  row_all bool [batch, heads, seq]
 *   cuBLAS workspace    32 MiB, given up front (cublasSetWorkspace)
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math_constants.h>

#include "check.h"
#include "sm80/online_softmax.cuh"
#include "eager/eager_ops.h"
#include "harness.h"

enum { THREADS = 256, ROW_THREADS = 128 };
#define MATH_WORKSPACE_BYTES ((size_t)32 << 20)

/* Blocks for `work` items at `threads` per block (kernels loop grid-stride). */
static unsigned grid_for(size_t work, unsigned threads)
{
    size_t blocks = (work + threads - 1) / threads;
    if (blocks == 0) blocks = 1;
    if (blocks > 0x7fffffffu) blocks = 0x7fffffffu;
    return (unsigned)blocks;
}

/* ==================================== kernels ===============================================
 * Elementwise kernels move 16 bytes per thread per grid-stride iteration where the layout
 * allows (the tail, n % VEC elements, one per thread); row kernels give each row one warp. */

/* out[i] = float(in[i]): the bf16 -> FP32 upcast (exact). */
__global__ void to_f32_kernel(float *out, const __nv_bfloat16 *in, size_t n)
{
    const size_t nvec = n / 8, stride = (size_t)gridDim.x * blockDim.x;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t v = t; v < nvec; v += stride) {
        const uint4 raw = ((const uint4 *)in)[v];
        const __nv_bfloat162 *h = (const __nv_bfloat162 *)&raw;
        const float2 a = __bfloat1622float2(h[0]), b = __bfloat1622float2(h[1]);
        const float2 c = __bfloat1622float2(h[2]), d = __bfloat1622float2(h[3]);
        ((float4 *)out)[2 * v] = make_float4(a.x, a.y, b.x, b.y);
        ((float4 *)out)[2 * v + 1] = make_float4(c.x, c.y, d.x, d.y);
    }
    for (size_t e = nvec * 8 + t; e < n; e += stride) out[e] = __bfloat162float(in[e]);
}

/* out[i] = bf16(in[i]), round to nearest even: the FP32 -> bf16 downcast. */
__global__ void to_bf16_kernel(__nv_bfloat16 *out, const float *in, size_t n)
{
    const size_t nvec = n / 8, stride = (size_t)gridDim.x * blockDim.x;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t v = t; v < nvec; v += stride) {
        const float4 a = ((const float4 *)in)[2 * v], b = ((const float4 *)in)[2 * v + 1];
        uint4 raw;
        __nv_bfloat162 *h = (__nv_bfloat162 *)&raw;
        h[0] = __floats2bfloat162_rn(a.x, a.y);
        h[1] = __floats2bfloat162_rn(a.z, a.w);
        h[2] = __floats2bfloat162_rn(b.x, b.y);
        h[3] = __floats2bfloat162_rn(b.z, b.w);
        ((uint4 *)out)[v] = raw;
    }
    for (size_t e = nvec * 8 + t; e < n; e += stride) out[e] = __float2bfloat16_rn(in[e]);
}

/* x[i] *= s, in place. */
__global__ void mul_f32_kernel(float *x, float s, size_t n)
{
    const size_t nvec = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t v = t; v < nvec; v += stride) {
        float4 a = ((float4 *)x)[v];
        a.x *= s; a.y *= s; a.z *= s; a.w *= s;
        ((float4 *)x)[v] = a;
    }
    for (size_t e = nvec * 4 + t; e < n; e += stride) x[e] *= s;
}

/* x[i] = v for a bool tensor (torch.ones(..., dtype=bool)). */
__global__ void fill_bool_kernel(unsigned char *x, unsigned char v, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) x[e] = v;
}

/* x[i] = v for an FP32 tensor (here 0-d: at::scalar_tensor). */
__global__ void fill_f32_kernel(float *x, float v, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) x[e] = v;
}

/* out = tril(in) for [seq, seq] bool: out[i, j] = j <= i ? in[i, j] : false (out of place). */
__global__ void tril_bool_kernel(unsigned char *out, const unsigned char *in, int seq)
{
    const size_t n = (size_t)seq * seq, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride)
        out[e] = e % seq <= e / seq ? in[e] : (unsigned char)0;
}

/* out[i] = cond[i] ? *if_true : *if_false, the two values read from 0-d device tensors:
 * torch.where(mask, 0.0, scalar_tensor(-inf)) turns the bool mask into an additive bias. */
__global__ void where_scalar_f32_kernel(float *out, const unsigned char *cond, const float *if_true,
                                        const float *if_false, size_t n)
{
    const float a = *if_true, b = *if_false;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride)
        out[e] = cond[e] ? a : b;
}

/* s[e] += bias[e % bias_n], in place, over n = (batch·heads)·bias_n elements (the [seq, seq]
 * bias broadcast over batch and heads). VEC = 4 needs bias_n % 4 == 0. */
template <int VEC>
__global__ void add_bias_f32_kernel(float *s, const float *bias, size_t n, size_t bias_n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (VEC == 4) {
        for (size_t v = t; v < n / 4; v += stride) {
            float4 a = ((float4 *)s)[v];
            const float4 b = *(const float4 *)(bias + (v * 4) % bias_n);
            a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w;
            ((float4 *)s)[v] = a;
        }
    } else {
        for (size_t e = t; e < n; e += stride) s[e] += bias[e % bias_n];
    }
}

template <int VEC>
__device__ __forceinline__ void load_f32(const float *x, float *v)
{
    if (VEC == 4) {
        const float4 a = *(const float4 *)x;
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    } else {
        v[0] = x[0];
    }
}

/* p[r, :] = softmax(s[r, :]) in FP32 for `rows` rows of `cols` (p != s). One warp per row, the
 * same two sweeps as eager_ops.cu's bf16 softmax: an online max/sum (Milakov & Gimelshein 2018)
 * merged across the warp, then exp(x - max) / sum. A row of -inf gives NaN, as torch.softmax;
 * _safe_softmax's guard (isneginf, all, where) turns it into zeros afterwards. VEC = 4 needs
 * cols % 4 == 0. */
template <int VEC>
__global__ void softmax_rows_f32_kernel(float *p, const float *s, size_t rows, int cols)
{
    const int lane = threadIdx.x & 31;
    const size_t warps = blockDim.x / 32, row_stride = (size_t)gridDim.x * warps;
    for (size_t row = (size_t)blockIdx.x * warps + threadIdx.x / 32; row < rows; row += row_stride) {
        const float *x = s + row * (size_t)cols;
        float *y = p + row * (size_t)cols;
        float m = -INFINITY, l = 0.0f; /* base 2: m = max(x)·log2 e, l = Σ 2^(x·log2 e - m) */
        for (int c = lane * VEC; c < cols; c += 32 * VEC) {
            float v[VEC];
            load_f32<VEC>(x + c, v);
            online_max_sum_update<VEC>(&m, &l, v);
        }
        warp_max_sum_merge(&m, &l);
        const float inv = 1.0f / l;
        for (int c = lane * VEC; c < cols; c += 32 * VEC) {
            float v[VEC];
            load_f32<VEC>(x + c, v);
#pragma unroll
            for (int i = 0; i < VEC; i++) v[i] = exp2f(fmaf(v[i], CUDART_L2E_F, -m)) * inv;
            if (VEC == 4)
                *(float4 *)(y + c) = make_float4(v[0], v[1], v[2], v[3]);
            else
                y[c] = v[0];
        }
    }
}

/* out[i] = (x[i] == -inf) as bool. */
__global__ void isneginf_f32_kernel(unsigned char *out, const float *x, size_t n)
{
    const size_t nvec = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t v = t; v < nvec; v += stride) {
        const float4 a = ((const float4 *)x)[v];
        ((uchar4 *)out)[v] = make_uchar4(a.x == -INFINITY, a.y == -INFINITY, a.z == -INFINITY,
                                         a.w == -INFINITY);
    }
    for (size_t e = nvec * 4 + t; e < n; e += stride) out[e] = x[e] == -INFINITY;
}

/* out[r] = all(in[r, :]) over `rows` rows of `cols` bools (0/1 bytes): one warp per row, each
 * lane ANDs its columns, __all_sync combines them (torch.all(M, dim=-1, keepdim=True)). VEC = 16
 * reads 16 bools per load and needs cols % 16 == 0. */
template <int VEC>
__global__ void all_rows_kernel(unsigned char *out, const unsigned char *in, size_t rows, int cols)
{
    const int lane = threadIdx.x & 31;
    const size_t warps = blockDim.x / 32, row_stride = (size_t)gridDim.x * warps;
    for (size_t row = (size_t)blockIdx.x * warps + threadIdx.x / 32; row < rows; row += row_stride) {
        const unsigned char *x = in + row * (size_t)cols;
        int ok = 1;
        for (int c = lane * VEC; c < cols; c += 32 * VEC) {
            if (VEC == 16) {
                const uint4 w = *(const uint4 *)(x + c);
                ok &= w.x == 0x01010101u && w.y == 0x01010101u && w.z == 0x01010101u &&
                      w.w == 0x01010101u;
            } else {
                ok &= x[c] != 0;
            }
        }
        ok = __all_sync(0xffffffffu, ok);
        if (lane == 0) out[row] = (unsigned char)ok;
    }
}

/* out[r, :] = row_cond[r] ? *if_true : x[r, :] (torch.where(all_masked, 0.0, P) with the
 * [rows, 1] condition broadcast along the row). One warp per row; VEC = 4 needs cols % 4 == 0. */
template <int VEC>
__global__ void where_rows_f32_kernel(float *out, const unsigned char *row_cond, const float *if_true,
                                      const float *x, size_t rows, int cols)
{
    const int lane = threadIdx.x & 31;
    const float z = *if_true;
    const size_t warps = blockDim.x / 32, row_stride = (size_t)gridDim.x * warps;
    for (size_t row = (size_t)blockIdx.x * warps + threadIdx.x / 32; row < rows; row += row_stride) {
        const int masked = row_cond[row];
        const float *xr = x + row * (size_t)cols;
        float *yr = out + row * (size_t)cols;
        for (int c = lane * VEC; c < cols; c += 32 * VEC) {
            if (VEC == 4) {
                const float4 a = *(const float4 *)(xr + c);
                *(float4 *)(yr + c) = masked ? make_float4(z, z, z, z) : a;
            } else {
                yr[c] = masked ? z : xr[c];
            }
        }
    }
}

/* ==================================== the stage ============================================= */

typedef struct {
    cublasHandle_t blas;
    void *workspace;
    float *q32, *k32, *v32, *o32;
    unsigned char *ones, *causal;
    float *bias;
    float *scalars;             /* [0] -inf (mask), [1] 0 (mask), [2] 0 (_safe_softmax) */
    float *s32, *p32;
    unsigned char *neginf, *row_all;
    size_t qkv_elems, s_elems, rows, mask_elems;
} math_state;

static size_t math_extra_bytes(const attn_shape *s)
{
    const size_t bhsd = (size_t)s->batch * s->heads * s->seq * s->head_dim;
    const size_t bhss = (size_t)s->batch * s->heads * s->seq * s->seq;
    const size_t ss = (size_t)s->seq * s->seq, rows = (size_t)s->batch * s->heads * s->seq;
    return 4 * bhsd * sizeof(float)          /* q32, k32, v32, o32 */
         + 2 * ss + ss * sizeof(float)       /* ones, causal, bias */
         + 4 * sizeof(float)                 /* the 0-d tensors */
         + 2 * bhss * sizeof(float)          /* s32, p32 */
         + bhss + rows                       /* neginf, row_all */
         + MATH_WORKSPACE_BYTES;
}

static void *math_setup(attn_problem *p)
{
    const attn_shape *s = &p->shape;
    math_state *st = (math_state *)calloc(1, sizeof *st);
    if (!st) die_usage("03_math set-up: %zu bytes of host memory not available", sizeof *st);
    st->qkv_elems = (size_t)s->batch * s->heads * s->seq * s->head_dim;
    st->s_elems = (size_t)s->batch * s->heads * s->seq * s->seq;
    st->rows = (size_t)s->batch * s->heads * s->seq;
    st->mask_elems = (size_t)s->seq * s->seq;

    const size_t qkv = st->qkv_elems * sizeof(float), sb = st->s_elems * sizeof(float);
    st->q32 = (float *)dev_alloc(qkv, "Q in FP32");
    st->k32 = (float *)dev_alloc(qkv, "K in FP32");
    st->v32 = (float *)dev_alloc(qkv, "V in FP32");
    st->o32 = (float *)dev_alloc(qkv, "O in FP32");
    st->ones = (unsigned char *)dev_alloc(st->mask_elems, "ones [seq, seq] bool");
    st->causal = (unsigned char *)dev_alloc(st->mask_elems, "tril [seq, seq] bool");
    st->bias = (float *)dev_alloc(st->mask_elems * sizeof(float), "mask bias [seq, seq] FP32");
    st->scalars = (float *)dev_alloc(4 * sizeof(float), "0-d tensors");
    st->s32 = (float *)dev_alloc(sb, "S in FP32 [batch, heads, seq, seq]");
    st->p32 = (float *)dev_alloc(sb, "P in FP32 [batch, heads, seq, seq]");
    st->neginf = (unsigned char *)dev_alloc(st->s_elems, "isneginf(S) bool [batch, heads, seq, seq]");
    st->row_all = (unsigned char *)dev_alloc(st->rows, "all-masked rows bool [batch, heads, seq]");
    st->workspace = dev_alloc(MATH_WORKSPACE_BYTES, "cuBLAS workspace");

    CUBLAS_CHECK(cublasCreate(&st->blas));
    CUBLAS_CHECK(cublasSetStream(st->blas, p->stream));
    CUBLAS_CHECK(cublasSetWorkspace(st->blas, st->workspace, MATH_WORKSPACE_BYTES));
    /* FP32 on CUDA cores, as PyTorch's default float32_matmul_precision "highest": no TF32. */
    CUBLAS_CHECK(cublasSetMathMode(st->blas, CUBLAS_DEFAULT_MATH));
    p->extra_bytes = math_extra_bytes(s);
    return st;
}

static void math_teardown(attn_problem *p)
{
    math_state *st = (math_state *)p->state;
    if (!st) return;
    CUDA_CHECK(cudaStreamSynchronize(p->stream));
    CUBLAS_CHECK(cublasDestroy(st->blas));
    dev_free(st->workspace);
    dev_free(st->q32); dev_free(st->k32); dev_free(st->v32); dev_free(st->o32);
    dev_free(st->ones); dev_free(st->causal); dev_free(st->bias); dev_free(st->scalars);
    dev_free(st->s32); dev_free(st->p32); dev_free(st->neginf); dev_free(st->row_all);
    free(st);
    p->state = NULL;
}

/* One launch of an elementwise kernel over `work` threads' worth of items. */
#define LAUNCH(kernel, work, ...) do { \
    kernel<<<grid_for((work), THREADS), THREADS, 0, p->stream>>>(__VA_ARGS__); CUDA_CHECK_LAUNCH(); \
} while (0)
/* One launch of a one-warp-per-row kernel over `rows` rows. */
#define LAUNCH_ROWS(kernel, rows, ...) do { \
    kernel<<<grid_for((rows), ROW_THREADS / 32), ROW_THREADS, 0, p->stream>>>(__VA_ARGS__); \
    CUDA_CHECK_LAUNCH(); \
} while (0)

/* Items for a kernel that does VEC elements per thread (at least 1, for the tail). */
static size_t vec_work(size_t n, size_t vec) { return n / vec > 0 ? n / vec : n; }

static void math_forward(attn_problem *p)
{
    math_state *st = (math_state *)p->state;
    const attn_shape *s = &p->shape;
    const int seq = s->seq, d = s->head_dim, bh = s->batch * s->heads;
    const size_t nq = st->qkv_elems, ns = st->s_elems, nm = st->mask_elems, rows = st->rows;
    /* PyTorch multiplies Q and K each by sqrt(scale) (computed in double). */
    const float sqrt_scale = (float)sqrt(1.0 / sqrt((double)d));
    const float one = 1.0f, zero = 0.0f;

    prof_range_push("_scaled_dot_product_attention_math");

    prof_range_push("_to_copy");                                            /* 1 */
    LAUNCH(to_f32_kernel, vec_work(nq, 8), st->q32, (const __nv_bfloat16 *)p->q, nq);
    prof_range_pop();
    prof_range_push("_to_copy");                                            /* 2 */
    LAUNCH(to_f32_kernel, vec_work(nq, 8), st->k32, (const __nv_bfloat16 *)p->k, nq);
    prof_range_pop();
    prof_range_push("_to_copy");                                            /* 3 */
    LAUNCH(to_f32_kernel, vec_work(nq, 8), st->v32, (const __nv_bfloat16 *)p->v, nq);
    prof_range_pop();

    prof_range_push("mul");                                                 /* 4: q * sqrt(scale) */
    LAUNCH(mul_f32_kernel, vec_work(nq, 4), st->q32, sqrt_scale, nq);
    prof_range_pop();

    /* The causal mask, rebuilt on every call: ones(L, S, bool).tril(), then
     * where(mask, 0.0, scalar_tensor(-inf)) -> an additive FP32 bias. */
    prof_range_push("ones");                                                /* 5 */
    LAUNCH(fill_bool_kernel, nm, st->ones, (unsigned char)1, nm);
    prof_range_pop();
    prof_range_push("tril");                                                /* 6 */
    LAUNCH(tril_bool_kernel, nm, st->causal, st->ones, seq);
    prof_range_pop();
    prof_range_push("scalar_tensor");                                       /* 7 */
    LAUNCH(fill_f32_kernel, 1, st->scalars + 0, -INFINITY, (size_t)1);
    prof_range_pop();
    prof_range_push("where");
    prof_range_push("scalar_tensor");                                       /* 8 */
    LAUNCH(fill_f32_kernel, 1, st->scalars + 1, 0.0f, (size_t)1);
    prof_range_pop();
    LAUNCH(where_scalar_f32_kernel, nm, st->bias, st->causal, st->scalars + 1, st->scalars + 0,
           nm);                                                             /* 9 */
    prof_range_pop();

    prof_range_push("mul");                                                 /* 10: k * sqrt(scale) */
    LAUNCH(mul_f32_kernel, vec_work(nq, 4), st->k32, sqrt_scale, nq);
    prof_range_pop();

    /* 11: S = Q·Kᵀ per (batch, head). Column-major view: Sᵀ[seq_k x seq_q] = Kᵀ-op(K) · Qᵀ,
     * i.e. "TN" with A = K (ld head_dim), B = Q (ld head_dim), C = S (ld seq). */
    prof_range_push("matmul");
    CUBLAS_CHECK(cublasSgemmStridedBatched(st->blas, CUBLAS_OP_T, CUBLAS_OP_N, seq, seq, d, &one,
                                           st->k32, d, (long long)seq * d, st->q32, d,
                                           (long long)seq * d, &zero, st->s32, seq,
                                           (long long)seq * seq, bh));
    prof_range_pop();

    prof_range_push("add_");                                                /* 12 */
    if (nm % 4 == 0)
        LAUNCH(add_bias_f32_kernel<4>, ns / 4, st->s32, st->bias, ns, nm);
    else
        LAUNCH(add_bias_f32_kernel<1>, ns, st->s32, st->bias, ns, nm);
    prof_range_pop();

    /* _safe_softmax: softmax, then rows that were entirely -inf become 0 instead of NaN. */
    prof_range_push("_safe_softmax");
    prof_range_push("_softmax");                                            /* 13 */
    if (seq % 4 == 0)
        LAUNCH_ROWS(softmax_rows_f32_kernel<4>, rows, st->p32, st->s32, rows, seq);
    else
        LAUNCH_ROWS(softmax_rows_f32_kernel<1>, rows, st->p32, st->s32, rows, seq);
    prof_range_pop();
    prof_range_push("isneginf");                                            /* 14 */
    LAUNCH(isneginf_f32_kernel, vec_work(ns, 4), st->neginf, st->s32, ns);
    prof_range_pop();
    prof_range_push("all");                                                 /* 15 */
    if (seq % 16 == 0)
        LAUNCH_ROWS(all_rows_kernel<16>, rows, st->row_all, st->neginf, rows, seq);
    else
        LAUNCH_ROWS(all_rows_kernel<1>, rows, st->row_all, st->neginf, rows, seq);
    prof_range_pop();
    prof_range_push("scalar_tensor");                                       /* 16 */
    LAUNCH(fill_f32_kernel, 1, st->scalars + 2, 0.0f, (size_t)1);
    prof_range_pop();
    prof_range_push("where");                                               /* 17: into s32 */
    if (seq % 4 == 0)
        LAUNCH_ROWS(where_rows_f32_kernel<4>, rows, st->s32, st->row_all, st->scalars + 2, st->p32,
                    rows, seq);
    else
        LAUNCH_ROWS(where_rows_f32_kernel<1>, rows, st->s32, st->row_all, st->scalars + 2, st->p32,
                    rows, seq);
    prof_range_pop();
    prof_range_pop();

    /* 18: the attention weights SDPA returns, cast to bf16 (into p32's block, free again). */
    prof_range_push("_to_copy");
    LAUNCH(to_bf16_kernel, vec_work(ns, 8), (__nv_bfloat16 *)st->p32, st->s32, ns);
    prof_range_pop();

    /* 19: O = P·V per (batch, head). Column-major: Oᵀ[head_dim x seq_q] = Vᵀ · Pᵀ, "NN" with
     * A = V (ld head_dim), B = P (ld seq), C = O (ld head_dim). */
    prof_range_push("matmul");
    CUBLAS_CHECK(cublasSgemmStridedBatched(st->blas, CUBLAS_OP_N, CUBLAS_OP_N, d, seq, seq, &one,
                                           st->v32, d, (long long)seq * d, st->s32, seq,
                                           (long long)seq * seq, &zero, st->o32, d,
                                           (long long)seq * d, bh));
    prof_range_pop();

    prof_range_push("_to_copy");                                            /* 20 */
    LAUNCH(to_bf16_kernel, vec_work(nq, 8), (__nv_bfloat16 *)p->o, st->o32, nq);
    prof_range_pop();

    prof_range_pop();
}

const attn_stage ATTN_STAGE_SYMBOL = {
    /* name */        "03_math",
    /* idea */        "PyTorch's SDPA math backend: FP32 upcast, mask rebuilt every call, FP32 "
                      "CUDA-core GEMMs (no TF32), NaN-safe softmax, downcast",
    /* supports */    eager_supports,
    /* extra_bytes */ math_extra_bytes,
    /* setup */       math_setup,
    /* forward */     math_forward,
    /* teardown */    math_teardown,
    /* parse_flag */  NULL,
    /* flag_help */   NULL,
    /* tolerance */   4e-3,
    /* env_help */    NULL,
    /* check_env */   NULL,
};
