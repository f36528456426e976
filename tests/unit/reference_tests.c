/* reference_tests.c: the float64 reference, the safe softmax, row sampling and the generator
 * (common/reference.c, common/tensor.c), on hand-computable inputs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "tensor.h"
#include "unit.h"

/* A [1, 1, seq, D] problem with bf16-exact values. */
enum { SEQ = 5, D = 4 };

static void fill_v(bf16_bits *v)
{
    for (int j = 0; j < SEQ; j++)
        for (int d = 0; d < D; d++) v[j * D + d] = bf16_from_float((float)(j * 4 + d) - 7.5f);
}

/* Q = 0: every score is 0, so row i's output is the mean of V[0..i]. */
int unit_ref_equal_scores(int argc, char **argv)
{
    (void)argc; (void)argv;
    attn_shape s = {1, 1, SEQ, D};
    bf16_bits q[SEQ * D] = {0}, k[SEQ * D], v[SEQ * D];
    tensor_fill_normal(k, SEQ * D, 7, 2);
    fill_v(v);
    double work[SEQ], o[D], max_err = 0.0;
    for (int i = 0; i < SEQ; i++) {
        ref_attention_row(&s, 0.5, q, k, v, 0, 0, i, work, o);
        for (int d = 0; d < D; d++) {
            double mean = 0.0;
            for (int j = 0; j <= i; j++) mean += bf16_to_float(v[j * D + d]);
            mean /= i + 1;
            max_err = fmax(max_err, fabs(o[d] - mean));
        }
    }
    printf("max_err=%.3e\n", max_err);
    return 0;
}

/* Row 0 sees only key 0: its output is V[0] exactly, whatever Q and K are. */
int unit_ref_row0(int argc, char **argv)
{
    (void)argc; (void)argv;
    attn_shape s = {1, 1, SEQ, D};
    bf16_bits q[SEQ * D], k[SEQ * D], v[SEQ * D];
    tensor_fill_normal(q, SEQ * D, 3, 1);
    tensor_fill_normal(k, SEQ * D, 3, 2);
    fill_v(v);
    double work[SEQ], o[D], max_err = 0.0;
    ref_attention_row(&s, 0.5, q, k, v, 0, 0, 0, work, o);
    for (int d = 0; d < D; d++) max_err = fmax(max_err, fabs(o[d] - bf16_to_float(v[d])));
    printf("max_err=%.3e\n", max_err);
    return 0;
}

/* Row 1, D = 1: scores q·k0·scale and q·k1·scale; with q = 1, k0 = 0, k1 = 2, scale = 1 the
 * weights are 1/(1+e^2) and e^2/(1+e^2), so o = v0/(1+e^2) + v1·e^2/(1+e^2). */
int unit_ref_two_keys(int argc, char **argv)
{
    (void)argc; (void)argv;
    attn_shape s = {1, 1, 2, 1};
    bf16_bits q[2] = {0, bf16_from_float(1.0f)}, k[2] = {0, bf16_from_float(2.0f)};
    bf16_bits v[2] = {bf16_from_float(3.0f), bf16_from_float(-5.0f)};
    double work[2], o[1];
    ref_attention_row(&s, 1.0, q, k, v, 0, 0, 1, work, o);
    double e2 = exp(2.0), want = 3.0 / (1 + e2) - 5.0 * e2 / (1 + e2);
    printf("o=%.17g want=%.17g max_err=%.3e\n", o[0], want, fabs(o[0] - want));
    return 0;
}

/* A row with every score -inf: the NaN-safe rule gives zeros (0/0 would be NaN). */
int unit_softmax_masked_row(int argc, char **argv)
{
    (void)argc; (void)argv;
    double s[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}, p[4];
    ref_softmax_row(s, 4, p);
    printf("p=%g %g %g %g\n", p[0], p[1], p[2], p[3]);
    return 0;
}

