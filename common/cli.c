/* cli.c: see cli.h. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli.h"

void cli_usage(FILE *out, const char *prog, const attn_stage *stage)
{
    fprintf(out,
            "usage: %s [--batch B] [--heads H] [--seq S] [--head-dim D] [--warmup N] [--steps N]\n"
            "       [--seed N] [--check-rows N|all] [--trace PATH|none] [--poison-q ROW] [--no-counters] [--quiet]\n"
            "       [--help]%s%s\n"
            "\n"
            "%s: %s\n"
            "Causal attention O = softmax(Q·Kᵀ/sqrt(D) + mask)·V, bf16 [batch, heads, seq, head_dim],\n"
            "checked against a float64 CPU reference, then profiled (CUPTI): wait 1, warm-up 1, active N.\n"
            "\n"
            "  --batch B, --heads H, --seq S, --head-dim D   shape (default 8 16 1024 64, the blog's)\n"
            "  --warmup N        unprofiled warm-up calls before the profiler schedule (default 3)\n"
            "  --steps N         active profiled steps (default 3)\n"
            "  --seed N          seed of the Q, K, V generator, 0 to 2^64 - 1 (default 0)\n"
            "  --check-rows N|all  query rows checked against the reference (default 256; always rows\n"
            "                    0 and seq-1 and the last query tile (64 rows) of several heads)\n"
            "  --trace PATH|none Chrome trace path (default traces/%s/B_H_S_D.json), or none\n"
            "                    (/dev/null means none; other non-regular files are refused)\n"
            "  --poison-q ROW    plant a NaN in Q[0, 0, ROW, 0]: that output row must come out NaN\n"
            "  --no-counters     skip the counter pass (one more forward under CUPTI's Range\n"
            "                    Profiler, after timing and tracing): counters and dram_read/\n"
            "                    dram_write read -\n"
            "  --quiet           print only the summary line\n"
            "%s%s"
            "  --help            this text\n"
            "Environment: ATTN_SANITIZE=1 (make sanitize) runs without profiler, timing and trace.\n",
            prog, stage->flag_help ? " " : "", stage->parse_flag && stage->flag_help ? "[stage flags]" : "",
            stage->name, stage->idea, stage->name,
            stage->flag_help ? stage->flag_help : "", stage->flag_help ? "\n" : "");
}

/* A whole-string integer in [lo, hi], else exit 2 naming the flag and the limit. */
static long long parse_int(const char *flag, const char *val, long long lo, long long hi)
{
    if (!val) die_usage("%s needs a value (an integer from %lld to %lld)", flag, lo, hi);
    char *end = NULL;
    errno = 0;
    long long x = strtoll(val, &end, 10);
    if (errno || end == val || *end != '\0')
        die_usage("%s: '%s' is not an integer (expected %lld to %lld)", flag, val, lo, hi);
    if (x < lo || x > hi)
        die_usage("%s: %lld is out of range (expected %lld to %lld)", flag, x, lo, hi);
    return x;
}

/* A whole-string unsigned 64-bit integer >= lo (decimal digits only: no sign, no space), else
 * exit 2 naming the flag and `expect` (the accepted values in words). */
static uint64_t parse_u64(const char *flag, const char *val, uint64_t lo, const char *expect)
{
    if (!val) die_usage("%s needs a value (%s)", flag, expect);
    const char *digits = val[0] == '-' ? val + 1 : val; /* strtoull would wrap "-1" to 2^64 - 1 */
    if (!digits[0] || strspn(digits, "0123456789") != strlen(digits))
        die_usage("%s: '%s' is not an integer (expected %s)", flag, val, expect);
    if (digits != val) die_usage("%s: %s is out of range (expected %s)", flag, val, expect);
    errno = 0;
    unsigned long long x = strtoull(val, NULL, 10);
    if (errno == ERANGE)
        die_usage("%s: %s is out of range (expected %s)", flag, val, expect);
    if (x < lo)
        die_usage("%s: %llu is out of range (expected %s)", flag, x, expect);
    return (uint64_t)x;
}

/* Exit 1 with one line on stderr if writing stdout failed (a full disk, a closed pipe, /dev/full);
 * the caller is about to exit 0. */
