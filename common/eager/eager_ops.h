/* eager_ops.h: the eager, "one op = one launch" building blocks that 01_naive and 02_inplace
 * share, written like the ATen ops PyTorch's eager attention calls:
 *
 *   torch.matmul (bf16)        -> eager_bmm_run          cuBLASLt batched GEMM, tensor cores
 *   torch.mul(S, scale)        -> eager_mul_bf16         out-of-place scale kernel
 *   S.masked_fill_(mask, -inf) -> eager_masked_fill_bf16 in-place fill from a bool mask
 *   torch.softmax(S, dim=-1)   -> eager_softmax_rows_bf16  one warp per row, FP32 math
 *   torch.triu(ones, 1)        -> eager_causal_mask      the bool mask, built once at set-up
 *
 * plus the set-up both stages run (eager_setup: buffers, mask, GEMM plans). Out-of-place
 * masked_fill (01) is a device-to-device copy followed by eager_masked_fill_bf16, as in ATen.
 *
 * Tensors are row-major and contiguous; bf16 buffers are void* here (__nv_bfloat16 on the
 * device), bool buffers unsigned char (0 or 1, PyTorch's bool layout). Every launcher enqueues on
 * the given stream and returns without synchronizing; launch errors exit via CUDA_CHECK.
 *
 * Environment knobs of the GEMM (experiments), parsed in eager/eager_env.c. eager_check_env (the
 * stages' check_env) reads all three at start-up, before the device check; set-up reads them
 * again. Unset means the default; any value other than the forms below (an empty one too): one
 * line on stderr naming the variable and the accepted forms, exit 2.
 *   ATTN_GEMM_WORKSPACE=0|1   0 (default, also when unset): ask cuBLASLt's heuristic only for
 *                             algorithms that need no workspace (no buffer is allocated unless no
 *                             such algorithm exists for a GEMM; then that GEMM falls back to
 *                             algorithms with a workspace of up to 32 MiB). 1: allow the workspace
 *                             from the start, as PyTorch does; on the H200 the Q·Kᵀ algorithms then
 *                             need 4 bytes and cuBLAS memsets them before every call (7 GPU
 *                             activities per step in 01_naive instead of 6).
 *   ATTN_GEMM_ALGO=i or i,j   index into cuBLASLt's heuristic list for the first (Q·Kᵀ) and
 *                             second (P·V) GEMM plan; one value applies to both. Each index is
 *                             decimal digits only (no sign, no space), 0 to 15; exactly one or two
 *                             of them. Default 0. The list is the zero-workspace candidates by
 *                             default, the candidates with a workspace under ATTN_GEMM_WORKSPACE=1
 *                             (or in the fallback); an index past the list's end exits 2 at set-up.
 *   ATTN_GEMM_VERBOSE=0|1     1: print every candidate algorithm (id, tile, stages, split-K,
 *                             reduction, swizzle, cluster, workspace, waves), the pick and the
 *                             workspace limit asked for, on stderr. 0 (default, also when unset):
 *                             nothing.
 */
#ifndef ATTN_EAGER_OPS_H
#define ATTN_EAGER_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "eager/eager_env.h"
#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most cuBLASLt workspace a GEMM may ask for when a workspace is allowed (ATTN_GEMM_WORKSPACE=1
 * or the fallback): 32 MiB, the size cuBLAS documents as enough for Hopper and PyTorch's default.
 * Only what the picked algorithms need is allocated (4 bytes on the H200), and nothing by default. */
#define EAGER_GEMM_WORKSPACE_BYTES ((size_t)32 << 20)

/* One cuBLASLt handle and the workspace its plans share. */
typedef struct {
    cublasLtHandle_t lt;
    int allow_workspace;        /* ATTN_GEMM_WORKSPACE=1 */
    void *workspace;            /* device, workspace_bytes; NULL while no plan needs one */
    size_t workspace_bytes;     /* the most any plan on this handle needs */
} eager_blas;

/* A planned row-major batched GEMM in bf16 with FP32 accumulation (torch.bmm): for each of
 * `batch` contiguous matrices, C[M x N] = A[M x K] · B, where B is stored [K x N], or [N x K]
 * and used transposed (b_transposed = 1, as K in Q·Kᵀ). Descriptors and the algorithm are made
 * once at plan time; run only enqueues. */
typedef struct {
    const eager_blas *blas;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;   /* cuBLAS's column-major view (see eager_ops.cu) */
    cublasLtMatmulAlgo_t algo;
    size_t workspace_bytes;           /* what the chosen algorithm needs (<= the blas workspace);
                                       * 0 unless ATTN_GEMM_WORKSPACE=1 or the fallback */
    int m, n, k, batch, b_transposed;
} eager_bmm;

/* Creates the cuBLASLt handle and reads ATTN_GEMM_WORKSPACE (exit 2 if malformed). Allocates
 * nothing: eager_bmm_plan allocates the workspace when a picked algorithm needs one. */
void eager_blas_create(eager_blas *b);
void eager_blas_destroy(eager_blas *b);