/* A NaN score anywhere makes the whole row NaN (as PyTorch); -inf everywhere stays zeros. */
int unit_softmax_nan(int argc, char **argv)
{
    (void)argc; (void)argv;
    double a[3] = {NAN, 1.0, 2.0}, b[3] = {1.0, NAN, -INFINITY}, c[2] = {-INFINITY, -INFINITY};
    ref_softmax_row(a, 3, a); /* in place: s and p alias */
    ref_softmax_row(b, 3, b);
    ref_softmax_row(c, 2, c);
    printf("nan_first=%g %g %g\nnan_middle=%g %g %g\nmasked=%g %g\n", a[0], a[1], a[2], b[0],
           b[1], b[2], c[0], c[1]);
    return 0;
}

/* A whole decimal integer in [lo, hi] (no sign, no space), else one line on stderr and -1. */
static int parse_count(const char *cmd, const char *text, unsigned long long lo,
                       unsigned long long hi, unsigned long long *x)
{
    char *end = NULL;
    errno = 0;
    *x = text[0] >= '0' && text[0] <= '9' ? strtoull(text, &end, 10) : 0;
    if (!end || *end || errno || *x < lo || *x > hi) {
        fprintf(stderr, "%s: '%s' is not an integer from %llu to %llu\n", cmd, text, lo, hi);
        return -1;
    }
    return 0;
}

/* ref_check on an exact output, with one NaN planted, and with one element off by 1. */
int unit_ref_check_poison(int argc, char **argv)
{
    (void)argc; (void)argv;
    attn_shape s = {1, 2, SEQ, D};
    const size_t n = 2 * SEQ * D;
    bf16_bits q[2 * SEQ * D], k[2 * SEQ * D], v[2 * SEQ * D], o[2 * SEQ * D];
    tensor_fill_normal(q, n, 11, 1);
    tensor_fill_normal(k, n, 11, 2);
    tensor_fill_normal(v, n, 11, 3);
    /* O = V with Q = 0 and SEQ rows... simpler: make O the reference itself, rounded to bf16. */
    double work[SEQ], ref[D];
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < SEQ; i++) {
            ref_attention_row(&s, 0.5, q, k, v, 0, h, i, work, ref);
            for (int d = 0; d < D; d++)
                o[((size_t)h * SEQ + i) * D + d] = bf16_from_float((float)ref[d]);
        }
    size_t rows[2 * SEQ];
    size_t nr = ref_pick_rows(&s, SIZE_MAX, 0, rows);
    check_result r = ref_check(&s, 0.5, q, k, v, o, rows, nr);
    /* bf16 rounding of O: at most 2^-9 relative per element. */
    printf("clean nonfinite=%zu rel_l2=%s\n", r.nonfinite, r.rel_l2 < 0x1p-9 ? "0" : "too-large");
    bf16_bits keep = o[7];
    o[7] = BF16_POISON;
    r = ref_check(&s, 0.5, q, k, v, o, rows, nr);
    printf("poisoned nonfinite=%zu\n", r.nonfinite);
    o[7] = bf16_from_float(bf16_to_float(keep) + 1.0f);
    r = ref_check(&s, 0.5, q, k, v, o, rows, nr);
    printf("perturbed nonfinite=%zu max_abs=%.2f\n", r.nonfinite, r.max_abs);
    return r.max_abs > 0.9 ? 0 : 1;
}

/* pick-rows BATCH HEADS SEQ N|all: the sampled flat row indices (ascending, one line), then
 * "count=<rows returned> distinct=<1 if strictly ascending and in range, else 0>". */
