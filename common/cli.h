/* cli.h: the flags every stage's ./NN_x/run takes. C11. */
#ifndef ATTN_CLI_H
#define ATTN_CLI_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "harness.h"

/* --regions without a number: the SMs recorded (a trace of a few MB at the course's shapes). */
#define CLI_REGIONS_DEFAULT 4

typedef struct {
    attn_shape shape;      /* --batch --heads --seq --head-dim (default 8 16 1024 64, the blog's) */
    int warmup;            /* --warmup: unprofiled calls before the schedule (default 3) */
    int steps;             /* --steps: active profiled steps (default 3, after wait 1 + warm-up 1) */
    uint64_t seed;         /* --seed, 0 to 2^64 - 1 (default 0) */
    size_t check_rows;     /* --check-rows N >= 1, or SIZE_MAX for `all` (default 256) */
    char trace[4096];      /* --trace PATH, "none", or "" for traces/NN_x/B_H_S_D.json */
    int quiet;             /* --quiet: no table, only the summary line */
    int poison_q;          /* --poison-q ROW: NaN planted in Q row ROW of (0, 0); -1 = none */
    int no_counters;       /* --no-counters: skip the counter pass (counters read -) */
    int no_timeline;       /* --no-timeline: skip the timeline pass (timeline reads -) */
    uint64_t timeline_interval_ns; /* --timeline-interval NS (default TIMELINE_INTERVAL_NS) */
    int validate;          /* --validate: check the input (flags, environment, shape, trace path)
                            * and exit 0 or 2 before the device is looked for */
    int regions;           /* --regions [N]: the regions pass records SMs 0..N-1 (N default
                            * CLI_REGIONS_DEFAULT, 1 to 1024); 0: no regions pass */
    int sanitize;          /* environment ATTN_SANITIZE=1 (make sanitize, under compute-sanitizer):
                            * no profiler, no timing, no trace */
} run_options;

/* Parses argv (and the environment's ATTN_SANITIZE, which must be unset, 0 or 1) into *o. First,
 * a "--help" or "-h" anywhere in argv prints the usage and exits 0 (1 if stdout cannot be
 * written), whatever else is wrong with the flags or the environment. After the flags,
 * stage->check_env (if any) checks the stage's own settings (exit 2 on a bad one).
 * A flag's value is the next argument or follows an '=' (--seq 128, --seq=128); every integer is
 * decimal digits only (no sign, no space) within the flag's range (attn_flag_uint's rule, which
 * the stages' own flags use too). --regions takes an optional number: the next argument when it
 * is all digits, else none (the default). Flags the harness does not know go to stage->parse_flag. An
 * invalid value, an unknown flag, "--flag=value" for a flag without a value (--help=x too), or an
 * argument not starting with "--" (a stray word) prints one line and exits 2. A --trace value starting with "--" is refused unless written
 * --trace=--x (it would be the next flag). The trace path itself is checked by trace_check_path
 * (trace.h). Makes no CUDA call. */
void cli_parse(int argc, char **argv, const attn_stage *stage, run_options *o);

/* Before exiting 0: flushes stdout; if anything written to it failed (a full disk, /dev/full, a
 * closed pipe) prints one line on stderr and exits 1. */
void cli_check_stdout(void);

/* The usage text: the flags, the head_dims the stage runs (stage->supports asked, without a
 * device, for each head_dim the flags allow) and the environment settings (stage->env_help, then
 * the harness's). */
void cli_usage(FILE *out, const char *prog, const attn_stage *stage);

#endif
