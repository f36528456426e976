/* reference.c: see reference.h. */
#include <math.h>
#include <stdlib.h>

#include "reference.h"

void ref_softmax_row(const double *s, int n, double *p)
{
    double m = -INFINITY;
    int nan_score = 0;
    for (int j = 0; j < n; j++) {
        if (isnan(s[j])) nan_score = 1;
        else if (s[j] > m) m = s[j];
    }
    if (nan_score) { /* NaN in, NaN out for the whole row (as PyTorch); NaN > m alone is false */
        for (int j = 0; j < n; j++) p[j] = NAN;
        return;
    }
    if (m == -INFINITY) { /* fully masked row: zeros (PyTorch's safe softmax), not 0/0 */
        for (int j = 0; j < n; j++) p[j] = 0.0;
        return;
    }
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        p[j] = exp(s[j] - m);
        sum += p[j];
    }
    for (int j = 0; j < n; j++) p[j] /= sum;
}

static size_t idx(const attn_shape *s, int b, int h, int i)
{
    return (((size_t)b * s->heads + h) * s->seq + i) * s->head_dim;
}

void ref_attention_row(const attn_shape *s, double scale, const bf16_bits *q, const bf16_bits *k,
                       const bf16_bits *v, int b, int h, int row, double *work, double *o)
{
    const int D = s->head_dim, n = row + 1; /* causal: keys 0..row */
    const bf16_bits *qr = q + idx(s, b, h, row);
    for (int j = 0; j < n; j++) {
        const bf16_bits *kr = k + idx(s, b, h, j);
        double dot = 0.0;
        for (int d = 0; d < D; d++) dot += (double)bf16_to_float(qr[d]) * bf16_to_float(kr[d]);
        work[j] = dot * scale;
    }
    ref_softmax_row(work, n, work);
    for (int d = 0; d < D; d++) o[d] = 0.0;
    for (int j = 0; j < n; j++) {
        const bf16_bits *vr = v + idx(s, b, h, j);
        for (int d = 0; d < D; d++) o[d] += work[j] * bf16_to_float(vr[d]);
    }
}

static uint64_t mix(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Distinct indices: m of [0, pool), m <= pool / 4, by Floyd's algorithm (Bentley and Floyd, "A
 * sample of brilliance", CACM 30(9), 1987) with an open-addressing hash set for membership.
 * Returns 0, or -1 on host out-of-memory. */
static int sample_floyd(size_t pool, size_t m, uint64_t *state, size_t *out)
{
    size_t cap = 16;
    while (cap < 2 * m) cap *= 2;
    size_t *set = malloc(cap * sizeof *set);
    if (!set) return -1;
    for (size_t i = 0; i < cap; i++) set[i] = SIZE_MAX; /* empty; indices are < pool <= SIZE_MAX */
    size_t n = 0;
    for (size_t j = pool - m; j < pool; j++) {
        size_t t = (size_t)(mix(state) % (j + 1)), slot, pick = t;
        for (int pass = 0; pass < 2; pass++) { /* t, or j when t is taken (j is never taken) */
            slot = (size_t)(((uint64_t)pick * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
            while (set[slot] != SIZE_MAX && set[slot] != pick) slot = (slot + 1) & (cap - 1);
            if (set[slot] == SIZE_MAX) break;
            pick = j;
        }
        set[slot] = pick;
        out[n++] = pick;
    }
    free(set);
    return 0;
}

/* Distinct indices: m of [0, pool), by selection sampling (Knuth, TAOCP vol. 2, 3.4.2,
 * Algorithm S): one pass, index t taken with probability (still needed) / (still left). */
static void sample_selection(size_t pool, size_t m, uint64_t *state, size_t *out)
{
    size_t n = 0;
    for (size_t t = 0; t < pool && n < m; t++)
        if (mix(state) % (pool - t) < m - n) out[n++] = t;
}

size_t ref_pick_rows(const attn_shape *s, size_t n_rows, uint64_t seed, size_t *rows)
{
    const size_t heads = (size_t)s->batch * s->heads, total = heads * s->seq;
    if (n_rows >= total) {
        for (size_t r = 0; r < total; r++) rows[r] = r;
        return total;
    }
    if (n_rows == 0) return 0;
    /* Fixed rows first: rows 0 and seq-1 of the first, a middle and the last (b, h), without
     * repeats (with one head, or seq = 1, they coincide). */
    const size_t fixed_heads[3] = {0, heads / 2, heads - 1};
    size_t n = 0;
    for (int f = 0; f < 3; f++)
        for (int end = 0; end < 2; end++) {
            const size_t r = fixed_heads[f] * s->seq + (end ? (size_t)s->seq - 1 : 0);
            int seen = 0;
            for (size_t i = 0; i < n; i++) seen |= rows[i] == r;
            if (!seen && n < n_rows) rows[n++] = r;
        }
    qsort(rows, n, sizeof *rows, cmp_size);
    /* The rest: distinct draws from the other total - n rows, the i-th of them being the i-th
     * row that is not fixed. */
    const size_t m = n_rows - n, pool = total - n, n_fixed = n;
    size_t fixed[6];
    for (size_t i = 0; i < n_fixed; i++) fixed[i] = rows[i];
    uint64_t state = seed ^ 0x5EEDC0DEull;
    if (m == 0) {
        /* n_rows fixed rows were all it took */
    } else if (m <= pool / 4) {
        if (sample_floyd(pool, m, &state, rows + n_fixed) != 0) return 0;
    } else {
        sample_selection(pool, m, &state, rows + n_fixed);
    }
    for (size_t i = n_fixed; i < n_rows; i++)
        for (size_t f = 0; f < n_fixed; f++) /* fixed[] ascending: skip past each one at or below */
            if (fixed[f] <= rows[i]) rows[i]++;
    qsort(rows, n_rows, sizeof *rows, cmp_size);
    return n_rows;
}

check_result ref_check(const attn_shape *s, double scale, const bf16_bits *q, const bf16_bits *k,
                       const bf16_bits *v, const bf16_bits *o, const size_t *rows, size_t n_rows)
{
    check_result r = {0.0, 0.0, n_rows, 0};
    const int D = s->head_dim;
    double *work = malloc(sizeof(double) * ((size_t)s->seq + D));
    if (!work) { r.nonfinite = (size_t)-1; return r; }
    double *ref = work + s->seq, err2 = 0.0, ref2 = 0.0;
    for (size_t n = 0; n < n_rows; n++) {
        size_t flat = rows[n];
        int i = (int)(flat % s->seq);
        size_t bh = flat / s->seq;
        int h = (int)(bh % s->heads), b = (int)(bh / s->heads);
        ref_attention_row(s, scale, q, k, v, b, h, i, work, ref);
        const bf16_bits *orow = o + idx(s, b, h, i);
        for (int d = 0; d < D; d++) {
            double got = bf16_to_float(orow[d]);
            if (!isfinite(got)) { r.nonfinite++; continue; }
            double e = fabs(got - ref[d]);
            if (e > r.max_abs) r.max_abs = e;
            err2 += e * e;
            ref2 += ref[d] * ref[d];
        }
    }
    free(work);
    r.rel_l2 = ref2 > 0.0 ? sqrt(err2 / ref2) : sqrt(err2);
    return r;
}
