/* check_tests.c: the element-wise pass rule of common/reference.c against the stages' arithmetic,
 * emulated on the CPU, and against faults built into O.
 *
 * The emulations round where the kernels round, with FP32 everywhere else (the GPU's summation
 * order differs; FP32 order effects are far below the bf16 roundings):
 *   eager  01/02: S = bf16(Q·Kᵀ) (cuBLASLt, FP32 accumulate), S = bf16(S·scale), P = bf16 of
 *          the FP32 softmax of the bf16 S (exp2 of S·log2e − max, times 1/sum), O = bf16(P·V).
 *   math   03: Q and K times sqrt(scale) in FP32, S, softmax and P·V in FP32, O = bf16(O).
 *   tiled  04: S in FP32 (mma), sweep 1 finds max and sum, sweep 2 P = bf16(exp2(S·c − lse2))
 *          (normalized), O = bf16(Σ P·V), c = scale·log2 e.
 *   flash  05: key tiles of 64 (head_dim 64) or 48 (128): online max, alpha = exp2((m_old −
 *          m_new)·c), p = exp2(S·c − m·c) in FP32, row sum l of the FP32 p, P = bf16(p) into
 *          P·V, O = bf16(acc / l) at the end. `cudnn` is the same with key tiles of 128 (06's
 *          kernel is closed; FlashAttention's arithmetic is the model).
 * Only the rows the check reads are emulated; the others stay NaN poison.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "tensor.h"
#include "threads.h"
#include "unit.h"

typedef enum { EM_EAGER, EM_MATH, EM_TILED, EM_FLASH, EM_CUDNN } em_model;

static const char *const MODEL_NAMES[] = {"eager", "math", "tiled", "flash", "cudnn"};

static float rbf(float x) { return bf16_to_float(bf16_from_float(x)); }

static size_t at(const attn_shape *s, int b, int h, int i)
{
    return (((size_t)b * s->heads + h) * s->seq + i) * s->head_dim;
}

/* The FP32 scores of query row `row` of head (b, h) against keys 0..n_keys-1, into sbuf: the dot
 * of the bf16 Q and K rows (math: each element times sqrt(scale) first, as 03 scales Q and K),
 * each sum in d order. Four keys at a time: four independent sums, each in the same order, so
 * the same bits as one key at a time, without waiting on one add after another. */
static void emulate_scores(int math, const attn_shape *s, const bf16_bits *q, const bf16_bits *k,
                           int b, int h, int row, int n_keys, float *sbuf)
{
    const int D = s->head_dim;
    const float sq = (float)sqrt(1.0 / sqrt((double)D));
    const bf16_bits *qr = q + at(s, b, h, row), *kh = k + at(s, b, h, 0);
    float qf[1024];
    for (int d = 0; d < D; d++) qf[d] = math ? bf16_to_float(qr[d]) * sq : bf16_to_float(qr[d]);
    int j = 0;
    for (; j + 4 <= n_keys; j += 4) {
        const bf16_bits *k0 = kh + (size_t)j * D, *k1 = k0 + D, *k2 = k1 + D, *k3 = k2 + D;
        float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
        if (math)
            for (int d = 0; d < D; d++) {
                d0 += qf[d] * (bf16_to_float(k0[d]) * sq);
                d1 += qf[d] * (bf16_to_float(k1[d]) * sq);
                d2 += qf[d] * (bf16_to_float(k2[d]) * sq);
                d3 += qf[d] * (bf16_to_float(k3[d]) * sq);
            }
        else
            for (int d = 0; d < D; d++) {
                d0 += qf[d] * bf16_to_float(k0[d]);
                d1 += qf[d] * bf16_to_float(k1[d]);
                d2 += qf[d] * bf16_to_float(k2[d]);
                d3 += qf[d] * bf16_to_float(k3[d]);
            }
        sbuf[j] = d0; sbuf[j + 1] = d1; sbuf[j + 2] = d2; sbuf[j + 3] = d3;
    }
    for (; j < n_keys; j++) {
        const bf16_bits *kr = kh + (size_t)j * D;
        float dot = 0.f;
        if (math)
            for (int d = 0; d < D; d++) dot += qf[d] * (bf16_to_float(kr[d]) * sq);
        else
            for (int d = 0; d < D; d++) dot += qf[d] * bf16_to_float(kr[d]);
        sbuf[j] = dot;
    }
}

