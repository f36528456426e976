/* eager_env.c: see eager_env.h. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eager/eager_env.h"

/* A 0|1 setting: 0 when unset, else "0" or "1"; any other value (empty too): exit 2, naming the
 * variable and what 0 and 1 mean. */
static int env_bit(const char *name, const char *what0, const char *what1)
{
    const char *env = getenv(name);
    if (!env) return 0;
    if (strcmp(env, "0") == 0) return 0;
    if (strcmp(env, "1") == 0) return 1;
    die_usage("%s=%s: expected 0 (%s, the default, also when unset) or 1 (%s)", name, env, what0,
              what1);
}

/* Index i of ATTN_GEMM_ALGO "i" or "i,j" at *p: decimal digits only (the flags' rule: no sign, no
 * space), 0 to EAGER_HEURISTIC_MAX - 1. Returns -1 if malformed or out of range, else the index;
 * *p moves past the digits. */
static int algo_entry(const char **p)
{
    const size_t n = strspn(*p, "0123456789");
    long v = 0;
    for (size_t c = 0; c < n && v < EAGER_HEURISTIC_MAX; c++) v = 10 * v + ((*p)[c] - '0');
    *p += n;
    return n == 0 || v >= EAGER_HEURISTIC_MAX ? -1 : (int)v;
}

void eager_read_gemm_env(eager_gemm_env *e)
{
    memset(e, 0, sizeof *e);
    e->workspace = env_bit("ATTN_GEMM_WORKSPACE", "GEMM algorithms without a workspace",
                           "allow a cuBLASLt workspace of up to 32 MiB");
    e->verbose = env_bit("ATTN_GEMM_VERBOSE", "quiet",
                         "print each GEMM's candidate algorithms and the pick on stderr");
    const char *env = getenv("ATTN_GEMM_ALGO");
    if (!env) return;
    const char *p = env;
    e->algo[0] = algo_entry(&p);
    e->algo[1] = e->algo[0];
    if (e->algo[0] >= 0 && *p == ',') {
        p++;
        e->algo[1] = algo_entry(&p);
    }
    if (e->algo[0] < 0 || e->algo[1] < 0 || *p != '\0')
        die_usage("ATTN_GEMM_ALGO=%s: expected heuristic indices 0..%d as i (both GEMMs) or i,j "
                  "(Q.K^T, then P.V), digits only, e.g. 0 or 1,0 (unset: 0)", env,
                  EAGER_HEURISTIC_MAX - 1);
}

void eager_check_env(void)
{
    eager_gemm_env e;
    eager_read_gemm_env(&e);
}

int eager_gemm_workspace_allowed(void)
{
    eager_gemm_env e;
    eager_read_gemm_env(&e);
    return e.workspace;
}
