/* table.c: the torch.profiler-style table (layout and row rules in table.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "counters.h"
#include "occupancy.h"
#include "table.h"
#include "timeline.h"

void table_format_time(double us, char *buf, size_t len)
{
    if (us >= 1e6) snprintf(buf, len, "%.3fs", us / 1e6);
    else if (us >= 1e3) snprintf(buf, len, "%.3fms", us / 1e3);
    else snprintf(buf, len, "%.3fus", us);
}

void table_format_share(double part, double total, char *buf, size_t len)
{
    if (total == 0.0) snprintf(buf, len, "NaN");
    else snprintf(buf, len, "%.2f%%", part * 100.0 / total);
}

void table_truncate_name(const char *name, char *buf, size_t len)
{
    if (strlen(name) >= TABLE_NAME_CUT) snprintf(buf, len, "%.*s...", (int)TABLE_NAME_CUT, name);
    else snprintf(buf, len, "%s", name);
}

/* ---- rows ---------------------------------------------------------------------------------- */

enum { ROW_CPU, ROW_GPU, ROW_GPU_ANNOTATION };

typedef struct {
    const char *name;
    int cls;
    int64_t self_cpu, cpu_total, self_cuda, cuda_total;   /* ns */
    long count;
    size_t order;              /* first appearance */
} row;

typedef struct { row *v; size_t n, cap; } row_list;

static void *xrealloc(void *p, size_t bytes)
{
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) { fprintf(stderr, "table: out of host memory\n"); attn_exit(1); }
    return q;
}

static row *row_get(row_list *l, const char *name, int cls)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].cls == cls && strcmp(l->v[i].name, name) == 0) return &l->v[i];
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 32;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    row *r = &l->v[l->n];
    memset(r, 0, sizeof *r);
    r->name = name;
    r->cls = cls;
    r->order = l->n++;
    return r;
}

/* One GPU-lane span of attn_fwd: a step's activities on one (device, stream). */
typedef struct { int step; uint32_t device, stream; uint64_t start, end; } span;

/* Spans of the active steps' GPU activities, in order of first activity. Returns the count. */
static size_t step_spans(const profile *p, span **out)
{
    span *s = xrealloc(NULL, (p->n_acts + 1) * sizeof *s);
    size_t n = 0;
    for (size_t i = 0; i < p->n_acts; i++) {
        const gpu_activity *a = &p->acts[i];
        if (a->step < 1) continue;
        size_t j = 0;
        while (j < n && !(s[j].step == a->step && s[j].device == a->device && s[j].stream == a->stream))
            j++;
        if (j == n) {
            s[n].step = a->step; s[n].device = a->device; s[n].stream = a->stream;
            s[n].start = a->start_ns; s[n].end = a->end_ns;
            n++;
        } else {
            if (a->start_ns < s[j].start) s[j].start = a->start_ns;
            if (a->end_ns > s[j].end) s[j].end = a->end_ns;
        }
    }
    *out = s;
    return n;
}

typedef struct { uint64_t start; int type; size_t idx; } event_ref;
enum { EV_RANGE, EV_API, EV_ACT, EV_SPAN };

static int cmp_event(const void *a, const void *b)
{
    const event_ref *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->type != y->type) return x->type - y->type;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_row(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->cuda_total != y->cuda_total) return x->cuda_total > y->cuda_total ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static int64_t dur(uint64_t start, uint64_t end) { return end > start ? (int64_t)(end - start) : 0; }

