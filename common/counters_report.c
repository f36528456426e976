/* counters_report.c: the counter pass's numbers mapped onto the profile's kernels, per-forward
 * byte totals and their formatting (counters.h). No CUPTI, no GPU: the unit tests call these on
 * synthetic profiles. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "counters.h"

const kernel_counters *counters_for(const profile *p, const counter_pass *c, const gpu_activity *a)
{
    if (!c || c->state != COUNTERS_ON || a->kind != ACT_KERNEL || a->step < 1) return NULL;
    size_t idx = 0, count = 0, mine = (size_t)-1;
    for (size_t i = 0; i < p->n_acts; i++) {   /* acts are in start order = launch order */
        const gpu_activity *b = &p->acts[i];
        if (b->kind != ACT_KERNEL || b->step != a->step) continue;
        if (b == a) mine = idx;
        idx++;
        count++;
    }
    if (mine == (size_t)-1 || count != c->n) return NULL;
    return &c->k[mine];
}

double counters_kernel_write(const kernel_counters *k, int *from_l2)
{
    const double dram = k->v[CTR_DRAM_WRITE];
    const double l2 = k->v[CTR_L2_WRITE_SECTORS] * 32.0;
    int l2_wins = !isnan(l2) && (isnan(dram) || l2 > dram);
    if (from_l2) *from_l2 = l2_wins;
    return l2_wins ? l2 : dram;
}

int counters_step_bytes(const profile *p, const counter_pass *c, int step, double *read,
                        double *write)
{
    *read = *write = NAN;
    if (!c || c->state != COUNTERS_ON) return -1;
    double r = 0.0, w = 0.0;
    size_t kernels = 0;
    for (size_t i = 0; i < p->n_acts; i++) {
        const gpu_activity *a = &p->acts[i];
        if (a->step != step) continue;
        if (a->kind == ACT_KERNEL) {
            const kernel_counters *k = counters_for(p, c, a);
            if (!k) return -1;
            const double kw = counters_kernel_write(k, NULL);
            if (isnan(k->v[CTR_DRAM_READ]) || isnan(kw)) return -1;
            r += k->v[CTR_DRAM_READ];
            w += kw;
            kernels++;
        } else if (a->kind == ACT_MEMSET) {
            w += (double)a->bytes;
        } else { /* memcpy: CUpti_ActivityMemcpyKind 1 HtoD, 2 DtoH, 8 DtoD */
            if (a->copy_kind == 1) w += (double)a->bytes;
            else if (a->copy_kind == 2) r += (double)a->bytes;
            else { r += (double)a->bytes; w += (double)a->bytes; }
        }
    }
    if (kernels != c->n) return -1;
    *read = r;
    *write = w;
    return 0;
}

int counters_top_stalls(const kernel_counters *k, int n, int *ids, double *share)
{
    double total = 0.0;
    int measured = 0;
    for (int m = 0; m < CTR_N; m++)
        if (METRICS[m].pass == MP_STALL && !isnan(k->v[m]) && k->v[m] > 0) {
            total += k->v[m];
            measured++;
        }
    if (!measured || total <= 0) return 0;
    int used[CTR_N] = {0}, got = 0;
    for (; got < n; got++) {
        int best = -1;
        for (int m = 0; m < CTR_N; m++) {
            if (METRICS[m].pass != MP_STALL || m == STALL_SELECTED || used[m] || isnan(k->v[m]) ||
                k->v[m] <= 0)
                continue;
            if (best < 0 || k->v[m] > k->v[best]) best = m;
        }
        if (best < 0) break;
        used[best] = 1;
        ids[got] = best;
        share[got] = 100.0 * k->v[best] / total;
    }
    return got;
}

const char *counters_tensor_class(const kernel_counters *k)
{
    const double g = k->v[CTR_GMMA_INST], h = k->v[CTR_HMMA_INST], pct = k->v[CTR_HMMA_PCT];
    if (isnan(g) || isnan(h)) return "-";
    if (g > 0) return "wgmma (GMMA)";
    if (h > 0 && !isnan(pct) && pct >= COUNTERS_TENSOR_MIN_PCT) return "mma.sync (HMMA)";
    return "no tensor-core math";
}

void counters_format_summary(const counter_pass *c, double bytes, char *buf, size_t len)
{
    if (c && c->state == COUNTERS_OFF) snprintf(buf, len, "off");
    else if (isnan(bytes)) snprintf(buf, len, "-");
    else snprintf(buf, len, "%.0f", bytes);
}

void counters_format_bytes(double bytes, char *buf, size_t len)
{
    if (isnan(bytes)) snprintf(buf, len, "-");
    else if (bytes < 1e3) snprintf(buf, len, "%.0f B", bytes);
    else if (bytes < 1e6) snprintf(buf, len, "%.2f kB", bytes / 1e3);
    else if (bytes < 1e9) snprintf(buf, len, "%.1f MB", bytes / 1e6);
    else snprintf(buf, len, "%.2f GB", bytes / 1e9);
}

void counters_format_pct(double pct, char *buf, size_t len)
{
    if (isnan(pct)) snprintf(buf, len, "-");
    else snprintf(buf, len, "%.1f%%", pct);
}

void counters_format_count(double n, char *buf, size_t len)
{
    if (isnan(n) || n < 0) {
        snprintf(buf, len, "-");
        return;
    }
    char digits[64];
    snprintf(digits, sizeof digits, "%.0f", n);
    const size_t nd = strlen(digits);
    char out[96];
    size_t o = 0;
    for (size_t i = 0; i < nd && o + 2 < sizeof out; i++) {
        if (i > 0 && (nd - i) % 3 == 0) out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
    snprintf(buf, len, "%s", out);
}
