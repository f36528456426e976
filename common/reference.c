/* reference.c: see reference.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "threads.h"

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

/* The scores of query row qr against keys 0..n-1 of its head (kh: the head's key 0; keys are D
 * apart): sc[j] = (Σ_d q_d·k_jd)·scale in float64, each sum in d order from 0.0, as
 * ref_attention_row takes it. Four keys at a time: four independent sums, each in the same order,
 * so the same bits as one key at a time, without waiting on one add after another. */
static void ref_scores(const bf16_bits *qr, const bf16_bits *kh, int D, int n, double scale,
                       double *sc)
{
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        const bf16_bits *k0 = kh + (size_t)j * D, *k1 = k0 + D, *k2 = k1 + D, *k3 = k2 + D;
        double d0 = 0.0, d1 = 0.0, d2 = 0.0, d3 = 0.0;
        for (int d = 0; d < D; d++) {
            const double x = bf16_to_float(qr[d]);
            d0 += x * bf16_to_float(k0[d]);
            d1 += x * bf16_to_float(k1[d]);
            d2 += x * bf16_to_float(k2[d]);
            d3 += x * bf16_to_float(k3[d]);
        }
        sc[j] = d0 * scale; sc[j + 1] = d1 * scale; sc[j + 2] = d2 * scale; sc[j + 3] = d3 * scale;
    }
    for (; j < n; j++) {
        const bf16_bits *kr = kh + (size_t)j * D;
        double dot = 0.0;
        for (int d = 0; d < D; d++) dot += (double)bf16_to_float(qr[d]) * bf16_to_float(kr[d]);
        sc[j] = dot * scale;
    }
}

void ref_attention_row(const attn_shape *s, double scale, const bf16_bits *q, const bf16_bits *k,
                       const bf16_bits *v, int b, int h, int row, double *work, double *o)
{
    const int D = s->head_dim, n = row + 1; /* causal: keys 0..row */
    ref_scores(q + idx(s, b, h, row), k + idx(s, b, h, 0), D, n, scale, work);
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

/* Adds row r to rows[0..n) unless it is there; returns the new n. */
static size_t add_fixed(size_t *rows, size_t n, size_t r)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i] == r) return n;
    rows[n] = r;
    return n + 1;
}

size_t ref_pick_rows(const attn_shape *s, size_t n_rows, uint64_t seed, size_t *rows)
{
    const size_t heads = (size_t)s->batch * s->heads, total = heads * s->seq, seq = s->seq;
    if (n_rows >= total) {
        for (size_t r = 0; r < total; r++) rows[r] = r;
        return total;
    }
    if (n_rows == 0) return 0;
    /* Fixed rows first, in priority order, without repeats (with one head, or a short seq, they
     * coincide): rows 0 and seq-1 of the first, a middle and the last (b, h); then the rest of
     * the last query tile of the last, the first and the middle (b, h), from row seq-2 down. */
    const size_t fixed_heads[3] = {0, heads / 2, heads - 1}, tile_heads[3] = {heads - 1, 0, heads / 2};
    const size_t tile = seq < REF_LAST_TILE ? seq : REF_LAST_TILE;
    size_t n = 0;
    for (int f = 0; f < 3 && n < n_rows; f++) {
        n = add_fixed(rows, n, fixed_heads[f] * seq);
        if (n < n_rows) n = add_fixed(rows, n, fixed_heads[f] * seq + seq - 1);
    }
    for (int f = 0; f < 3; f++)
        for (size_t i = 2; i <= tile && n < n_rows; i++)
            n = add_fixed(rows, n, tile_heads[f] * seq + seq - i);
    qsort(rows, n, sizeof *rows, cmp_size);
    /* The rest: distinct draws from the other total - n rows, the i-th of them being the i-th
     * row that is not fixed. */
    const size_t m = n_rows - n, pool = total - n, n_fixed = n;
    enum { MAX_FIXED = 6 + 3 * (REF_LAST_TILE - 1) };
    size_t fixed[MAX_FIXED];
    for (size_t i = 0; i < n_fixed; i++) fixed[i] = rows[i];
    uint64_t state = seed ^ 0x5EEDC0DEull;
    if (m == 0) {
        /* n_rows fixed rows were all it took */
    } else if (m <= pool / 4) {
        if (sample_floyd(pool, m, &state, rows + n_fixed) != 0) return 0;
        qsort(rows + n_fixed, m, sizeof *rows, cmp_size);
    } else {
        sample_selection(pool, m, &state, rows + n_fixed); /* ascending already */
    }
    /* Draw x (ascending) is the x-th row that is not fixed: step past each fixed row at or below
     * it. One merge pass, as both lists ascend. */
    size_t f = 0;
    for (size_t i = n_fixed; i < n_rows; i++) {
        size_t x = rows[i] + f;
        while (f < n_fixed && fixed[f] <= x) { f++; x++; }
        rows[i] = x;
    }
    qsort(rows, n_rows, sizeof *rows, cmp_size);
    return n_rows;
}