/* Eager's scores from the FP32 dots (01/02: the GEMM's bf16 output, then its bf16 scaled copy). */
static void eager_scores(const attn_shape *s, const float *dots, int n_keys, float *sbuf)
{
    const float scale = (float)(1.0 / sqrt((double)s->head_dim));
    for (int j = 0; j < n_keys; j++) sbuf[j] = rbf(rbf(dots[j]) * scale);
}

/* acc[d] += p·v[d] for d < D, in FP32 (the P·V update of one key). Eight elements at a time, a
 * loop of fixed length the compiler can turn into vector instructions: each element gets the
 * same product and add as one at a time, the same bits. */
static void add_pv(float *restrict acc, float p, const bf16_bits *restrict vr, int D)
{
    int d = 0;
    for (; d + 8 <= D; d += 8)
        for (int e = 0; e < 8; e++) acc[d + e] += p * bf16_to_float(vr[d + e]);
    for (; d < D; d++) acc[d] += p * bf16_to_float(vr[d]);
}

/* Row `row` of head (b, h) as model m computes it from its scores sbuf (emulate_scores, and
 * eager_scores for eager) over keys 0..n_keys-1 (n_keys = row + 1 normally; fewer for the
 * skipped-tile fault), into o (bf16). */
static void emulate_softmax_pv(em_model m, const attn_shape *s, const bf16_bits *v, int b, int h,
                               int n_keys, const float *sbuf, bf16_bits *o)
{
    const int D = s->head_dim;
    const float scale = (float)(1.0 / sqrt((double)D)), log2e = 1.4426950408889634f;
    const float c = scale * log2e;
    float acc[1024];
    for (int d = 0; d < D; d++) acc[d] = 0.f;
    if (n_keys <= 0) { /* no key at all: a kernel that skips every tile writes zeros */
        for (int d = 0; d < D; d++) o[d] = bf16_from_float(0.f);
        return;
    }
    if (m == EM_EAGER || m == EM_MATH || m == EM_TILED) {
        float mx = -INFINITY, l = 0.f;
        for (int j = 0; j < n_keys; j++) mx = fmaxf(mx, sbuf[j]);
        const float cc = m == EM_TILED ? c : log2e, mc = mx * cc;
        for (int j = 0; j < n_keys; j++) l += exp2f(fmaf(sbuf[j], cc, -mc));
        const float inv = 1.0f / l, lse2 = mc + log2f(l);
        for (int j = 0; j < n_keys; j++) {
            float p = m == EM_TILED ? exp2f(fmaf(sbuf[j], c, -lse2)) : exp2f(fmaf(sbuf[j], cc, -mc)) * inv;
            if (m != EM_MATH) p = rbf(p);
            add_pv(acc, p, v + at(s, b, h, j), D);
        }
        for (int d = 0; d < D; d++) o[d] = bf16_from_float(acc[d]);
        return;
    }
    const int bn = m == EM_CUDNN ? 128 : D == 64 ? 64 : 48;
    float m_run = -INFINITY, l = 0.f;
    for (int t0 = 0; t0 < n_keys; t0 += bn) {
        const int t1 = t0 + bn < n_keys ? t0 + bn : n_keys;
        float m_new = m_run;
        for (int j = t0; j < t1; j++) m_new = fmaxf(m_new, sbuf[j]);
        const float alpha = exp2f((m_run - m_new) * c), mc = m_new * c;
        float sum = 0.f;
        for (int d = 0; d < D; d++) acc[d] *= alpha;
        for (int j = t0; j < t1; j++) {
            const float p = exp2f(fmaf(sbuf[j], c, -mc)), pb = rbf(p);
            sum += p;
            add_pv(acc, pb, v + at(s, b, h, j), D);
        }
        l = fmaf(l, alpha, sum);
        m_run = m_new;
    }
    const float inv = 1.0f / l;
    for (int d = 0; d < D; d++) o[d] = bf16_from_float(acc[d] * inv);
}