/* Builds the rows of the active steps (unsorted, in order of first appearance). */
static void build_rows(const profile *p, row_list *rows)
{
    const size_t nr = p->n_ranges;
    int64_t *child = xrealloc(NULL, (nr + 1) * sizeof *child);
    int64_t *self_cuda = xrealloc(NULL, (nr + 1) * sizeof *self_cuda);
    int64_t *cuda_total = xrealloc(NULL, (nr + 1) * sizeof *cuda_total);
    memset(child, 0, (nr + 1) * sizeof *child);
    memset(self_cuda, 0, (nr + 1) * sizeof *self_cuda);
    memset(cuda_total, 0, (nr + 1) * sizeof *cuda_total);

    for (size_t i = 0; i < nr; i++) {
        const host_range *r = &p->ranges[i];
        if (r->step >= 1 && r->parent >= 0 && (size_t)r->parent < nr)
            child[r->parent] += dur(r->start_ns, r->end_ns);
    }
    for (size_t i = 0; i < p->n_apis; i++) {
        const api_call *a = &p->apis[i];
        if (a->step >= 1 && a->range >= 0 && (size_t)a->range < nr)
            child[a->range] += dur(a->start_ns, a->end_ns);
    }
    for (size_t i = 0; i < p->n_acts; i++) {
        const gpu_activity *a = &p->acts[i];
        if (a->step < 1 || a->range < 0 || (size_t)a->range >= nr) continue;
        const int64_t d = dur(a->start_ns, a->end_ns);
        self_cuda[a->range] += d;
        for (int r = a->range, hops = 0; r >= 0 && (size_t)r < nr && hops <= (int)nr;
             r = p->ranges[r].parent, hops++)
            cuda_total[r] += d;
    }

    span *spans = NULL;
    const size_t ns = step_spans(p, &spans);

    size_t n_ev = 0;
    event_ref *ev = xrealloc(NULL, (nr + p->n_apis + p->n_acts + ns + 1) * sizeof *ev);
    for (size_t i = 0; i < nr; i++)
        if (p->ranges[i].step >= 1) ev[n_ev++] = (event_ref){ p->ranges[i].start_ns, EV_RANGE, i };
    for (size_t i = 0; i < p->n_apis; i++)
        if (p->apis[i].step >= 1) ev[n_ev++] = (event_ref){ p->apis[i].start_ns, EV_API, i };
    for (size_t i = 0; i < p->n_acts; i++)
        if (p->acts[i].step >= 1) ev[n_ev++] = (event_ref){ p->acts[i].start_ns, EV_ACT, i };
    for (size_t i = 0; i < ns; i++) ev[n_ev++] = (event_ref){ spans[i].start, EV_SPAN, i };
    qsort(ev, n_ev, sizeof *ev, cmp_event);

    for (size_t e = 0; e < n_ev; e++) {
        const size_t i = ev[e].idx;
        row *r;
        int64_t d;
        switch (ev[e].type) {
        case EV_RANGE: {
            const host_range *h = &p->ranges[i];
            d = dur(h->start_ns, h->end_ns);
            r = row_get(rows, h->name, ROW_CPU);
            r->cpu_total += d;
            r->self_cpu += d > child[i] ? d - child[i] : 0;
            r->self_cuda += self_cuda[i];
            r->cuda_total += cuda_total[i];
            r->count++;
            break;
        }
        case EV_API: {
            const api_call *a = &p->apis[i];
            d = dur(a->start_ns, a->end_ns);
            r = row_get(rows, a->name, ROW_CPU);
            r->cpu_total += d;
            r->self_cpu += d;
            r->count++;
            break;
        }
        case EV_ACT: {
            const gpu_activity *a = &p->acts[i];
            d = dur(a->start_ns, a->end_ns);
            r = row_get(rows, a->name, ROW_GPU);
            r->self_cuda += d;
            r->cuda_total += d;
            r->count++;
            break;
        }
        default: {
            d = dur(spans[i].start, spans[i].end);
            r = row_get(rows, "attn_fwd", ROW_GPU_ANNOTATION);
            r->self_cuda += d;
            r->cuda_total += d;
            r->count++;
            break;
        }
        }
    }
    free(ev);
    free(spans);
    free(child);
    free(self_cuda);
    free(cuda_total);
}

/* ---- printing ------------------------------------------------------------------------------ */

static void put_cell(FILE *out, const char *text, int width) { fprintf(out, "%*s  ", width, text); }

static void put_separator(FILE *out, int name_w, int n_cols)
{
    for (int c = 0; c < n_cols; c++) {
        int w = c == 0 ? name_w : TABLE_COL_WIDTH;
        for (int i = 0; i < w; i++) fputc('-', out);
        fputs("  ", out);
    }
    fputc('\n', out);
}

