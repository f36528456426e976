/* reference.h: causal attention in float64 on the CPU, row by row, and the error against it.
 * C11. Layout as everywhere: [batch, heads, seq, head_dim] row-major, bf16 bits in. */
#ifndef ATTN_REFERENCE_H
#define ATTN_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "tensor.h"

/* Softmax of one row in float64 with the NaN-safe rule of PyTorch's math backend: a row whose
 * scores are all -inf yields all zeros, not NaN; a row holding a NaN score yields all NaN (as
 * PyTorch: NaN propagates). s and p may alias. n >= 0. */
void ref_softmax_row(const double *s, int n, double *p);

/* O row of query `row` of head (b, h), float64: o[d] = sum_j softmax_j(q·k_j·scale) v_j[d] over
 * keys j <= row (top-left causal). work holds seq doubles. */
void ref_attention_row(const attn_shape *s, double scale, const bf16_bits *q, const bf16_bits *k,
                       const bf16_bits *v, int b, int h, int row, double *work, double *o);

/* The element-wise pass rule. Every checked element must satisfy
 *
 *     |o_d - ref_d| <= bound_d = 2·e_d + 2^-24,  where
 *     e_d = u·|ref_d|                           (O rounded to bf16)
 *         + (u + (n + D)·2^-24)·Σ_j p_j·|v_jd|  (P rounded to bf16; FP32 sums)
 *         + 2u·Σ_j p_j·|s_j|·|v_jd - ref_d|     (S rounded to bf16, twice)
 *
 * with u = 2^-8 (bf16 keeps 8 significant bits: rounding to nearest moves x by at most u·|x|),
 * s_j = q·k_j·scale and p_j = softmax(s)_j the exact (float64) scores and probabilities of the row,
 * n = row + 1 keys, D = head_dim. e_d is the worst-case first-order error of a kernel that rounds
 * S to bf16 (a GEMM's bf16 output, then the scaled copy: two roundings, as 01/02 do), P to bf16
 * (the operand of the P·V GEMM or mma, as 01/02 and 04-06 do) and O to bf16, with every sum in
 * FP32:
 *   - O: |fl(o) - o| <= u·|o|;
 *   - P: p_j(1 + d_j) with |d_j| <= u moves o_d by Σ_j d_j·p_j·v_jd; a row sum l taken before the
 *     rounding (FlashAttention) or a normalized P rounded after (01/02) give the same term; FP32
 *     sums of n products (P·V) and D products (Q·K) add at most (n + D)·2^-24 relative;
 *   - S: s_j + e_j with |e_j| <= 2u·|s_j| moves p_j by p_j(e_j - Σ_k p_k e_k), hence o_d by
 *     Σ_j p_j·e_j·(v_jd - o_d).
 * A correct kernel's error is at most e_d (to first order), so the factor 2 is a margin of at
 * least 2 at every element (FlashAttention's tests use the same factor against the error of a
 * bf16 reference); 2^-24 keeps the bound above 0. The rule is one worst case for every stage (a
 * stage that keeps S in FP32 has slack in the third term). It adapts to the row: loose where few
 * keys carry the softmax (an early row, whose output is one or two V rows, may legitimately be off
 * by several bf16 ulps), tight deep in a long row, where a lost key tile moves O by far more than
 * rounding can. docs/perf-notes.md ("The element-wise check") gives the kernels' emulated errors
 * against it and the faults it catches. */
#define REF_BF16_U 0x1p-8

/* Result of checking O against the reference on some rows. */
typedef struct {
    double rel_l2;       /* ||O - ref||_2 / ||ref||_2 over the checked finite elements */
    double max_abs;      /* max |O - ref| over the checked finite elements */
    size_t rows;         /* query rows checked */
    size_t nonfinite;    /* elements of O that are NaN or inf (unwritten poison included);
                          * (size_t)-1: host out-of-memory, nothing was checked */
    size_t over;         /* elements beyond their element-wise bound, non-finite ones included */
    /* The worst element: the first non-finite one if any, else the one with the largest
     * |O - ref| / bound (ratio); b = -1 when no element was checked. */
    double ratio;        /* its |O - ref| / bound; INFINITY when it is non-finite */
    int b, h, row, col;  /* its position: batch, head, query row, column (head_dim index) */
    double got, want, bound; /* O (bf16 read as double), the reference, its bound */
} check_result;