/* Row `row` of head (b, h) as model m computes it, over keys 0..n_keys-1, into o (bf16). sbuf
 * holds seq floats. */
static void emulate_row(em_model m, const attn_shape *s, const bf16_bits *q, const bf16_bits *k,
                        const bf16_bits *v, int b, int h, int row, int n_keys, float *sbuf,
                        bf16_bits *o)
{
    emulate_scores(m == EM_MATH, s, q, k, b, h, row, n_keys, sbuf);
    if (m == EM_EAGER) eager_scores(s, sbuf, n_keys, sbuf);
    emulate_softmax_pv(m, s, v, b, h, n_keys, sbuf, o);
}

/* A problem: Q, K, V from the generator (the run's streams), O all poison, the rows the run would
 * check (--check-rows n_rows, the seed's draws). Only what the emulations and the check read is
 * generated, the same bits as the run's whole tensors: Q on the sampled rows, K and V on keys 0
 * to the last sampled row of each head; the rest of Q, K and V is 0. */
typedef struct {
    attn_shape s;
    bf16_bits *q, *k, *v, *o;
    size_t *rows, n_rows, total_rows, elems;
    float *sbuf;
    double scale;
} problem;

static int problem_make(problem *p, int b, int h, int seq, int d, size_t n_rows, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->s = (attn_shape){b, h, seq, d};
    p->elems = (size_t)b * h * seq * d;
    p->total_rows = (size_t)b * h * seq;
    p->n_rows = n_rows < p->total_rows ? n_rows : p->total_rows;
    p->q = calloc(p->elems, 2); p->k = calloc(p->elems, 2);
    p->v = calloc(p->elems, 2); p->o = malloc(p->elems * 2);
    p->rows = malloc(sizeof(size_t) * (p->n_rows + 1));
    p->sbuf = malloc(sizeof(float) * seq);
    if (!p->q || !p->k || !p->v || !p->o || !p->rows || !p->sbuf) return -1;
    if (ref_pick_rows(&p->s, p->n_rows, seed, p->rows) != p->n_rows) return -1;
    const size_t D = (size_t)d, S = (size_t)seq;
    for (size_t r = 0; r < p->n_rows;) { /* Q: each run of consecutive sampled rows */
        size_t end = r + 1;
        while (end < p->n_rows && p->rows[end] == p->rows[end - 1] + 1) end++;
        tensor_fill_normal_part(p->q, p->rows[r] * D, (end - r) * D, seed, 1);
        r = end;
    }
    for (size_t r = 0; r < p->n_rows; r++) { /* K, V: at each head's last sampled row (they ascend) */
        const size_t head = p->rows[r] / S;
        if (r + 1 < p->n_rows && p->rows[r + 1] / S == head) continue;
        const size_t keys = p->rows[r] % S + 1;
        tensor_fill_normal_part(p->k, head * S * D, keys * D, seed, 2);
        tensor_fill_normal_part(p->v, head * S * D, keys * D, seed, 3);
    }
    for (size_t i = 0; i < p->elems; i++) p->o[i] = 0xFFFF; /* the run's poison: memset 0xFF */
    p->scale = (float)(1.0 / sqrt((double)d)); /* the harness passes scale as a float */
    return 0;
}

static void problem_free(problem *p)
{
    free(p->q); free(p->k); free(p->v); free(p->o); free(p->rows); free(p->sbuf);
}

/* One thread's share of emulate_models: rows first, first + stride, ... of p's sample, every
 * model on each row (the FP32 dots of Q and K once for all models that take them). */
typedef struct {
    const problem *p;
    const em_model *models;
    int n_models;
    bf16_bits *out; /* model i's O of sampled row r at (i·n_rows + r)·head_dim; NULL: models[0]'s
                     * rows into p->o */
    size_t first, stride;
} emulate_job;