void table_print_averages(FILE *out, const profile *p)
{
    row_list rows = { NULL, 0, 0 };
    build_rows(p, &rows);
    if (rows.n == 0) {
        free(rows.v);
        return; /* torch prints nothing for an empty event list */
    }
    qsort(rows.v, rows.n, sizeof *rows.v, cmp_row);

    size_t max_len = 0;
    int64_t sum_self_cpu = 0, sum_self_cuda = 0;
    int has_cuda = 0;
    for (size_t i = 0; i < rows.n; i++) {
        size_t l = strlen(rows.v[i].name);
        if (l > max_len) max_len = l;
        sum_self_cpu += rows.v[i].self_cpu;
        if (rows.v[i].cls == ROW_GPU) sum_self_cuda += rows.v[i].self_cuda;
        if (rows.v[i].self_cuda > 0) has_cuda = 1;
    }
    const int name_w = max_len + 4 < TABLE_NAME_WIDTH_MAX ? (int)max_len + 4 : TABLE_NAME_WIDTH_MAX;
    const int n_cols = has_cuda ? 11 : 7;
    static const char *heads[] = { "Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                                   "CPU time avg", "Self CUDA", "Self CUDA %", "CUDA total",
                                   "CUDA time avg", "# of Calls" };

    put_separator(out, name_w, n_cols);
    for (int c = 0; c < 6; c++) put_cell(out, heads[c], c == 0 ? name_w : TABLE_COL_WIDTH);
    if (has_cuda)
        for (int c = 6; c < 10; c++) put_cell(out, heads[c], TABLE_COL_WIDTH);
    put_cell(out, heads[10], TABLE_COL_WIDTH);
    fputc('\n', out);
    put_separator(out, name_w, n_cols);

    const double cpu_total_us = sum_self_cpu / 1e3, cuda_total_us = sum_self_cuda / 1e3;
    for (size_t i = 0; i < rows.n; i++) {
        const row *r = &rows.v[i];
        char name[TABLE_NAME_WIDTH_MAX + 8], cell[64];
        table_truncate_name(r->name, name, sizeof name);
        put_cell(out, name, name_w);
        const double self_cpu = r->self_cpu / 1e3, cpu_total = r->cpu_total / 1e3;
        const double self_cuda = r->self_cuda / 1e3, cuda_total = r->cuda_total / 1e3;
        const double n = r->count > 0 ? (double)r->count : 1.0;
        table_format_share(self_cpu, cpu_total_us, cell, sizeof cell);
        put_cell(out, cell, TABLE_COL_WIDTH);
        table_format_time(self_cpu, cell, sizeof cell);
        put_cell(out, cell, TABLE_COL_WIDTH);
        table_format_share(cpu_total, cpu_total_us, cell, sizeof cell);
        put_cell(out, cell, TABLE_COL_WIDTH);
        table_format_time(cpu_total, cell, sizeof cell);
        put_cell(out, cell, TABLE_COL_WIDTH);
        table_format_time(cpu_total / n, cell, sizeof cell);
        put_cell(out, cell, TABLE_COL_WIDTH);
        if (has_cuda) {
            table_format_time(self_cuda, cell, sizeof cell);
            put_cell(out, cell, TABLE_COL_WIDTH);
            table_format_share(self_cuda, cuda_total_us, cell, sizeof cell);
            put_cell(out, cell, TABLE_COL_WIDTH);
            table_format_time(cuda_total, cell, sizeof cell);
            put_cell(out, cell, TABLE_COL_WIDTH);
            table_format_time(cuda_total / n, cell, sizeof cell);
            put_cell(out, cell, TABLE_COL_WIDTH);
        }
        snprintf(cell, sizeof cell, "%ld", r->count);
        put_cell(out, cell, TABLE_COL_WIDTH);
        fputc('\n', out);
    }
    put_separator(out, name_w, n_cols);
    char cell[64];
    table_format_time(cpu_total_us, cell, sizeof cell);
    fprintf(out, "Self CPU time total: %s\n", cell);
    if (has_cuda) {
        table_format_time(cuda_total_us, cell, sizeof cell);
        fprintf(out, "Self CUDA time total: %s\n", cell);
    }
    free(rows.v);
}

