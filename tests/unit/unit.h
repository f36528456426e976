/* unit.h: the CPU-only unit-test binary build/common_unit (tests/common.bats drives it).
 *
 *     build/common_unit SUBCOMMAND [args...]
 *
 * Each subcommand is one function `int unit_<name>(int argc, char **argv)` (argv[0] is the
 * subcommand, argv[1..] its arguments) that prints facts on stdout for Bats to assert and returns
 * the exit status (2 for bad arguments: main.c refuses arguments to a subcommand whose usage starts
 * with ':', the others check their own). To add one: write the function in a .c file under tests/unit
 * and add one X(...) line to UNIT_COMMANDS below; main.c declares nothing else.
 */
#ifndef ATTN_UNIT_H
#define ATTN_UNIT_H

#include <cuda_runtime_api.h>

/* X(function suffix, command name, one-line usage) */
#define UNIT_COMMANDS(X) \
    X(format_time,      "format-time",      "US...: torch's time format of each value (us)") \
    X(format_share,     "format-share",     "PART TOTAL: torch's percentage format") \
    X(truncate,         "truncate",         "NAME: the table's name cut (52 characters + ...)") \
    X(occupancy,        "occupancy",        "REGS THREADS STATIC_SMEM DYNAMIC_SMEM OPTIN GRID_BLOCKS: H200 occupancy") \
    X(occupancy_zeroed, "occupancy-zeroed", "REGS THREADS STATIC_SMEM DYNAMIC_SMEM OPTIN: blocks/SM with a zeroed device state") \
    X(join,             "join",             ": prof_finish's record join on synthetic CUPTI records") \
    X(table,            "table",            ": the table of a synthetic 3-step profile") \
    X(trace,            "trace",            "PATH: the trace of a synthetic profile") \
    X(trace_check,      "trace-check",      "PATH: trace_check_path's verdict (none, ok, or exit 2)") \
    X(kineto_table,     "kineto-table",     "on|unavailable|off|disabled: the table of a synthetic profile with ProfilerStep ranges and counters in that state") \
    X(kineto_trace,     "kineto-trace",     "PATH on|unavailable|off|disabled: its trace") \
    X(kineto_summary,   "kineto-summary",   "on|unavailable|off|disabled: the summary line's dram_read= dram_write=") \
    X(sparkline,        "sparkline",        "utf8|ascii WIDTH V...: the timeline sparkline of 100 ns samples") \
    X(locale_utf8,      "locale-utf8",      ": whether the environment's locale is UTF-8") \
    X(timeline_table,   "timeline-table",   "on|unavailable|disabled: kernel details with the timeline of a synthetic pass") \
    X(timeline_trace,   "timeline-trace",   "PATH on|unavailable|disabled: its trace") \
    X(metric_rows,      "metric-rows",      ": the metric table's rows per pass and aggregation") \
    X(format_bytes,     "format-bytes",     "BYTES...: the counters' byte format of each value (nan: not measured)") \
    X(format_pct,       "format-pct",       "PCT...: the counters' percentage format") \
    X(format_count,     "format-count",     "N...: the counters' count format (thousands separators)") \
    X(ref_equal_scores, "ref-equal-scores", ": Q = 0 gives the running mean of V") \
    X(ref_row0,         "ref-row0",         ": row 0 of a causal head equals V[0]") \
    X(ref_two_keys,     "ref-two-keys",     ": two keys with a known score gap") \
    X(softmax_masked_row, "softmax-masked-row", ": the NaN-safe softmax of a fully masked row") \
    X(softmax_nan,      "softmax-nan",      ": a NaN score makes the whole row NaN") \
    X(ref_check_poison, "ref-check-poison", ": ref_check on exact, NaN-planted and perturbed O") \
    X(pick_rows,        "pick-rows",        "BATCH HEADS SEQ N|all: the sampled query rows, then count= distinct=") \
    X(generator,        "generator",        ": determinism, moments, bf16 rounding") \
    X(generator_first,  "generator-first",  "SEED: the first 16 bf16 values of Q's stream") \
    X(generator_hash,   "generator-hash",   "N SEED: FNV-1a 64 of Q's, K's and V's streams of N elements each") \
    X(emulate,          "emulate",          "MODEL[,MODEL...] BxHxSxD [ROWS|all] [SEED]: stages' arithmetic emulated, then the check") \
    X(check_threads,    "check-threads",    "BxHxSxD ROWS|all: ref_check's result on 1, 2, 3, 5, 16 threads, same=1 if all the same bits") \
    X(check_fault,      "check-fault",      "KIND [BxHxSxD]: 05's emulated O with a fault built in, then the check") \
    X(fnv1a,            "fnv1a",            "STRING: FNV-1a 64 of the string's bytes (the run's o_hash)") \
    X(cli,              "cli",              "ARGS...: cli_parse on a stand-in stage (flags --fast, --tile N): the options, or its exit 2") \
    X(cli_twice,        "cli-twice",        "ARGS...: cli_parse of ARGS, then of no flags (one process, two runs): two lines of options") \
    X(cli_eager,        "cli-eager",        "ARGS...: cli_parse on a stand-in with 01's and 02's ATTN_GEMM_* check: the options, or its exit 2") \
    X(regions_decode,   "regions-decode",   "CASE: the regions decoder on synthetic records (regions_tests.c)") \
    X(regions_summary,  "regions-summary",  "CASE: their terminal summary") \
    X(regions_trace,    "regions-trace",    "CASE PATH: their trace tracks in an otherwise empty trace")

#define UNIT_DECLARE(fn, name, usage) int unit_##fn(int argc, char **argv);
UNIT_COMMANDS(UNIT_DECLARE)
#undef UNIT_DECLARE

/* The H200's properties as cudaGetDeviceProperties reports them (sm_90, 132 SMs, 65536 registers
 * and 2048 threads per SM, 233472 B shared memory per SM, 232448 B opt-in per block). */
void unit_h200_props(struct cudaDeviceProp *p);

#endif
