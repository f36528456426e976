/* eager_env.h: the ATTN_GEMM_* settings of 01_naive and 02_inplace (their forms: eager_ops.h),
 * read from the environment and checked whole. Host C, no CUDA or cuBLAS call: the unit tests
 * (build/common_unit cli-eager) run this parser without loading cuBLAS. */
#ifndef ATTN_EAGER_ENV_H
#define ATTN_EAGER_ENV_H

#ifdef __cplusplus
extern "C" {
#endif

/* The candidates asked of cuBLASLt's heuristic per GEMM: ATTN_GEMM_ALGO's indices are 0 to
 * EAGER_HEURISTIC_MAX - 1. */
enum { EAGER_HEURISTIC_MAX = 16 };

/* The knobs, as 01's and 02's --help lists them (attn_stage.env_help). */
#define EAGER_ENV_HELP \
    "  ATTN_GEMM_WORKSPACE=0|1  1: let the GEMMs use a cuBLASLt workspace (up to 32 MiB), as\n" \
    "                    PyTorch does; 0 (default): algorithms that need none\n" \
    "  ATTN_GEMM_ALGO=i or i,j  candidate i (0 to 15, digits only) of cuBLASLt's heuristic list\n" \
    "                    for both GEMMs, or i for Q.K^T and j for P.V (default 0)\n" \
    "  ATTN_GEMM_VERBOSE=0|1  1: print each GEMM's candidate algorithms and the pick on stderr;\n" \
    "                    0 (default): nothing"

/* The three settings, read whole. */
typedef struct {
    int workspace;              /* ATTN_GEMM_WORKSPACE: 0 or 1 */
    int algo[2];                /* ATTN_GEMM_ALGO: the index for plan 0 (Q.K^T) and plan 1 (P.V) */
    int verbose;                /* ATTN_GEMM_VERBOSE: 0 or 1 */
} eager_gemm_env;

/* Reads and checks the three settings into *e (unset: 0); a malformed one (an empty value too):
 * one line on stderr naming the variable and its accepted forms, exit 2. */
void eager_read_gemm_env(eager_gemm_env *e);

/* Checks ATTN_GEMM_WORKSPACE, ATTN_GEMM_ALGO and ATTN_GEMM_VERBOSE whole (eager_read_gemm_env):
 * 01's and 02's check_env, run by cli_parse before the device is looked for. */
void eager_check_env(void);

/* ATTN_GEMM_WORKSPACE: 0 when unset or "0", 1 when "1"; a malformed ATTN_GEMM_* (an empty value
 * too): one line on stderr, exit 2. */
int eager_gemm_workspace_allowed(void);

#ifdef __cplusplus
}
#endif
#endif