void table_print_header(FILE *out, const profile *p, const report_info *info)
{
    fprintf(out, "stage %s: %s\n", info->stage ? info->stage : "?", info->idea ? info->idea : "");
    if (info->prop)
        fprintf(out, "device %s (%d SMs, sm_%d%d) | ", info->prop->name,
                info->prop->multiProcessorCount, info->prop->major, info->prop->minor);
    fprintf(out, "shape %dx%dx%dx%d (batch x heads x seq x head_dim), bf16, causal | ",
            info->shape.batch, info->shape.heads, info->shape.seq, info->shape.head_dim);
    if (p->active_steps > 0)
        fprintf(out, "%d profiled steps, times summed over them\n", p->active_steps);
    else
        fprintf(out, "no profiled steps\n");
}

static int same_config(const gpu_activity *a, const gpu_activity *b)
{
    return strcmp(a->name, b->name) == 0 && memcmp(a->grid, b->grid, sizeof a->grid) == 0 &&
           memcmp(a->block, b->block, sizeof a->block) == 0 && a->registers == b->registers &&
           a->static_smem == b->static_smem && a->dynamic_smem == b->dynamic_smem &&
           a->smem_optin == b->smem_optin &&
           (a->launch_api == b->launch_api ||
            (a->launch_api && b->launch_api && strcmp(a->launch_api, b->launch_api) == 0));
}

/* The counters of every launch of a's configuration in the first active step that has one,
 * each metric aggregated as its row says (metrics.h: bytes, counts and times summed,
 * percentages and ratios averaged). Returns the launches found (0: none). */
static int config_counters(const profile *p, const report_info *info, const gpu_activity *a,
                           kernel_counters *sum, double *write, int *write_from_l2)
{
    int step = -1, n = 0;
    for (size_t i = 0; i < p->n_acts && step < 0; i++)
        if (p->acts[i].kind == ACT_KERNEL && p->acts[i].step >= 1 && same_config(&p->acts[i], a))
            step = p->acts[i].step;
    for (int m = 0; m < CTR_N; m++) sum->v[m] = 0.0;
    *write = 0.0;
    *write_from_l2 = 0;
    for (size_t i = 0; i < p->n_acts; i++) {
        const gpu_activity *b = &p->acts[i];
        if (b->kind != ACT_KERNEL || b->step != step || !same_config(b, a)) continue;
        const kernel_counters *k = counters_for(p, info->counters, b);
        if (!k) return 0;
        for (int m = 0; m < CTR_N; m++) sum->v[m] += k->v[m];   /* NaN stays NaN */
        int l2 = 0;
        *write += counters_kernel_write(k, &l2);
        *write_from_l2 |= l2;
        n++;
    }
    if (n > 1)
        for (int m = 0; m < CTR_N; m++)
            if (METRICS[m].agg == MA_MEAN) sum->v[m] /= n;
    return n;
}