static void *emulate_share(void *arg)
{
    const emulate_job *j = arg;
    const problem *p = j->p;
    const size_t seq = (size_t)p->s.seq, D = (size_t)p->s.head_dim;
    float *dots = malloc(sizeof(float) * 3 * seq), *math_dots = dots + seq, *eager = math_dots + seq;
    if (!dots) { fprintf(stderr, "emulate: out of memory\n"); exit(2); }
    int plain = 0, math = 0;
    for (int m = 0; m < j->n_models; m++) {
        if (j->models[m] == EM_MATH) math = 1;
        else plain = 1;
    }
    for (size_t r = j->first; r < p->n_rows; r += j->stride) {
        const size_t flat = p->rows[r], bh = flat / seq;
        const int i = (int)(flat % seq), h = (int)(bh % p->s.heads), b = (int)(bh / p->s.heads);
        if (plain) emulate_scores(0, &p->s, p->q, p->k, b, h, i, i + 1, dots);
        if (math) emulate_scores(1, &p->s, p->q, p->k, b, h, i, i + 1, math_dots);
        int eager_done = 0;
        for (int m = 0; m < j->n_models; m++) {
            const em_model model = j->models[m];
            const float *sc = model == EM_MATH ? math_dots : dots;
            if (model == EM_EAGER) {
                if (!eager_done) eager_scores(&p->s, dots, i + 1, eager);
                eager_done = 1;
                sc = eager;
            }
            bf16_bits *o = j->out ? j->out + ((size_t)m * p->n_rows + r) * D : p->o + at(&p->s, b, h, i);
            emulate_softmax_pv(model, &p->s, p->v, b, h, i + 1, sc, o);
        }
    }
    free(dots);
    return NULL;
}

/* The models' O on every sampled row, the rows shared out among threads (each writes only its
 * own rows: the same bits whatever the count); out as emulate_job's. */
static void emulate_models(problem *p, const em_model *models, int n_models, bf16_bits *out)
{
    emulate_job jobs[THREADS_MAX];
    const size_t n = threads_for(p->n_rows, 8);
    for (size_t t = 0; t < n; t++) jobs[t] = (emulate_job){p, models, n_models, out, t, n};
    threads_run(n, emulate_share, jobs, sizeof *jobs);
}

/* Model m's O on every sampled row, into p->o. */
static void emulate_rows(problem *p, em_model m)
{
    emulate_models(p, &m, 1, NULL);
}

static int parse_shape(const char *text, int *b, int *h, int *seq, int *d)
{
    char tail;
    if (sscanf(text, "%dx%dx%dx%d%c", b, h, seq, d, &tail) != 4 || *b < 1 || *h < 1 || *seq < 1 ||
        *d < 1 || *d > 1024 || (long long)*b * *h * *seq * *d > (1ll << 28)) {
        fprintf(stderr, "'%s' is not a shape BxHxSxD (head_dim <= 1024, at most 2^28 elements)\n", text);
        return -1;
    }
    return 0;
}

static int parse_rows(const char *text, size_t *n)
{
    char *end = NULL;
    if (strcmp(text, "all") == 0) { *n = SIZE_MAX; return 0; }
    unsigned long long x = text[0] >= '0' && text[0] <= '9' ? strtoull(text, &end, 10) : 0;
    if (!end || *end || x == 0) { fprintf(stderr, "'%s' is not a row count or all\n", text); return -1; }
    *n = (size_t)x;
    return 0;
}

/* Prints the `check:` line the run would print and the verdict. */
static void print_check(const problem *p, const check_result *r, double tol)
{
    char line[1024];
    ref_check_line(line, sizeof line, r, p->total_rows, tol);
    printf("%s\n", line);
}

/* emulate MODEL[,MODEL...] BxHxSxD [ROWS|all] [SEED]: each model's O on the rows the run would
 * check (one problem, generated once); per model, the check line, then "ratio=<worst |err|/bound>
 * rel_l2=... pass=0|1". */