void cli_check_stdout(void)
{
    errno = 0;
    const int flushed = fflush(stdout) == 0;
    if (!flushed || ferror(stdout)) {
        const int e = errno;
        fprintf(stderr, "cannot write to stdout%s%s\n", e ? ": " : "", e ? strerror(e) : "");
        exit(1);
    }
}

void cli_parse(int argc, char **argv, const attn_stage *stage, run_options *o)
{
    const attn_shape blog = {8, 16, 1024, 64};
    memset(o, 0, sizeof *o);
    /* ATTN_SANITIZE=1 (make sanitize): no profiler, no timing, no trace; only 0 or 1. */
    const char *sanitize = getenv("ATTN_SANITIZE");
    if (sanitize && strcmp(sanitize, "0") != 0 && strcmp(sanitize, "1") != 0)
        die_usage("ATTN_SANITIZE must be 0 or 1 (got '%s')", sanitize);
    o->sanitize = sanitize && strcmp(sanitize, "1") == 0;
    o->shape = blog;
    o->warmup = 3;
    o->steps = 3;
    o->seed = 0;
    o->check_rows = 256;
    o->poison_q = -1;
    long long poison = -1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cli_usage(stdout, argv[0], stage);
            cli_check_stdout();
            exit(0);
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
            continue;
        } else if (!strcmp(a, "--no-counters")) {
            o->no_counters = 1;
            continue;
        } else if (!strcmp(a, "--batch")) {
            o->shape.batch = (int)parse_int(a, val, 1, 65535);
        } else if (!strcmp(a, "--heads")) {
            o->shape.heads = (int)parse_int(a, val, 1, 65535);
        } else if (!strcmp(a, "--seq")) {
            o->shape.seq = (int)parse_int(a, val, 1, 1 << 20);
        } else if (!strcmp(a, "--head-dim")) {
            o->shape.head_dim = (int)parse_int(a, val, 1, 1024);
        } else if (!strcmp(a, "--warmup")) {
            o->warmup = (int)parse_int(a, val, 0, 1000);
        } else if (!strcmp(a, "--steps")) {
            o->steps = (int)parse_int(a, val, 1, 1000);
        } else if (!strcmp(a, "--seed")) {
            o->seed = parse_u64(a, val, 0, "an integer from 0 to 2^64 - 1");
        } else if (!strcmp(a, "--poison-q")) {
            poison = parse_int(a, val, 0, INT_MAX);
        } else if (!strcmp(a, "--check-rows")) {
            if (val && !strcmp(val, "all"))
                o->check_rows = SIZE_MAX;
            else {
                uint64_t n = parse_u64(a, val, 1, "a positive integer, or all");
#if SIZE_MAX < UINT64_MAX
                if (n > SIZE_MAX) n = SIZE_MAX; /* more rows than exist: all of them */
#endif
                o->check_rows = (size_t)n;
            }
        } else if (!strcmp(a, "--trace")) {
            if (!val || !val[0]) die_usage("--trace needs a path or 'none'");
            if (!strncmp(val, "--", 2)) /* `--trace --quiet` would swallow the next flag */
                die_usage("--trace needs a path or 'none', not the flag '%s' (write ./%s for a file "
                          "of that name)", val, val);
            if (strlen(val) >= sizeof o->trace)
                die_usage("--trace: path longer than %zu bytes", sizeof o->trace - 1);
            strcpy(o->trace, val);
        } else if (stage->parse_flag && stage->parse_flag(a)) {
            continue;
        } else {
            die_usage("unknown flag '%s' (see %s --help)", a, argv[0]);
        }
        i++; /* the flag took a value */
    }
    if (poison >= o->shape.seq)
        die_usage("--poison-q: row %lld is out of range (expected 0 to %d, seq - 1)", poison,
                  o->shape.seq - 1);
    o->poison_q = (int)poison;
    if (!o->trace[0])
        snprintf(o->trace, sizeof o->trace, "traces/%s/%d_%d_%d_%d.json", stage->name,
                 o->shape.batch, o->shape.heads, o->shape.seq, o->shape.head_dim);
}
