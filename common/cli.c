/* cli.c: see cli.h. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli.h"
#include "timeline.h"

/* The largest head_dim the flags accept (--head-dim 1 to CLI_MAX_HEAD_DIM). */
enum { CLI_MAX_HEAD_DIM = 1024 };

/* The head_dims stage->supports accepts before the device check (prop = NULL) at the blog's
 * shape, out of 1 to CLI_MAX_HEAD_DIM, as words for --help: "head_dim 1 to 1024", "head_dim 8 to
 * 256 in steps of 8" (an arithmetic run of 3 or more), else a list "head_dim 64, 128"; "no
 * head_dim here: <why>" if it accepts none. */
static void supported_head_dims(const attn_stage *stage, char *buf, size_t len)
{
    if (!stage->supports) {
        snprintf(buf, len, "head_dim 1 to %d", CLI_MAX_HEAD_DIM);
        return;
    }
    int dims[CLI_MAX_HEAD_DIM], n = 0;
    char why[512];
    for (int d = 1; d <= CLI_MAX_HEAD_DIM; d++) {
        const attn_shape s = {8, 16, 1024, d};
        why[0] = '\0';
        if (stage->supports(&s, NULL, why, sizeof why) == 0) dims[n++] = d;
    }
    if (n == 0) {
        const attn_shape s = {8, 16, 1024, 64};
        why[0] = '\0';
        stage->supports(&s, NULL, why, sizeof why);
        snprintf(buf, len, "no head_dim here: %s", why);
        return;
    }
    int step = n > 1 ? dims[1] - dims[0] : 0, arithmetic = n >= 3;
    for (int i = 2; arithmetic && i < n; i++) arithmetic = dims[i] - dims[i - 1] == step;
    if (arithmetic && step == 1) {
        snprintf(buf, len, "head_dim %d to %d", dims[0], dims[n - 1]);
        return;
    }
    if (arithmetic) {
        snprintf(buf, len, "head_dim %d to %d in steps of %d", dims[0], dims[n - 1], step);
        return;
    }
    size_t used = 0;
    for (int i = 0; i < n && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%d", i ? ", " : "head_dim ", dims[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* The stage's regions build (common/regions.cuh), linked only into the stages that have one: weak,
 * so its address is NULL in the others (as in common/run.c). */
extern const attn_regions_build attn_regions_build_def __attribute__((weak));

void cli_usage(FILE *out, const char *prog, const attn_stage *stage)
{
    /* --regions only where the stage has a regions build (the others refuse it) */
    const int has_regions = &attn_regions_build_def != NULL;
    char regions_help[512] = "";
    if (has_regions)
        snprintf(regions_help, sizeof regions_help,
                 "  --regions [N]     one more forward with the region markers compiled in: the\n"
                 "                    regions of SMs 0..N-1 (default %d) as trace tracks and a\n"
                 "                    summary; the build is checked like the kernel\n",
                 CLI_REGIONS_DEFAULT);
    char dims[512];
    supported_head_dims(stage, dims, sizeof dims);
    fprintf(out,
            "usage: %s [--batch B] [--heads H] [--seq S] [--head-dim D] [--warmup N] [--steps N]\n"
            "       [--seed N] [--check-rows N|all] [--trace PATH|none] [--poison-q ROW] [--no-counters] [--quiet]\n"
            "       [--no-timeline] [--timeline-interval NS] %s[--validate] [--help]%s%s\n"
            "       %s --cases FILE\n"
            "\n"
            "%s: %s\n"
            "Causal attention O = softmax(Q·Kᵀ/sqrt(D) + mask)·V, bf16 [batch, heads, seq, head_dim],\n"
            "checked against a float64 CPU reference, then profiled (CUPTI): wait 1, warm-up 1, active N.\n"
            "Running needs an NVIDIA GPU and its driver.\n"
            "\n"
            "  --batch B, --heads H, --seq S, --head-dim D   shape (default 8 16 1024 64, the blog's);\n"
            "                    this stage runs %s\n"
            "  --warmup N        unprofiled warm-up calls before the profiler schedule (default 3)\n"
            "  --steps N         active profiled steps (default 3)\n"
            "  --seed N          seed of the Q, K, V generator, 0 to 2^64 - 1 (default 0)\n"
            "  --check-rows N|all  query rows checked against the reference (default 256; always rows\n"
            "                    0 and seq-1 and the last query tile (64 rows) of several heads)\n"
            "  --trace PATH|none Chrome trace path (default traces/%s/B_H_S_D.json), or none\n"
            "                    (/dev/null means none; other non-regular files, a directory name\n"
            "                    such as d/, d/. or d/.., and control characters are refused)\n"
            "  --poison-q ROW    plant a NaN in Q[0, 0, ROW, 0]: that output row must come out NaN\n"
            "  --no-counters     skip the counter pass (one more forward under CUPTI's Range\n"
            "                    Profiler, after timing and tracing): counters and dram_read/\n"
            "                    dram_write read -\n"
            "  --no-timeline     skip the timeline pass (one more forward under CUPTI PM sampling,\n"
            "                    before the timing): no counter tracks, timeline lines read -\n"
            "  --timeline-interval NS  the timeline's sampling interval, 100 to 1000000 ns\n"
            "                    (default 500)\n"
            "  --quiet           print only the summary line\n"
            "  --validate        check the flags, the environment, the shape (as far as it can be\n"
            "                    checked without the device) and the trace path, then exit: 0 and\n"
            "                    nothing printed, or 2 and the one line a run would print; no device\n"
            "                    is looked for (make compare, make sanitize and bench/ ask this)\n"
            "%s"
            "%s%s"
            "  --cases FILE      the test suites' mode, the only flag when given: each line of FILE\n"
            "                    one run (OUT, a tab, its flags tab-separated), all in this one\n"
            "                    process and CUDA context, under the one environment; its output to\n"
            "                    OUT.out, its exit status to OUT.status. Each line must itself carry\n"
            "                    --no-counters --no-timeline and no --regions (else its status is 2).\n"
            "                    Exit 0 once every line ran, whatever their statuses; a run that\n"
            "                    fails after touching the device (a CUDA error) ends the process:\n"
            "                    the lines without OUT.status did not run (common/run.c)\n"
            "  --help            this text\n"
            "A value follows its flag (--seq 128) or an '=' (--seq=128); numbers are decimal digits\n"
            "only (no sign, no space).\n"
            "\n"
            "Environment:\n"
            "%s%s"
            "  ATTN_SANITIZE=1   no profiler, timing or trace (make sanitize sets it): gpu_us, cpu_us,\n"
            "                    tflops and pct_peak read 0, trace=none (a --trace path is still\n"
            "                    checked as in a normal run: a bad one exits 2); 0 or unset: a\n"
            "                    normal run\n"
            "An ATTN_* setting unset takes its default; a value other than the forms above (an empty\n"
            "one too) prints one line and exits 2, before the device is looked for.\n"
            "An ATTN_* name no stage reads (a typo) exits 2 too, naming the settings that exist;\n"
            "one that only other stages read prints a warning and is ignored.\n",
            prog, has_regions ? "[--regions [N]] " : "", stage->flag_help ? " " : "", stage->parse_flag && stage->flag_help ? "[stage flags]" : "",
            prog, stage->name, stage->idea, dims, stage->name, regions_help,
            stage->flag_help ? stage->flag_help : "", stage->flag_help ? "\n" : "",
            stage->env_help ? stage->env_help : "", stage->env_help ? "\n" : "");
}

/* The one number rule of every integer flag (the shared ones and the stages' own): decimal digits
 * only, no sign, no space, no '+', in [lo, hi]; else exit 2 with one line naming the flag and
 * `expect` (the accepted values in words; NULL: "LO to HI"). A '-' before digits is a number out
 * of range; a number too large for 64 bits is out of range too (not "not an integer"). */
static uint64_t parse_uint(const char *flag, const char *val, uint64_t lo, uint64_t hi,
                           const char *expect)
{
    char range[96];
    if (!expect) {
        snprintf(range, sizeof range, "%llu to %llu", (unsigned long long)lo, (unsigned long long)hi);
        expect = range;
    }
    if (!val) die_usage("%s needs a value (%s%s)", flag, expect == range ? "an integer from " : "",
                        expect);
    const size_t digits = strspn(val, "0123456789");
    const int all_digits = digits > 0 && val[digits] == '\0';
    const int negative = val[0] == '-' && val[1] && strspn(val + 1, "0123456789") == strlen(val + 1) &&
                         strspn(val + 1, "0") != strlen(val + 1);
    if (negative) die_usage("%s: %s is out of range (expected %s)", flag, val, expect);
    if (!all_digits)
        die_usage("%s: '%s' is not an integer: digits only, no sign or space (expected %s)", flag,
                  val, expect);
    uint64_t x = 0;
    int overflow = 0;
    for (const char *c = val; *c; c++) {
        const unsigned d = (unsigned)(*c - '0');
        if (x > (UINT64_MAX - d) / 10) overflow = 1;
        else x = x * 10 + d;
    }
    if (overflow || x < lo || x > hi) die_usage("%s: %s is out of range (expected %s)", flag, val, expect);
    return x;
}

uint64_t attn_flag_uint(const char *flag, const char *value, uint64_t lo, uint64_t hi)
{
    return parse_uint(flag, value, lo, hi, NULL);
}

/* Exit 1 with one line on stderr if writing stdout failed (a full disk, a closed pipe, /dev/full);
 * the caller is about to exit 0. */
void cli_check_stdout(void)
{
    /* A write that failed earlier (the buffer filled while printing) set errno then: keep it. */
    if (!ferror(stdout)) errno = 0;
    const int flushed = fflush(stdout) == 0;
    if (!flushed || ferror(stdout)) {
        const int e = errno;
        fprintf(stderr, "cannot write to stdout%s%s\n", e ? ": " : "", e ? strerror(e) : "");
        attn_exit(1);
    }
}

/* A flag that takes no value, written --flag=value: exit 2. */
static void no_value(const char *flag, const char *inline_val, const char *arg)
{
    if (inline_val) die_usage("%s takes no value (got '%s')", flag, arg);
}

/* Every ATTN_* setting of the course, whichever stage reads it (the README's settings table). */
static const char *const COURSE_ENV[] = {"ATTN_GEMM_ALGO", "ATTN_GEMM_VERBOSE",
                                         "ATTN_GEMM_WORKSPACE", "ATTN_SANITIZE"};

/* 1 if the stage reads the setting `name` (len bytes): the harness's ATTN_SANITIZE, or a line
 * "  NAME=..." of stage->env_help (harness.h: one such line per setting). */
static int stage_reads(const attn_stage *stage, const char *name, size_t len)
{
    if (len == strlen("ATTN_SANITIZE") && !strncmp(name, "ATTN_SANITIZE", len)) return 1;
    for (const char *line = stage->env_help; line && *line; ) {
        if (!strncmp(line, "  ", 2) && !strncmp(line + 2, name, len) && line[2 + len] == '=')
            return 1;
        const char *nl = strchr(line, '\n');
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

/* The settings the stage reads, as "ATTN_A, ATTN_B" (in COURSE_ENV's order). */
static void stage_env_list(const attn_stage *stage, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof COURSE_ENV / sizeof *COURSE_ENV && used < len; i++)
        if (stage_reads(stage, COURSE_ENV[i], strlen(COURSE_ENV[i]))) {
            int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", COURSE_ENV[i]);
            if (w < 0) break;
            used += (size_t)w;
        }
}

/* The environment's ATTN_* names: one the course does not know (a typo: ATTN_GEMM_VERBSE) is an
 * error, exit 2, naming the settings that exist; one of another stage's (ATTN_GEMM_ALGO set for
 * 03_math, as `ATTN_GEMM_ALGO=1 make compare` does for every stage) a one-line warning on stderr,
 * and the run goes on. */
extern char **environ; /* POSIX: the process's environment */

static void check_env_names(const attn_stage *stage)
{
    char reads[256], all[256];
    size_t used = 0;
    stage_env_list(stage, reads, sizeof reads);
    for (size_t i = 0; i < sizeof COURSE_ENV / sizeof *COURSE_ENV && used < sizeof all; i++) {
        int w = snprintf(all + used, sizeof all - used, "%s%s", i ? ", " : "", COURSE_ENV[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "ATTN_", 5) != 0) continue;
        const char *eq = strchr(*e, '=');
        const size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        int known = 0;
        for (size_t i = 0; i < sizeof COURSE_ENV / sizeof *COURSE_ENV; i++)
            known |= len == strlen(COURSE_ENV[i]) && !strncmp(*e, COURSE_ENV[i], len);
        if (!known)
            die_usage("%.*s is not a setting of this course (the ATTN_* settings: %s; %s reads %s)",
                      (int)len, *e, all, stage->name, reads);
        if (!stage_reads(stage, *e, len))
            fprintf(stderr, "warning: %s does not read %.*s, it is ignored here (%s reads %s)\n",
                    stage->name, (int)len, *e, stage->name, reads);
    }
}

void cli_parse(int argc, char **argv, const attn_stage *stage, run_options *o)
{
    const attn_shape blog = {8, 16, 1024, 64};
    memset(o, 0, sizeof *o);
    /* --help (or -h) anywhere prints the usage and exits 0, whatever else is wrong with the flags
     * or the environment. */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            cli_usage(stdout, argv[0], stage);
            cli_check_stdout();
            attn_exit(0);
        }
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
    o->timeline_interval_ns = TIMELINE_INTERVAL_NS;
    long long poison = -1;
    /* The stage's own flags back to their defaults: one process may parse many runs' flags
     * (--cases). */
    if (stage->parse_flag) stage->parse_flag(NULL, NULL);

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0 && strcmp(arg, "-h") != 0)
            die_usage("unexpected argument '%s' (flags start with --; see %s --help)", arg, argv[0]);
        /* --flag=value (GNU style) or --flag value: a = the flag's name, val = its value. */
        char a[64];
        const char *eq = strchr(arg, '=');
        const size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (name_len >= sizeof a) die_usage("unknown flag '%s' (see %s --help)", arg, argv[0]);
        memcpy(a, arg, name_len);
        a[name_len] = '\0';
        const char *inline_val = eq ? eq + 1 : NULL;
        const char *val = inline_val ? inline_val : i + 1 < argc ? argv[i + 1] : NULL;
        int took_value = 1;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            no_value(a, inline_val, arg); /* --help=x: the plain --help was handled above */
        } else if (!strcmp(a, "--quiet")) {
            no_value(a, inline_val, arg);
            o->quiet = 1;
            took_value = 0;
        } else if (!strcmp(a, "--validate")) {
            no_value(a, inline_val, arg);
            o->validate = 1;
            took_value = 0;
        } else if (!strcmp(a, "--no-counters")) {
            no_value(a, inline_val, arg);
            o->no_counters = 1;
            took_value = 0;
        } else if (!strcmp(a, "--no-timeline")) {
            no_value(a, inline_val, arg);
            o->no_timeline = 1;
            took_value = 0;
        } else if (!strcmp(a, "--timeline-interval")) {
            o->timeline_interval_ns = parse_uint(a, val, TIMELINE_INTERVAL_MIN,
                                                 TIMELINE_INTERVAL_MAX, NULL);
        } else if (!strcmp(a, "--regions")) {
            /* an optional number: inline (--regions=8), or the next argument unless it is the
             * next flag (--...): "--regions -1" and "--regions x" are refused as the count */
            const int next_is_value = !inline_val && val && strncmp(val, "--", 2) != 0;
            if (inline_val || next_is_value)
                o->regions = (int)parse_uint(a, val, 1, 1024, NULL);
            else {
                o->regions = CLI_REGIONS_DEFAULT;
                took_value = 0;
            }
        } else if (!strcmp(a, "--batch")) {
            o->shape.batch = (int)parse_uint(a, val, 1, 65535, NULL);
        } else if (!strcmp(a, "--heads")) {
            o->shape.heads = (int)parse_uint(a, val, 1, 65535, NULL);
        } else if (!strcmp(a, "--seq")) {
            o->shape.seq = (int)parse_uint(a, val, 1, 1 << 20, NULL);
        } else if (!strcmp(a, "--head-dim")) {
            o->shape.head_dim = (int)parse_uint(a, val, 1, CLI_MAX_HEAD_DIM, NULL);
        } else if (!strcmp(a, "--warmup")) {
            o->warmup = (int)parse_uint(a, val, 0, 1000, NULL);
        } else if (!strcmp(a, "--steps")) {
            o->steps = (int)parse_uint(a, val, 1, 1000, NULL);
        } else if (!strcmp(a, "--seed")) {
            o->seed = parse_uint(a, val, 0, UINT64_MAX, "an integer from 0 to 2^64 - 1");
        } else if (!strcmp(a, "--poison-q")) {
            poison = (long long)parse_uint(a, val, 0, INT_MAX, NULL);
        } else if (!strcmp(a, "--check-rows")) {
            if (val && !strcmp(val, "all"))
                o->check_rows = SIZE_MAX;
            else {
                uint64_t n = parse_uint(a, val, 1, UINT64_MAX, "a positive integer, or all");
#if SIZE_MAX < UINT64_MAX
                if (n > SIZE_MAX) n = SIZE_MAX; /* more rows than exist: all of them */
#endif
                o->check_rows = (size_t)n;
            }
        } else if (!strcmp(a, "--trace")) {
            if (!val || !val[0]) die_usage("--trace needs a path or 'none'");
            if (!inline_val && !strncmp(val, "--", 2)) /* `--trace --quiet` would swallow the next flag */
                die_usage("--trace needs a path or 'none', not the flag '%s' (write ./%s for a file "
                          "of that name)", val, val);
            if (strlen(val) >= sizeof o->trace)
                die_usage("--trace: path longer than %zu bytes", sizeof o->trace - 1);
            strcpy(o->trace, val);
        } else {
            const int taken = stage->parse_flag ? stage->parse_flag(a, val) : 0;
            if (taken == 0) die_usage("unknown flag '%s' (see %s --help)", a, argv[0]);
            if (taken == 1) no_value(a, inline_val, arg);
            took_value = taken == 2;
        }
        if (took_value && !inline_val) i++; /* the value was the next argument */
    }
    if (poison >= o->shape.seq)
        die_usage("--poison-q: row %lld is out of range (expected 0 to %d, seq - 1)", poison,
                  o->shape.seq - 1);
    o->poison_q = (int)poison;
    /* The stage's environment settings, whole, before anything looks for a device; then the
     * ATTN_* names it does not read. */
    if (stage->check_env) stage->check_env();
    check_env_names(stage);
    if (!o->trace[0])
        snprintf(o->trace, sizeof o->trace, "traces/%s/%d_%d_%d_%d.json", stage->name,
                 o->shape.batch, o->shape.heads, o->shape.seq, o->shape.head_dim);
}