int unit_emulate(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "emulate: MODEL[,MODEL...] BxHxSxD [ROWS|all] [SEED]\n");
        return 2;
    }
    em_model models[16];
    int n_models = 0, b, h, seq, d;
    char list[256];
    snprintf(list, sizeof list, "%s", argv[1]);
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        int model = -1;
        for (int i = 0; i < 5; i++)
            if (strcmp(name, MODEL_NAMES[i]) == 0) model = i;
        if (model < 0 || n_models == 16) {
            fprintf(stderr, "emulate: model '%s' is not eager, math, tiled, flash or cudnn\n", name);
            return 2;
        }
        models[n_models++] = (em_model)model;
    }
    if (n_models == 0) { fprintf(stderr, "emulate: no model named\n"); return 2; }
    size_t n_rows = 256;
    unsigned long long seed = 0;
    if (parse_shape(argv[2], &b, &h, &seq, &d)) return 2;
    if (argc > 3 && parse_rows(argv[3], &n_rows)) return 2;
    if (argc > 4 && sscanf(argv[4], "%llu", &seed) != 1) { fprintf(stderr, "emulate: bad seed\n"); return 2; }
    problem p;
    ref_expected e;
    bf16_bits *outs = NULL;
    if (problem_make(&p, b, h, seq, d, n_rows, seed) ||
        !(outs = malloc(sizeof *outs * (size_t)n_models * p.n_rows * d + 1)) ||
        ref_expect(&e, &p.s, p.scale, p.q, p.k, p.v, p.rows, p.n_rows)) {
        fprintf(stderr, "emulate: out of memory\n");
        return 2;
    }
    emulate_models(&p, models, n_models, outs);
    for (int m = 0; m < n_models; m++) {
        for (size_t r = 0; r < p.n_rows; r++) /* model m's rows into O; the rest stays poison */
            memcpy(p.o + p.rows[r] * d, outs + ((size_t)m * p.n_rows + r) * d, sizeof *outs * d);
        check_result r = ref_expect_check(&e, p.o);
        const double tol = models[m] == EM_MATH ? 4e-3 : 1e-2;
        print_check(&p, &r, tol);
        printf("ratio=%.4f rel_l2=%.3e max_abs=%.3e pass=%d\n", r.ratio, r.rel_l2, r.max_abs,
               ref_check_pass(&r, tol));
    }
    ref_expect_free(&e);
    free(outs);
    problem_free(&p);
    return 0;
}

/* check-threads BxHxSxD ROWS|all: ref_check of 05's emulated O, with one element off by 0.05
 * (so the worst element is a fault, not a tie of roundings), on 1, 2, 3, 5 and 16 threads; prints
 * "threads=1,2,3,5,16 same=1" when every result has the same bits as the one-thread result, else
 * same=0 and the first count that differs. */
int unit_check_threads(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "check-threads: BxHxSxD ROWS|all\n"); return 2; }
    int b, h, seq, d;
    size_t n_rows;
    if (parse_shape(argv[1], &b, &h, &seq, &d) || parse_rows(argv[2], &n_rows)) return 2;
    problem p;
    if (problem_make(&p, b, h, seq, d, n_rows, 0)) { fprintf(stderr, "check-threads: out of memory\n"); return 2; }
    emulate_rows(&p, EM_FLASH);
    bf16_bits *x = p.o + at(&p.s, b / 2, h / 2, seq / 2) + d / 2; /* row seq/2 of a middle head */
    *x = bf16_from_float(bf16_to_float(*x) + 0.05f);
    const size_t counts[] = {1, 2, 3, 5, 16};
    check_result one = ref_check_threads(&p.s, p.scale, p.q, p.k, p.v, p.o, p.rows, p.n_rows, 1);
    int same = 1;
    size_t differs = 0;
    for (size_t c = 1; c < sizeof counts / sizeof *counts && same; c++) {
        check_result r = ref_check_threads(&p.s, p.scale, p.q, p.k, p.v, p.o, p.rows, p.n_rows,
                                           counts[c]);
        same = r.rows == one.rows && r.nonfinite == one.nonfinite && r.over == one.over &&
               r.b == one.b && r.h == one.h && r.row == one.row && r.col == one.col &&
               !memcmp(&r.rel_l2, &one.rel_l2, sizeof r.rel_l2) &&
               !memcmp(&r.max_abs, &one.max_abs, sizeof r.max_abs) &&
               !memcmp(&r.ratio, &one.ratio, sizeof r.ratio) &&
               !memcmp(&r.got, &one.got, sizeof r.got) && !memcmp(&r.want, &one.want, sizeof r.want) &&
               !memcmp(&r.bound, &one.bound, sizeof r.bound);
        if (!same) differs = counts[c];
    }
    print_check(&p, &one, 1e-2);
    if (same) printf("threads=1,2,3,5,16 same=1\n");
    else printf("threads=1,2,3,5,16 same=0 differs=%zu\n", differs);
    problem_free(&p);
    return 0;
}