/* The sums over keys of ref_row_with_bound, one key's terms at a time: ref[d] += p·v_d and
 * pv[d] += p·|v_d| (add_pv), bound[d] += w·|v_d - ref[d]| (add_bound), for d < D. Eight elements
 * at a time, loops of fixed length the compiler can turn into vector instructions: each element
 * gets the same products and adds as one at a time, the same bits. */
static void add_pv(double *restrict ref, double *restrict pv, const bf16_bits *restrict vr,
                   double p, int D)
{
    int d = 0;
    for (; d + 8 <= D; d += 8) {
        for (int e = 0; e < 8; e++) ref[d + e] += p * (double)bf16_to_float(vr[d + e]);
        for (int e = 0; e < 8; e++) pv[d + e] += p * fabs((double)bf16_to_float(vr[d + e]));
    }
    for (; d < D; d++) {
        const double x = bf16_to_float(vr[d]);
        ref[d] += p * x;
        pv[d] += p * fabs(x);
    }
}

static void add_bound(double *restrict bound, const double *restrict ref,
                      const bf16_bits *restrict vr, double w, int D)
{
    int d = 0;
    for (; d + 8 <= D; d += 8)
        for (int e = 0; e < 8; e++) bound[d + e] += w * fabs(bf16_to_float(vr[d + e]) - ref[d + e]);
    for (; d < D; d++) bound[d] += w * fabs(bf16_to_float(vr[d]) - ref[d]);
}

/* One row's reference and element-wise bounds (reference.h, REF_BF16_U). work: 2·seq doubles;
 * ref, bound: D each. */
static void ref_row_with_bound(const attn_shape *s, double scale, const bf16_bits *q,
                               const bf16_bits *k, const bf16_bits *v, int b, int h, int row,
                               double *work, double *ref, double *bound)
{
    const int D = s->head_dim, n = row + 1;
    double *sc = work, *p = work + s->seq;
    ref_scores(q + idx(s, b, h, row), k + idx(s, b, h, 0), D, n, scale, sc);
    ref_softmax_row(sc, n, p);
    for (int d = 0; d < D; d++) ref[d] = bound[d] = 0.0;
    double *pv = bound; /* Σ_j p_j·|v_jd| first, in bound[] */
    for (int j = 0; j < n; j++) add_pv(ref, pv, v + idx(s, b, h, j), p[j], D);
    const double u = REF_BF16_U, gamma = (n + D) * 0x1p-24;
    for (int d = 0; d < D; d++) bound[d] = u * fabs(ref[d]) + (u + gamma) * pv[d];
    for (int j = 0; j < n; j++)
        add_bound(bound, ref, v + idx(s, b, h, j), 2.0 * u * p[j] * fabs(sc[j]), D);
    for (int d = 0; d < D; d++) bound[d] = 2.0 * bound[d] + 0x1p-24; /* margin 2, floor */
}

/* One checked row's share of a check_result: its sums and its worst element (col -1: none). */
typedef struct {
    double err2, ref2, max_abs, ratio, got, want, bound;
    size_t nonfinite, over;
    int col;
} row_result;

/* The flat row index (b·heads + h)·seq + i as (b, h, i). */
static void row_pos(const attn_shape *s, size_t flat, int *b, int *h, int *i)
{
    const size_t bh = flat / s->seq;
    *i = (int)(flat % s->seq);
    *h = (int)(bh % s->heads);
    *b = (int)(bh / s->heads);
}

/* One row of O (orow, D elements) against its reference and bounds. */
static void compare_row(int D, const double *ref, const double *bound, const bf16_bits *orow,
                        row_result *out)
{
    row_result r;
    memset(&r, 0, sizeof r);
    r.col = -1;
    for (int d = 0; d < D; d++) {
        double got = bf16_to_float(orow[d]), e = fabs(got - ref[d]);
        double ratio = isfinite(got) ? e / bound[d] : INFINITY;
        if (!isfinite(got)) r.nonfinite++;
        if (!(ratio <= 1.0)) r.over++;
        if (r.col < 0 || ratio > r.ratio) { /* the first of the worst; INFINITY beats all else */
            r.ratio = ratio;
            r.col = d;
            r.got = got; r.want = ref[d]; r.bound = bound[d];
        }
        if (!isfinite(got)) continue;
        if (e > r.max_abs) r.max_abs = e;
        r.err2 += e * e;
        r.ref2 += ref[d] * ref[d];
    }
    *out = r;
}

/* Checks row `flat` of O: its reference, every element against its bound (reference.h). work:
 * 2·seq + 2·D doubles. */
