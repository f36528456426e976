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

/* Result of checking O against the reference on some rows. */
typedef struct {
    double rel_l2;       /* ||O - ref||_2 / ||ref||_2 over the checked elements */
    double max_abs;      /* max |O - ref| */
    size_t rows;         /* query rows checked */
    size_t nonfinite;    /* elements of O that are NaN or inf (unwritten poison included) */
} check_result;

/* Picks the rows to check: all of them when n_rows >= batch*heads*seq, else exactly n_rows
 * distinct rows that always include rows 0 and seq-1 of the first, the last and a middle (b, h)
 * (as many of those as n_rows allows), the rest drawn without repeats from a generator seeded by
 * seed (Floyd's algorithm, or selection sampling when many rows are wanted). Writes the flat row
 * indices ((b*heads + h)*seq + i), ascending, into rows[] (capacity n_rows, or all) and returns
 * how many: min(n_rows, batch*heads*seq); 0 for n_rows = 0 or host out-of-memory. */
size_t ref_pick_rows(const attn_shape *s, size_t n_rows, uint64_t seed, size_t *rows);

/* Compares O (bf16 bits, whole tensor) with the float64 reference on the given rows. */
check_result ref_check(const attn_shape *s, double scale, const bf16_bits *q, const bf16_bits *k,
                       const bf16_bits *v, const bf16_bits *o, const size_t *rows, size_t n_rows);

#endif