/* check-fault KIND [BxHxSxD]: 05's emulated O on the default sample (256 rows, seed 0) with one
 * fault built in, the check line, then "pass=0|1 fault=(b, h, row, col)". KIND:
 *   none         no fault;
 *   diag-tile    the last query tile (rows t0 .. seq-1, t0 = the last multiple of 64 below seq)
 *                of the last head computed without its diagonal key tile (keys t0 .. seq-1);
 *   one-element  O[last batch, last head, seq-1, head_dim/2] += 0.05;
 *   nan-row      row seq-1 of the last head left unwritten (the NaN poison);
 *   other-row    row seq-1 of the last head holds row seq-2's output.
 * The rows the faults recompute are sampled ones (ref_pick_rows always takes the last query tile
 * of the last head), so problem_make has generated what they read. */
int unit_check_fault(int argc, char **argv)
{
    if (argc < 2 || argc > 3) { fprintf(stderr, "check-fault: KIND [BxHxSxD]\n"); return 2; }
    int b = 8, h = 16, seq = 1024, d = 64;
    if (argc > 2 && parse_shape(argv[2], &b, &h, &seq, &d)) return 2;
    const char *kind = argv[1];
    if (strcmp(kind, "none") && strcmp(kind, "diag-tile") && strcmp(kind, "one-element") &&
        strcmp(kind, "nan-row") && strcmp(kind, "other-row")) {
        fprintf(stderr, "check-fault: KIND is none, diag-tile, one-element, nan-row or other-row\n");
        return 2;
    }
    problem p;
    if (problem_make(&p, b, h, seq, d, 256, 0)) { fprintf(stderr, "check-fault: out of memory\n"); return 2; }
    emulate_rows(&p, EM_FLASH);
    const attn_shape *s = &p.s;
    const int lb = b - 1, lh = h - 1, last = seq - 1;
    bf16_bits *orow = p.o + at(s, lb, lh, last);
    int frow = last, fcol = -1;
    if (!strcmp(kind, "diag-tile")) {
        const int t0 = (last / REF_LAST_TILE) * REF_LAST_TILE;
        for (int i = t0; i < seq; i++)
            emulate_row(EM_FLASH, s, p.q, p.k, p.v, lb, lh, i, t0, p.sbuf, p.o + at(s, lb, lh, i));
        frow = t0;
    } else if (!strcmp(kind, "one-element")) {
        fcol = d / 2;
        orow[fcol] = bf16_from_float(bf16_to_float(orow[fcol]) + 0.05f);
    } else if (!strcmp(kind, "nan-row")) {
        for (int c = 0; c < d; c++) orow[c] = 0xFFFF;
    } else if (!strcmp(kind, "other-row") && seq > 1) {
        emulate_row(EM_FLASH, s, p.q, p.k, p.v, lb, lh, last - 1, last, p.sbuf, orow);
    }
    check_result r = ref_check(s, p.scale, p.q, p.k, p.v, p.o, p.rows, p.n_rows);
    print_check(&p, &r, 1e-2);
    printf("pass=%d fault=(%d, %d, %d, %d)\n", ref_check_pass(&r, 1e-2), lb, lh, frow, fcol);
    problem_free(&p);
    return 0;
}

/* fnv1a STRING: the FNV-1a 64 hash of the string's bytes, as 16 hex digits. */
int unit_fnv1a(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "fnv1a: STRING\n"); return 2; }
    printf("%016llx\n", (unsigned long long)ref_fnv1a64(argv[1], strlen(argv[1])));
    return 0;
}