static void check_row(const attn_shape *s, double scale, const bf16_bits *q, const bf16_bits *k,
                      const bf16_bits *v, const bf16_bits *o, size_t flat, double *work,
                      row_result *out)
{
    const int D = s->head_dim;
    int b, h, i;
    row_pos(s, flat, &b, &h, &i);
    double *ref = work + 2 * (size_t)s->seq, *bound = ref + D;
    ref_row_with_bound(s, scale, q, k, v, b, h, i, work, ref, bound);
    compare_row(D, ref, bound, o + idx(s, b, h, i), out);
}

/* The rows are shared out among threads: thread t of n_threads checks rows t, t + n_threads,
 * t + 2·n_threads, ... (the rows ascend, so each thread gets short and long causal rows alike) and
 * writes each row's result into its own slot; ref_check then adds the slots up in row order, so
 * the result has the same bits whatever the number of threads. */
typedef struct {
    const attn_shape *s;
    double scale;
    const bf16_bits *q, *k, *v, *o;
    const size_t *rows;
    size_t n_rows, first, stride;
    row_result *out;
    int failed; /* 1: no work buffer (host out of memory) */
} check_job;

static void *check_rows(void *arg)
{
    check_job *j = arg;
    double *work = malloc(sizeof(double) * (2 * (size_t)j->s->seq + 2 * (size_t)j->s->head_dim));
    if (!work) { j->failed = 1; return NULL; }
    for (size_t n = j->first; n < j->n_rows; n += j->stride)
        check_row(j->s, j->scale, j->q, j->k, j->v, j->o, j->rows[n], work, &j->out[n]);
    free(work);
    return NULL;
}

/* The check_result of host out-of-memory: nothing was checked. */
static check_result unchecked(size_t n_rows)
{
    check_result r;
    memset(&r, 0, sizeof r);
    r.rows = n_rows;
    r.b = r.h = r.row = r.col = -1;
    r.nonfinite = (size_t)-1;
    r.ratio = INFINITY;
    return r;
}

/* The check_result of n_rows row results, added up in row order (the same sums whatever thread
 * computed which row). */
static check_result sum_rows(const attn_shape *s, const size_t *rows, size_t n_rows,
                             const row_result *out)
{
    check_result r;
    memset(&r, 0, sizeof r);
    r.rows = n_rows;
    r.b = r.h = r.row = r.col = -1;
    double err2 = 0.0, ref2 = 0.0;
    for (size_t n = 0; n < n_rows; n++) {
        const row_result *x = &out[n];
        r.nonfinite += x->nonfinite;
        r.over += x->over;
        if (x->max_abs > r.max_abs) r.max_abs = x->max_abs;
        err2 += x->err2;
        ref2 += x->ref2;
        if (x->col >= 0 && (r.b < 0 || x->ratio > r.ratio)) {
            int i;
            r.ratio = x->ratio;
            row_pos(s, rows[n], &r.b, &r.h, &i);
            r.row = i; r.col = x->col;
            r.got = x->got; r.want = x->want; r.bound = x->bound;
        }
    }
    r.rel_l2 = ref2 > 0.0 ? sqrt(err2 / ref2) : sqrt(err2);
    return r;
}

/* Fewer rows than this per thread: fewer threads (starting one costs about as much as a few
 * short rows). */
enum { REF_ROWS_PER_THREAD = 8 };

check_result ref_check(const attn_shape *s, double scale, const bf16_bits *q, const bf16_bits *k,
                       const bf16_bits *v, const bf16_bits *o, const size_t *rows, size_t n_rows)
{
    const size_t n_threads = threads_for(n_rows, REF_ROWS_PER_THREAD);
    return ref_check_threads(s, scale, q, k, v, o, rows, n_rows, n_threads);
}

check_result ref_check_threads(const attn_shape *s, double scale, const bf16_bits *q,
                               const bf16_bits *k, const bf16_bits *v, const bf16_bits *o,
                               const size_t *rows, size_t n_rows, size_t n_threads)
{
    if (n_threads < 1) n_threads = 1;
    if (n_threads > THREADS_MAX) n_threads = THREADS_MAX;
    row_result *out = malloc(sizeof *out * (n_rows ? n_rows : 1));
    check_job jobs[THREADS_MAX];
    int failed = !out;
    if (!failed) {
        for (size_t t = 0; t < n_threads; t++)
            jobs[t] = (check_job){s, scale, q, k, v, o, rows, n_rows, t, n_threads, out, 0};
        threads_run(n_threads, check_rows, jobs, sizeof *jobs);
        for (size_t t = 0; t < n_threads; t++) failed |= jobs[t].failed;
    }
    if (failed) { free(out); return unchecked(n_rows); }
    const check_result r = sum_rows(s, rows, n_rows, out);
    free(out);
    return r;
}