/* Plans C = A · op(B) (see eager_bmm). Asks cuBLASLt's heuristic for algorithms that need no
 * workspace (unless blas->allow_workspace), falling back to a workspace of up to
 * EAGER_GEMM_WORKSPACE_BYTES when there are none; if the picked algorithm needs a workspace larger
 * than blas's, it grows blas's (dev_alloc; exactly the bytes needed). `which` (0, 1, ...) selects
 * this plan's entry of ATTN_GEMM_ALGO; `label` names the GEMM in messages ("S = Q.K^T"). The
 * heuristic assumes 256-byte aligned (cudaMalloc'd) base pointers, which eager_bmm_run checks. No
 * algorithm, or an ATTN_GEMM_ALGO index past the heuristic's list: one line on stderr, exit 2. */
void eager_bmm_plan(eager_bmm *g, eager_blas *blas, int batch, int m, int n, int k,
                    int b_transposed, int which, const char *label);
/* Enqueues C = A · op(B) on stream. a, b: bf16 inputs; c: bf16 output (overwritten, beta = 0). */
void eager_bmm_run(const eager_bmm *g, const void *a, const void *b, void *c, cudaStream_t stream);
void eager_bmm_destroy(eager_bmm *g);

/* out[i] = bf16(float(in[i]) * scale), i < n: ATen's out-of-place `mul` by a Python float
 * (FP32 multiply, round to nearest even). out and in must not overlap unless equal. 16-byte
 * vector loads and stores (8 bf16); base pointers 16-byte aligned. */
void eager_mul_bf16(void *out, const void *in, float scale, size_t n, cudaStream_t stream);

/* In place, broadcasting a [seq, seq] bool mask over `bh` = batch·heads score matrices:
 * s[b, i, j] = mask[i, j] ? value : s[b, i, j], for s of shape [bh, seq, seq] bf16. ATen's
 * masked_fill_. 16-byte vectors when seq·seq is a multiple of 8, else one element per thread. */
void eager_masked_fill_bf16(void *s, const unsigned char *mask, float value, size_t bh, int seq,
                            cudaStream_t stream);

/* Row softmax: p[r, :] = softmax(s[r, :]) for `rows` rows of `cols` bf16 values, p and s
 * [rows, cols] (may be the same buffer). FP32 math; one warp per row. Two sweeps over the row: the
 * first keeps a running max and a running sum rescaled when the max grows (the online normalizer
 * of Milakov & Gimelshein, "Online normalizer calculation for softmax", 2018), the second writes
 * exp(x - max) / sum. 16-byte loads when cols is a multiple of 8. A row that is all -inf gives NaN,
 * as torch.softmax does. */
void eager_softmax_rows_bf16(void *p, const void *s, size_t rows, int cols, cudaStream_t stream);

/* mask[i, j] = (j > i) for a [seq, seq] bool: torch.triu(torch.ones(seq, seq, dtype=bool),
 * diagonal=1), true where a query must not see a key (top-left causal). */
void eager_causal_mask(unsigned char *mask, int seq, cudaStream_t stream);

/* ---- the set-up 01_naive and 02_inplace share ------------------------------------------------
 * Buffers, mirroring what PyTorch's caching allocator hands out: two score-sized bf16 buffers,
 * s_a and s_b, [batch, heads, seq, seq]. A tensor freed in eager code returns its block to the
 * cache and the next tensor of the same size gets it back, so the naive forward never holds more
 * than two score tensors at once; the stages rotate s_a/s_b the same way (their forward says which
 * tensor lives where). Plus the [seq, seq] bool causal mask, and the cuBLASLt workspace only if
 * a GEMM's algorithm needs one (ATTN_GEMM_WORKSPACE=1 or the fallback; see eager_bmm_plan). */
typedef struct {
    eager_blas blas;
    eager_bmm qk;               /* S[bh] = Q[bh] · K[bh]ᵀ: M = N = seq, K = head_dim */
    eager_bmm pv;               /* O[bh] = P[bh] · V[bh]: M = seq, N = head_dim, K = seq */
    void *s_a, *s_b;            /* bf16 [batch, heads, seq, seq] each */
    unsigned char *mask;        /* bool [seq, seq], true above the diagonal */
    size_t s_elems;             /* batch·heads·seq·seq */
} eager_state;

/* The stage contract's `supports` for 01, 02 and 03: bf16 (compute capability 8.0 or
 * newer) and batch·heads within cuBLASLt's int32 batch count. */
int eager_supports(const attn_shape *s, const struct cudaDeviceProp *prop, char *why, size_t why_len);
/* Device bytes eager_setup always allocates: 2 score buffers + mask. The cuBLASLt workspace, if
 * any, is known only once the GEMMs are planned: eager_setup adds it to p->extra_bytes. Checks
 * ATTN_GEMM_WORKSPACE early (exit 2 if malformed). */
size_t eager_extra_bytes(const attn_shape *s);
/* Allocates, builds the mask (one kernel, inside a "triu" host range) and plans both GEMMs.
 * Returns the state (malloc'd); p->extra_bytes is set to what was allocated (score buffers,
 * mask and the GEMM workspace, 0 bytes of it by default). */
void *eager_setup(attn_problem *p);
void eager_teardown(attn_problem *p);

#ifdef __cplusplus
}
#endif
#endif