/* "    counters: ..." under a kernel's details line, when the counter pass measured it. */
static void print_kernel_counters(FILE *out, const profile *p, const report_info *info,
                                  const gpu_activity *a)
{
    kernel_counters k;
    double write;
    int from_l2;
    const int n = config_counters(p, info, a, &k, &write, &from_l2);
    if (n == 0) return;
    char rd[32], wr[32], dw[32], occ[32], th[32], tp[32], hp[32], hm[48], gm[48];
    counters_format_bytes(k.v[CTR_DRAM_READ], rd, sizeof rd);
    counters_format_bytes(write, wr, sizeof wr);
    counters_format_bytes(k.v[CTR_DRAM_WRITE], dw, sizeof dw);
    counters_format_pct(k.v[CTR_WARPS_ACTIVE], occ, sizeof occ);
    counters_format_pct(k.v[CTR_TENSOR_PCT], tp, sizeof tp);
    counters_format_pct(k.v[CTR_HMMA_PCT], hp, sizeof hp);
    counters_format_count(k.v[CTR_HMMA_INST], hm, sizeof hm);
    counters_format_count(k.v[CTR_GMMA_INST], gm, sizeof gm);
    occ_result o;
    if (info->prop && occupancy_of_activity(info->prop, a, &o) == 0)
        snprintf(th, sizeof th, "%.2f%%", o.occupancy_pct);
    else
        snprintf(th, sizeof th, "-");
    const char *cls = counters_tensor_class(&k);
    char wnote[96];
    if (from_l2) snprintf(wnote, sizeof wnote, "L2 write sectors; DRAM saw %s during the kernel", dw);
    else snprintf(wnote, sizeof wnote, "DRAM write counter");
    fprintf(out, "    counters%s: DRAM read %s, written %s (%s), achieved occupancy %s "
            "(theoretical %s), tensor pipe %s active (HMMA-class %s), tensor instructions "
            "%s HMMA-class / %s GMMA: %s\n", n > 1 ? " (all launches of the step)" : "", rd, wr,
            wnote, occ, th, tp, hp, hm, gm, cls);
    int ids[3];
    double share[3];
    const int ns = counters_top_stalls(&k, 3, ids, share);
    if (ns > 0) {
        fprintf(out, "    stalls: ");
        for (int i = 0; i < ns; i++)
            fprintf(out, "%s%s %.1f%%", i ? ", " : "", METRICS[ids[i]].label, share[i]);
        fprintf(out, " of warp states (top %d; all in the trace's kernel args)\n", ns);
    }
}

/* "    timeline: ..." under a kernel's details: over the first launch of a's configuration in the
 * timeline pass, the tensor pipe and DRAM sparklines with their means and the samples behind
 * them; "-" when the pass did not run or measured nothing there. */
static void print_kernel_timeline(FILE *out, const profile *p, const report_info *info,
                                  const gpu_activity *a)
{
    const timeline *t = info->timeline;
    if (!t) return;
    const gpu_activity *k = t->state == TIMELINE_ON ? timeline_kernel_for(p, a) : NULL;
    if (!k) {
        fprintf(out, "    timeline: -\n");
        return;
    }
    const int utf8 = timeline_locale_utf8();
    static const int shown[] = { TL_TENSOR, TL_DRAM };
    fprintf(out, "    timeline:");
    size_t n = 0;
    for (size_t i = 0; i < sizeof shown / sizeof *shown; i++) {
        const int j = shown[i] - TL_FIRST;
        char line[4 * TIMELINE_SPARK_WIDTH + 1], mean_text[32];
        double mean;
        n = timeline_mean(t, k, j, &mean);
        timeline_sparkline(t, j, k->start_ns, k->end_ns, TIMELINE_SPARK_WIDTH, utf8, line,
                           sizeof line);
        counters_format_pct(mean, mean_text, sizeof mean_text);
        fprintf(out, "%s %s |%s| mean %s", i ? "," : "", METRICS[shown[i]].label, line, mean_text);
    }
    fprintf(out, " (%zu samples, every %llu ns)\n", n, (unsigned long long)t->interval_ns);
}

/* The line that says what the timeline is, or why there is none. */
static void print_timeline_note(FILE *out, const report_info *info)
{
    const timeline *t = info->timeline;
    if (!t) return;
    switch (t->state) {
    case TIMELINE_ON:
        fprintf(out, "Timeline: one more forward under CUPTI PM sampling (GPU-wide, every %llu ns), "
                "after the traced steps and before the timing; %zu samples over its kernels "
                "(the trace's counter tracks); clocks %s (measured offset %lld ns)%s\n",
                (unsigned long long)t->interval_ns, t->n,
                !t->aligned ? "not aligned (no busy sample)" : t->applied_offset_ns ? "shifted"
                : "agree", (long long)t->measured_offset_ns,
                t->overflow ? "; the sample buffer filled up: later kernels have fewer samples" : "");
        return;
    case TIMELINE_OFF:
        fprintf(out, "Timeline: off (%s owns CUPTI)\n", t->why);
        return;
    default:
        fprintf(out, "Timeline: - (%s)\n", t->why[0] ? t->why : "not measured");
        return;
    }
}