/* The reference rows of a ref_expected: thread t of n_threads computes rows t, t + n_threads,
 * ... (as check_rows). */
typedef struct {
    ref_expected *e;
    double scale;
    const bf16_bits *q, *k, *v;
    size_t first, stride;
    int failed; /* 1: no work buffer (host out of memory) */
} expect_job;

static void *expect_rows(void *arg)
{
    expect_job *j = arg;
    ref_expected *e = j->e;
    const int D = e->s.head_dim;
    double *work = malloc(sizeof(double) * 2 * (size_t)e->s.seq);
    if (!work) { j->failed = 1; return NULL; }
    for (size_t n = j->first; n < e->n_rows; n += j->stride) {
        int b, h, i;
        row_pos(&e->s, e->rows[n], &b, &h, &i);
        ref_row_with_bound(&e->s, j->scale, j->q, j->k, j->v, b, h, i, work, e->ref + n * D,
                           e->bound + n * D);
    }
    free(work);
    return NULL;
}

int ref_expect(ref_expected *e, const attn_shape *s, double scale, const bf16_bits *q,
               const bf16_bits *k, const bf16_bits *v, const size_t *rows, size_t n_rows)
{
    memset(e, 0, sizeof *e);
    e->s = *s;
    e->rows = rows;
    e->n_rows = n_rows;
    const size_t elems = n_rows * (size_t)s->head_dim + 1;
    e->ref = malloc(sizeof(double) * elems);
    e->bound = malloc(sizeof(double) * elems);
    int failed = !e->ref || !e->bound;
    if (!failed) {
        const size_t n_threads = threads_for(n_rows, REF_ROWS_PER_THREAD);
        expect_job jobs[THREADS_MAX];
        for (size_t t = 0; t < n_threads; t++)
            jobs[t] = (expect_job){e, scale, q, k, v, t, n_threads, 0};
        threads_run(n_threads, expect_rows, jobs, sizeof *jobs);
        for (size_t t = 0; t < n_threads; t++) failed |= jobs[t].failed;
    }
    if (failed) { ref_expect_free(e); return -1; }
    return 0;
}

check_result ref_expect_check(const ref_expected *e, const bf16_bits *o)
{
    const int D = e->s.head_dim;
    row_result *out = malloc(sizeof *out * (e->n_rows ? e->n_rows : 1));
    if (!out) return unchecked(e->n_rows);
    for (size_t n = 0; n < e->n_rows; n++) {
        int b, h, i;
        row_pos(&e->s, e->rows[n], &b, &h, &i);
        compare_row(D, e->ref + n * D, e->bound + n * D, o + idx(&e->s, b, h, i), &out[n]);
    }
    check_result r = sum_rows(&e->s, e->rows, e->n_rows, out);
    free(out);
    return r;
}

void ref_expect_free(ref_expected *e)
{
    free(e->ref);
    free(e->bound);
    e->ref = e->bound = NULL;
}

int ref_check_pass(const check_result *r, double rel_l2_bound)
{
    return r->nonfinite == 0 && r->over == 0 && r->rel_l2 <= rel_l2_bound;
}

void ref_check_line(char *buf, size_t len, const check_result *r, size_t total_rows,
                    double rel_l2_bound)
{
    const int pass = ref_check_pass(r, rel_l2_bound);
    int k = snprintf(buf, len, "check: %s on %zu of %zu query rows against the float64 reference: "
                     "rel_l2=%.3e (bound %.1e), max_abs=%.3e", pass ? "PASS" : "FAIL", r->rows,
                     total_rows, r->rel_l2, rel_l2_bound, r->max_abs);
    if (k < 0 || (size_t)k >= len) return;
    if (r->nonfinite == (size_t)-1) {
        snprintf(buf + k, len - k, "; host out of memory: nothing was checked");
        return;
    }
    if (r->nonfinite) {
        int m = snprintf(buf + k, len - k, ", %zu non-finite", r->nonfinite);
        if (m < 0 || (size_t)m >= len - k) return;
        k += m;
    }
    if (r->b < 0) {
        snprintf(buf + k, len - k, "; no element checked");
        return;
    }
    snprintf(buf + k, len - k, "; worst element (batch, head, row, col) = (%d, %d, %d, %d): "
             "got %.6g, want %.6g, |err| %.3e %s bound %.3e (%.2f of it); %zu element%s over "
             "%s bound", r->b, r->h, r->row, r->col, isnan(r->got) ? NAN : r->got, r->want,
             fabs(r->got - r->want), r->ratio <= 1.0 ? "<=" : ">", r->bound, r->ratio, r->over,
             r->over == 1 ? "" : "s", r->over == 1 ? "its" : "their");
}

uint64_t ref_fnv1a64(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001B3ull;
    }
    return h;
}