int unit_pick_rows(int argc, char **argv)
{
    if (argc != 5) { fprintf(stderr, "pick-rows: BATCH HEADS SEQ N|all\n"); return 2; }
    unsigned long long b, h, q, want;
    if (parse_count(argv[0], argv[1], 1, 65535, &b) || parse_count(argv[0], argv[2], 1, 65535, &h) ||
        parse_count(argv[0], argv[3], 1, 1 << 20, &q))
        return 2;
    const size_t total = (size_t)(b * h * q);
    if (strcmp(argv[4], "all") == 0) want = total;
    else if (parse_count(argv[0], argv[4], 1, 1ull << 32, &want)) return 2;
    const size_t cap = want < total ? (size_t)want : total;
    attn_shape s = {(int)b, (int)h, (int)q, 8};
    size_t *rows = malloc(sizeof(size_t) * (cap + 1));
    if (!rows) { fprintf(stderr, "pick-rows: %zu rows do not fit in host memory\n", cap); return 2; }
    size_t n = ref_pick_rows(&s, (size_t)want, 0, rows);
    int distinct = 1;
    for (size_t i = 0; i < n; i++) {
        printf("%zu ", rows[i]);
        if (rows[i] >= total || (i && rows[i] <= rows[i - 1])) distinct = 0;
    }
    printf("\ncount=%zu distinct=%d\n", n, distinct);
    free(rows);
    return 0;
}

/* Determinism, moments, and round-to-nearest-even of the bf16 conversion. */
int unit_generator(int argc, char **argv)
{
    (void)argc; (void)argv;
    enum { N = 100000 };
    static bf16_bits a[N], b[N], c[N];
    tensor_fill_normal(a, N, 42, 1);
    tensor_fill_normal(b, N, 42, 1);
    tensor_fill_normal(c, N, 43, 1);
    int same = memcmp(a, b, sizeof a) == 0, different = memcmp(a, c, sizeof a) != 0;
    double sum = 0.0, sum2 = 0.0;
    for (int i = 0; i < N; i++) {
        double x = bf16_to_float(a[i]);
        sum += x;
        sum2 += x * x;
    }
    double mean = sum / N, var = sum2 / N - mean * mean;
    /* 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: ties to even -> 1.0 (0x3F80);
     * 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even -> 0x3F82. */
    int rne = bf16_from_float(1.0f + 0x1p-8f) == 0x3F80 && bf16_from_float(1.0f + 3 * 0x1p-8f) == 0x3F82
           && bf16_from_float(-2.0f) == 0xC000 && isnan(bf16_to_float(bf16_from_float(NAN)));
    printf("same=%d different=%d mean=%.4f var=%.4f rne=%s\n", same, different, mean, var,
           rne ? "ok" : "wrong");
    return 0;
}

/* generator-first SEED: the first 16 values of Q's stream as bf16 hex. */
int unit_generator_first(int argc, char **argv)
{
    unsigned long long seed;
    if (argc != 2) { fprintf(stderr, "generator-first: SEED\n"); return 2; }
    if (parse_count(argv[0], argv[1], 0, UINT64_MAX, &seed)) return 2;
    bf16_bits x[16];
    tensor_fill_normal(x, 16, (uint64_t)seed, 1);
    for (int i = 0; i < 16; i++) printf("%04x%c", x[i], i == 15 ? '\n' : ' ');
    return 0;
}

/* generator-hash N SEED: Q's, K's and V's streams (1, 2, 3) of N elements each, one after the
 * other, as FNV-1a 64. The fill is shared out among threads: a pinned hash of a few million
 * elements holds every share's start to the one generator's sequence. */
int unit_generator_hash(int argc, char **argv)
{
    unsigned long long n, seed;
    if (argc != 3) { fprintf(stderr, "generator-hash: N SEED\n"); return 2; }
    if (parse_count(argv[0], argv[1], 1, 1ull << 26, &n) ||
        parse_count(argv[0], argv[2], 0, UINT64_MAX, &seed))
        return 2;
    bf16_bits *x = malloc(3 * (size_t)n * sizeof *x);
    if (!x) { fprintf(stderr, "generator-hash: out of memory\n"); return 2; }
    for (int stream = 1; stream <= 3; stream++)
        tensor_fill_normal(x + (stream - 1) * (size_t)n, (size_t)n, seed, (uint64_t)stream);
    printf("%016llx\n", (unsigned long long)ref_fnv1a64(x, 3 * (size_t)n * sizeof *x));
    free(x);
    return 0;
}
