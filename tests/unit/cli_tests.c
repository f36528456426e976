/* cli_tests.c: cli_parse and cli_usage on a stand-in stage with its own flags (no GPU): the one
 * number rule, --flag=value, stray words, and the stage flags' contract (attn_stage.parse_flag);
 * and on a stand-in with 01's and 02's environment check (eager_check_env, the ATTN_GEMM_*
 * settings) without their cuBLAS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli.h"
#include "eager/eager_env.h"
#include "unit.h"

static int g_fast;
static unsigned long long g_tile;

/* head_dim a multiple of 32 (to 1024, the flags' limit): "32 to 1024 in steps of 32" in --help. */
static int fake_supports(const attn_shape *s, const struct cudaDeviceProp *prop, char *why,
                         size_t why_len)
{
    (void)prop;
    if (s->head_dim % 32 != 0) {
        snprintf(why, why_len, "head_dim %d is not supported by 99_fake (multiples of 32)",
                 s->head_dim);
        return 1;
    }
    return 0;
}

/* --fast takes no value; --tile N takes 16 to 128 through the harness's number rule. */
static int fake_parse_flag(const char *flag, const char *value)
{
    if (!flag) { /* the harness's reset (cli_parse, before the flags) */
        g_fast = 0;
        g_tile = 0;
        return 0;
    }
    if (strcmp(flag, "--fast") == 0) {
        g_fast = 1;
        return 1;
    }
    if (strcmp(flag, "--tile") == 0) {
        g_tile = attn_flag_uint(flag, value, 16, 128);
        return 2;
    }
    return 0;
}

/* FAKE_KNOB: unset or 1 (the stage's check_env: run after the flags, not by --help). */
static void fake_check_env(void)
{
    const char *v = getenv("FAKE_KNOB");
    if (v && strcmp(v, "1") != 0) die_usage("FAKE_KNOB=%s: expected 1 (unset: off)", v);
}

static const attn_stage FAKE = {
    "99_fake",
    "a stand-in stage for the flag parser",
    fake_supports,
    NULL,
    NULL,
    NULL,
    NULL,
    fake_parse_flag,
    "  --fast            a stage flag without a value\n"
    "  --tile N          a stage flag with one, 16 to 128",
    0.0,
    "  FAKE_KNOB=1       a setting the stage reads",
    fake_check_env,
};

/* A stand-in for 01_naive and 02_inplace before the device: their settings (env_help) and their
 * check_env, the same object code the stages link; no stage flags, no shape check of its own. */
static const attn_stage EAGER = {
    "99_eager",
    "a stand-in stage for the ATTN_GEMM_* settings",
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    0.0,
    EAGER_ENV_HELP,
    eager_check_env,
};

/* The options cli_parse made, one line (stage flags: FAKE's). */
static void print_options(const run_options *o)
{
    printf("batch=%d heads=%d seq=%d head_dim=%d warmup=%d steps=%d seed=%llu check_rows=%llu "
           "poison_q=%d quiet=%d no_counters=%d no_timeline=%d timeline_interval=%llu trace=%s "
           "tile=%llu fast=%d\n", o->shape.batch,
           o->shape.heads, o->shape.seq, o->shape.head_dim, o->warmup, o->steps,
           (unsigned long long)o->seed, (unsigned long long)o->check_rows, o->poison_q, o->quiet,
           o->no_counters, o->no_timeline, (unsigned long long)o->timeline_interval_ns, o->trace,
           g_tile, g_fast);
}

/* cli ARGS...: the options cli_parse makes of ARGS (or its exit 2 / --help). */
int unit_cli(int argc, char **argv)
{
    run_options o;
    cli_parse(argc, argv, &FAKE, &o);
    print_options(&o);
    return 0;
}

/* cli-twice ARGS...: cli_parse of ARGS, then of no flags at all, as --cases parses one run after
 * another in one process: the second line must show every default, the stage's flags too. */
int unit_cli_twice(int argc, char **argv)
{
    run_options o;
    char *none[] = {argv[0], NULL};
    cli_parse(argc, argv, &FAKE, &o);
    print_options(&o);
    cli_parse(1, none, &FAKE, &o);
    print_options(&o);
    return 0;
}

/* cli-eager ARGS...: the same on the stand-in for 01 and 02 (ATTN_GEMM_* checked whole). */
int unit_cli_eager(int argc, char **argv)
{
    run_options o;
    cli_parse(argc, argv, &EAGER, &o);
    print_options(&o);
    return 0;
}
