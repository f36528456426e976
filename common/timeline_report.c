/* timeline_report.c: the timeline's samples aligned to the profile's clock, mapped onto kernels,
 * averaged and drawn (timeline.h). No CUPTI, no GPU: the unit tests call these on synthetic
 * samples. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline.h"

void timeline_set_state(timeline *t, timeline_state state, const char *why)
{
    memset(t, 0, sizeof *t);
    t->state = state;
    snprintf(t->why, sizeof t->why, "%s", why ? why : "");
}

void timeline_free(timeline *t)
{
    if (!t) return;
    free(t->s);
    memset(t, 0, sizeof *t);
}

/* The timeline step's kernels: first start, last end. Returns 0 when there is none. */
static int timeline_span(const profile *p, uint64_t *start, uint64_t *end)
{
    int any = 0;
    for (size_t i = 0; i < p->n_acts; i++) {
        const gpu_activity *a = &p->acts[i];
        if (a->kind != ACT_KERNEL || a->step != PROF_STEP_TIMELINE) continue;
        if (!any || a->start_ns < *start) *start = a->start_ns;
        if (!any || a->end_ns > *end) *end = a->end_ns;
        any = 1;
    }
    return any;
}

static uint64_t shift(uint64_t t, int64_t by)
{
    if (by < 0 && (uint64_t)(-by) > t) return 0;
    return (uint64_t)((int64_t)t + by);
}

void timeline_align(timeline *t, const profile *p)
{
    if (t->state != TIMELINE_ON) return;
    uint64_t ks = 0, ke = 0;
    if (!timeline_span(p, &ks, &ke)) return;
    const int w = TL_WARPS - TL_FIRST;
    size_t first = t->n, last = t->n;
    for (size_t i = 0; i < t->n; i++)
        if (!isnan(t->s[i].v[w]) && t->s[i].v[w] > TIMELINE_BUSY_PCT) {
            if (first == t->n) first = i;
            last = i;
        }
    if (first < t->n) {
        /* in integers: epoch nanoseconds do not fit a double's 53 bits exactly */
        const tl_sample *a = &t->s[first], *b = &t->s[last];
        const uint64_t mid_first = a->start_ns + (a->end_ns - a->start_ns) / 2;
        const uint64_t mid_last = b->start_ns + (b->end_ns - b->start_ns) / 2;
        const int64_t lead = (int64_t)(ks - mid_first), trail = (int64_t)(ke - mid_last);
        t->measured_offset_ns = lead / 2 + trail / 2;
        t->aligned = 1;
        const double tol = 2.0 * (double)t->interval_ns;
        t->applied_offset_ns = llabs(t->measured_offset_ns) <= tol ? 0 : t->measured_offset_ns;
        for (size_t i = 0; i < t->n; i++) {
            t->s[i].start_ns = shift(t->s[i].start_ns, t->applied_offset_ns);
            t->s[i].end_ns = shift(t->s[i].end_ns, t->applied_offset_ns);
        }
    }
    /* keep the samples overlapping the pass's kernels, widened by one interval */
    const uint64_t lo = ks > t->interval_ns ? ks - t->interval_ns : 0, hi = ke + t->interval_ns;
    size_t kept = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->s[i].end_ns > lo && t->s[i].start_ns < hi) t->s[kept++] = t->s[i];
    t->dropped += t->n - kept;
    t->n = kept;
}

const gpu_activity *timeline_kernel_for(const profile *p, const gpu_activity *a)
{
    if (a->kind != ACT_KERNEL) return NULL;
    size_t mine = (size_t)-1, idx = 0;
    for (size_t i = 0; i < p->n_acts; i++) {
        const gpu_activity *b = &p->acts[i];
        if (b->kind != ACT_KERNEL || b->step != a->step) continue;
        if (b == a) { mine = idx; break; }
        idx++;
    }
    if (mine == (size_t)-1) return NULL;
    idx = 0;
    for (size_t i = 0; i < p->n_acts; i++) {
        const gpu_activity *b = &p->acts[i];
        if (b->kind != ACT_KERNEL || b->step != PROF_STEP_TIMELINE) continue;
        if (idx++ == mine) return strcmp(b->name, a->name) == 0 ? b : NULL;
    }
    return NULL;
}

size_t timeline_mean(const timeline *t, const gpu_activity *k, int j, double *mean)
{
    double sum = 0.0;
    size_t n = 0;
    *mean = NAN;
    if (!t || t->state != TIMELINE_ON || !k) return 0;
    for (size_t i = 0; i < t->n; i++) {
        const uint64_t mid = t->s[i].start_ns + (t->s[i].end_ns - t->s[i].start_ns) / 2;
        if (mid < k->start_ns || mid >= k->end_ns || isnan(t->s[i].v[j])) continue;
        sum += t->s[i].v[j];
        n++;
    }
    if (n) *mean = sum / (double)n;
    return n;
}

size_t timeline_sparkline(const timeline *t, int j, uint64_t start, uint64_t end, int width,
                          int utf8, char *buf, size_t len)
{
    static const char *const blocks[8] = { "\u2581", "\u2582", "\u2583", "\u2584", "\u2585",
                                           "\u2586", "\u2587", "\u2588" };
    static const char ascii[8] = { '.', ':', '-', '=', '+', '*', '#', '@' };
    size_t o = 0, used = 0;
    if (len == 0) return 0;
    buf[0] = '\0';
    if (width <= 0 || end <= start) return 0;
    /* times relative to start, in ns: epoch nanoseconds do not fit a double's 53 bits exactly */
    const double span = (double)(end - start);
    for (size_t i = 0; t && i < t->n; i++)
        if (t->s[i].end_ns > start && t->s[i].start_ns < end) used++;
    for (int c = 0; c < width; c++) {
        const double a = span * c / width, b = span * (c + 1) / width;
        double sum = 0.0;
        int n = 0, nan = 0;
        for (size_t i = 0; t && i < t->n; i++) {
            if (t->s[i].end_ns <= start || t->s[i].start_ns >= end) continue;
            const double s0 = (double)(t->s[i].start_ns > start ? t->s[i].start_ns - start : 0);
            const double s1 = (double)(t->s[i].end_ns - start);
            if (s1 <= a || s0 >= b) continue;
            if (isnan(t->s[i].v[j])) { nan = 1; continue; }
            sum += t->s[i].v[j];
            n++;
        }
        char cell[8];
        if (n == 0) snprintf(cell, sizeof cell, "%c", nan ? '?' : ' ');
        else {
            double pct = sum / n;
            int level = (int)(pct / 12.5);
            if (level < 0) level = 0;
            if (level > 7) level = 7;
            if (utf8) snprintf(cell, sizeof cell, "%s", blocks[level]);
            else snprintf(cell, sizeof cell, "%c", ascii[level]);
        }
        const size_t cl = strlen(cell);
        if (o + cl + 1 > len) break;
        memcpy(buf + o, cell, cl);
        o += cl;
        buf[o] = '\0';
    }
    return used;
}

int timeline_locale_utf8(void)
{
    static const char *const vars[] = { "LC_ALL", "LC_CTYPE", "LANG" };
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (!v || !*v) continue;
        char low[128];
        size_t n = 0;
        for (; v[n] && n + 1 < sizeof low; n++) low[n] = (char)tolower((unsigned char)v[n]);
        low[n] = '\0';
        return strstr(low, "utf-8") != NULL || strstr(low, "utf8") != NULL;
    }
    return 0;
}