/* The line under the kernel details that says what the counters are, or why there are none. */
static void print_counters_note(FILE *out, const profile *p, const report_info *info)
{
    const counter_pass *c = info->counters;
    if (!c) return;
    switch (c->state) {
    case COUNTERS_ON: {
        double r, w;
        char rb[32], wb[32];
        if (counters_step_bytes(p, c, 1, &r, &w) != 0) {
            fprintf(out, "Counters: the counter pass saw %zu kernels, a profiled step has a "
                    "different count: not mapped (-)\n", c->n);
            return;
        }
        counters_format_bytes(r, rb, sizeof rb);
        counters_format_bytes(w, wb, sizeof wb);
        fprintf(out, "Counters: one more forward under CUPTI's Range Profiler (%d pass%s, kernel "
                "replay), after the timed and traced steps; durations there are not comparable. "
                "Written = the larger of DRAM writes and L2 write sectors x 32 B (an output still "
                "in L2 when the kernel ends reaches DRAM later). Per forward: DRAM read %s, "
                "written %s (kernels from the counters; copies and memsets from their activity "
                "records)\n", c->passes, c->passes == 1 ? "" : "es", rb, wb);
        return;
    }
    case COUNTERS_OFF:
        fprintf(out, "Counters: off (%s owns CUPTI)\n", c->why);
        return;
    case COUNTERS_DISABLED:
        fprintf(out, "Counters: - (%s)\n", c->why[0] ? c->why : "--no-counters");
        return;
    default:
        fprintf(out, "Counters: - (%s)\n", c->why[0] ? c->why : "not measured");
        return;
    }
}

void table_print_kernel_details(FILE *out, const profile *p, const report_info *info)
{
    const gpu_activity **seen = xrealloc(NULL, (p->n_acts + 1) * sizeof *seen);
    size_t n_seen = 0;
    for (size_t i = 0; i < p->n_acts; i++) {
        const gpu_activity *a = &p->acts[i];
        if (a->kind != ACT_KERNEL || a->step < 1) continue;
        size_t j = 0;
        while (j < n_seen && !same_config(seen[j], a)) j++;
        if (j == n_seen) seen[n_seen++] = a;
    }
    if (n_seen == 0) {
        free(seen);
        return;
    }
    fprintf(out, "Kernel details (theoretical occupancy from cuda_occupancy.h with each kernel's own "
            "shared-memory limit; Kineto's estimate where it differs):\n");
    for (size_t j = 0; j < n_seen; j++) {
        const gpu_activity *a = seen[j];
        /* the full name: only the table's rows mimic torch's cut at 52 characters */
        fprintf(out, "  %s: grid [%d, %d, %d], block [%d, %d, %d], %d registers/thread, "
                "shared memory %d + %d B%s", a->name, a->grid[0], a->grid[1], a->grid[2],
                a->block[0], a->block[1], a->block[2], a->registers, a->static_smem,
                a->dynamic_smem, a->smem_optin ? " (opt-in)" : "");
        occ_result o;
        if (info->prop && occupancy_of_activity(info->prop, a, &o) == 0) {
            fprintf(out, ", %d block%s/SM (%d warps), occupancy %.2f%%, limited by %s",
                    o.active_blocks, o.active_blocks == 1 ? "" : "s", o.active_warps,
                    o.occupancy_pct, o.limiter);
            if (o.kineto_pct != o.est_pct) fprintf(out, ", Kineto: %d%%", o.kineto_pct);
        }
        fprintf(out, ", launch %s\n", a->launch_api ? a->launch_api : "unknown");
        print_kernel_counters(out, p, info, a);
        print_kernel_timeline(out, p, info, a);
    }
    free(seen);
    print_counters_note(out, p, info);
    print_timeline_note(out, info);
}

void table_print(FILE *out, const profile *p, const report_info *info)
{
    table_print_header(out, p, info);
    table_print_averages(out, p);
    table_print_kernel_details(out, p, info);
    fflush(out);
}