/* Picks the rows to check: all of them when n_rows >= batch*heads*seq, else exactly n_rows
 * distinct rows. The fixed rows come first, as many as n_rows allows, in this order: rows 0 and
 * seq-1 of the first, a middle and the last (b, h); then the rest of the last query tile (rows
 * seq-64 .. seq-2, where causal loop-bound bugs live) of the last, the first and the middle
 * (b, h). The rest are drawn without repeats from a generator seeded by seed (Floyd's algorithm,
 * or selection sampling when many rows are wanted). Writes the flat row indices
 * ((b*heads + h)*seq + i), ascending, into rows[] (capacity n_rows, or all) and returns how many:
 * min(n_rows, batch*heads*seq); 0 for n_rows = 0 or host out-of-memory. */
size_t ref_pick_rows(const attn_shape *s, size_t n_rows, uint64_t seed, size_t *rows);

/* The query rows of the last tile that ref_pick_rows always takes (when n_rows allows). */
#define REF_LAST_TILE 64

/* Compares O (bf16 bits, whole tensor) with the float64 reference on the given rows: the
 * relative L2 error, the largest absolute error, and every element against its element-wise
 * bound (REF_BF16_U above). The rows are shared out among POSIX threads, one per online CPU
 * (threads.h), each row's result in its own slot, added up in row order: the
 * same bits whatever the thread count. A thread that cannot be started leaves its rows to the
 * calling thread. */
check_result ref_check(const attn_shape *s, double scale, const bf16_bits *q, const bf16_bits *k,
                       const bf16_bits *v, const bf16_bits *o, const size_t *rows, size_t n_rows);

/* ref_check on n_threads threads (0 counts as 1, at most THREADS_MAX): the unit tests hold its result to the same bits
 * at several counts. */
check_result ref_check_threads(const attn_shape *s, double scale, const bf16_bits *q,
                               const bf16_bits *k, const bf16_bits *v, const bf16_bits *o,
                               const size_t *rows, size_t n_rows, size_t n_threads);

/* The reference and the element-wise bounds of some rows, computed once, to check several O
 * against (the unit tests check five stages' emulated arithmetic on one problem):
 * ref_expect_check(e, o) has the same bits as ref_check on the same rows. Holds
 * 2·n_rows·head_dim doubles; rows must outlive it. */
typedef struct {
    attn_shape s;
    const size_t *rows;
    size_t n_rows;
    double *ref, *bound; /* rows[n]'s reference and bounds: [n·head_dim, (n + 1)·head_dim) */
} ref_expected;

/* Computes e's reference rows (shared out among threads as ref_check's). 0, or -1 on host
 * out-of-memory (e then holds nothing). */
int ref_expect(ref_expected *e, const attn_shape *s, double scale, const bf16_bits *q,
               const bf16_bits *k, const bf16_bits *v, const size_t *rows, size_t n_rows);

/* O (whole tensor) against e's rows: ref_check's result. */
check_result ref_expect_check(const ref_expected *e, const bf16_bits *o);

void ref_expect_free(ref_expected *e);

/* The verdict: no non-finite element, rel_l2 <= rel_l2_bound (the stage's: 1e-2, 03_math 4e-3)
 * and every element within its bound. 1 = pass. */
int ref_check_pass(const check_result *r, double rel_l2_bound);

/* The `check:` line (no newline): verdict, rows checked of total_rows, rel_l2 and its bound,
 * max_abs, non-finite count, and the worst element: (batch, head, row, col), got, want, |err|
 * and its bound. */
void ref_check_line(char *buf, size_t len, const check_result *r, size_t total_rows,
                    double rel_l2_bound);

/* FNV-1a 64 (Fowler, Noll, Vo) of n bytes: the run's o_hash, a fingerprint of all of O. */
uint64_t ref_fnv1a64(const void *data, size_t n);

#endif
