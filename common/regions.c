/* regions.c: the regions pass's records -> regions, summary, trace tracks. See regions.h. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "regions.h"
#include "trace.h"

static const char *const REGION_NAMES[] = {
    "load", "S=QK^T", "softmax", "O+=PV", "epilogue", "row stats",
    "TMA Q", "TMA K", "TMA V", "wait free", "wait Q", "wait K", "wait V", "wait turn", "hand-over",
};
_Static_assert(sizeof REGION_NAMES / sizeof REGION_NAMES[0] == ATTN_REGION_COUNT,
               "one name per region id");

const char *attn_region_name(int region)
{
    return region >= 0 && region < ATTN_REGION_COUNT ? REGION_NAMES[region] : "?";
}

int attn_region_is_wait(int region)
{
    return region == ATTN_REGION_LOAD || region == ATTN_REGION_WAIT_FREE ||
           region == ATTN_REGION_WAIT_Q || region == ATTN_REGION_WAIT_K ||
           region == ATTN_REGION_WAIT_V || region == ATTN_REGION_WAIT_TURN;
}

/* ---- decoding ------------------------------------------------------------------------------ */

enum { MAX_DEPTH = 16 };

typedef struct { size_t idx; uint64_t key; } rec_ref;   /* key: block << 8 | unit */

static int cmp_ref(const void *a, const void *b)
{
    const rec_ref *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);        /* buffer order: stable */
}

static int cmp_event(const void *a, const void *b)
{
    const region_event *x = a, *y = b;
    if (x->sm != y->sm) return x->sm < y->sm ? -1 : 1;
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    if (x->unit != y->unit) return x->unit < y->unit ? -1 : 1;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return x->depth - y->depth;
}

/* One block's lifetime on its SM, for the slots. */
typedef struct { uint32_t block; uint16_t sm; uint64_t t0, t1; int slot; } block_span;

static int cmp_span(const void *a, const void *b)
{
    const block_span *x = a, *y = b;
    if (x->sm != y->sm) return x->sm < y->sm ? -1 : 1;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    return (x->block > y->block) - (x->block < y->block);
}

static int cmp_span_block(const void *a, const void *b)
{
    const block_span *x = a, *y = b;
    return (x->block > y->block) - (x->block < y->block);
}

/* First fit per SM: a block takes the lowest slot whose previous block ended before it began. */
static int assign_slots(block_span *b, size_t n)
{
    qsort(b, n, sizeof *b, cmp_span);
    uint64_t *slot_end = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || b[i].sm != b[i - 1].sm) cap = 0;     /* a new SM: no slot in use */
        int s = 0;
        while ((size_t)s < cap && slot_end[s] > b[i].t0) s++;
        if ((size_t)s == cap) {
            uint64_t *grown = realloc(slot_end, (cap + 1) * sizeof *slot_end);
            if (!grown) { free(slot_end); return -1; }
            slot_end = grown;
            cap++;
        }
        slot_end[s] = b[i].t1;
        b[i].slot = s;
    }
    free(slot_end);
    qsort(b, n, sizeof *b, cmp_span_block);
    return 0;
}

int regions_decode(const attn_region_rec *rec, size_t n, const attn_regions_head *head,
                   uint32_t capacity, regions_result *out)
{
    memset(out, 0, sizeof *out);
    out->capacity = capacity;
    out->claimed = head ? head->claimed : 0;
    out->full = out->claimed > capacity;
    out->t_first = head ? head->t_first : 0;
    out->t_last = head ? head->t_last : 0;
    rec_ref *refs = malloc((n + 1) * sizeof *refs);
    /* every begin record may become an event (open ones stay until their stream ends) */
    region_event *ev = malloc((n + 1) * sizeof *ev);
    block_span *spans = malloc((n + 1) * sizeof *spans);
    if (!refs || !ev || !spans) { free(refs); free(ev); free(spans); return -1; }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (rec[i].t_ns == 0) continue;                    /* an empty slot */
        refs[m].idx = i;
        refs[m].key = (uint64_t)rec[i].block << 8 | rec[i].unit;
        m++;
    }
    out->n_records = m;
    qsort(refs, m, sizeof *refs, cmp_ref);

    size_t n_ev = 0, n_spans = 0;
    for (size_t i = 0; i < m;) {                           /* one (block, unit) stream */
        size_t j = i;
        while (j < m && refs[j].key == refs[i].key) j++;
        const attn_region_rec *r0 = &rec[refs[i].idx];
        if (r0->unit + 1 > out->n_units) out->n_units = r0->unit + 1;
        out->n_streams++;
        size_t open[MAX_DEPTH];                            /* indices into ev */
        int depth = 0;
        uint64_t prev = 0, first_t = 0;
        for (size_t k = i; k < j; k++) {
            const attn_region_rec *r = &rec[refs[k].idx];
            uint64_t t = r->t_ns;
            if (k > i && t < prev) { out->backwards++; t = prev; }
            if (k == i) first_t = t;
            prev = t;
            const int region = r->tag & ~ATTN_REGION_END & 0xFF;
            if (!(r->tag & ATTN_REGION_END)) {
                if (depth == MAX_DEPTH) { out->missing_end++; continue; }   /* too deep: dropped */
                region_event *e = &ev[n_ev];
                e->start_ns = t;
                e->end_ns = 0;
                e->block = r->block;
                e->sm = r->sm;
                e->unit = r->unit;
                e->region = (uint8_t)region;
                e->depth = depth;
                e->slot = 0;
                open[depth++] = n_ev++;
                continue;
            }
            int d = depth - 1;
            while (d >= 0 && ev[open[d]].region != region) d--;
            if (d < 0) { out->stray_end++; continue; }
            ev[open[d]].end_ns = t;
            /* regions opened inside it and never closed: dropped */
            for (int q = depth - 1; q > d; q--) { ev[open[q]].end_ns = 0; out->missing_end++; }
            depth = d;
        }
        out->missing_end += (size_t)depth;
        for (int q = 0; q < depth; q++) ev[open[q]].end_ns = 0;
        /* drop the unclosed ones (end 0) of this stream */
        size_t w = n_ev;
        while (w > 0 && ev[w - 1].block == r0->block && ev[w - 1].unit == r0->unit) w--;
        size_t keep = w;
        for (size_t q = w; q < n_ev; q++) if (ev[q].end_ns) ev[keep++] = ev[q];
        n_ev = keep;
        /* the block's span: extend it, or start it */
        size_t b = n_spans;
        if (n_spans && spans[n_spans - 1].block == r0->block) b = n_spans - 1;
        if (b == n_spans) {
            spans[b].block = r0->block;
            spans[b].sm = r0->sm;
            spans[b].t0 = first_t;
            spans[b].t1 = prev;
            n_spans++;
        } else {
            if (first_t < spans[b].t0) spans[b].t0 = first_t;
            if (prev > spans[b].t1) spans[b].t1 = prev;
        }
        i = j;
    }
    free(refs);
    if (assign_slots(spans, n_spans) != 0) { free(ev); free(spans); return -1; }
    for (size_t q = 0; q < n_ev; q++) {
        block_span key = { ev[q].block, 0, 0, 0, 0 };
        const block_span *s = bsearch(&key, spans, n_spans, sizeof *spans, cmp_span_block);
        ev[q].slot = s ? s->slot : 0;
    }
    free(spans);
    qsort(ev, n_ev, sizeof *ev, cmp_event);
    out->events = ev;
    out->n_events = n_ev;
    return 0;
}

void regions_free(regions_result *r)
{
    free(r->events);
    r->events = NULL;
    r->n_events = 0;
}

/* ---- the summary --------------------------------------------------------------------------- */

enum { MAX_UNITS = 16 };

static int cmp_u32(const void *a, const void *b)
{
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The role of unit index u ("consumer 0"), NULL if the build names none. */
static const char *unit_role(const regions_result *r, int u)
{
    if (!r->roles) return NULL;
    for (int i = 0; r->roles[i]; i++)
        if (i == u) return r->roles[i];
    return NULL;
}

void regions_print_summary(FILE *f, const regions_result *r, const char *stage)
{
    const char *unit = r->unit_name ? r->unit_name : "unit";
    const int units = r->n_units < MAX_UNITS ? r->n_units : MAX_UNITS;
    double sum[ATTN_REGION_COUNT][MAX_UNITS] = {{0}};
    size_t cnt[ATTN_REGION_COUNT][MAX_UNITS] = {{0}};
    double waited[MAX_UNITS] = {0}, life[MAX_UNITS] = {0};
    size_t blocks = 0;
    /* events are sorted by (sm, slot, unit, start, depth): a stream's events are contiguous per
     * slot, each region after the ones it is nested in */
    for (size_t i = 0; i < r->n_events;) {
        const region_event *e0 = &r->events[i];
        size_t j = i;
        uint64_t t0 = UINT64_MAX, t1 = 0;
        int wait_at[MAX_DEPTH] = {0};   /* the latest region at each depth is a wait */
        while (j < r->n_events && r->events[j].sm == e0->sm && r->events[j].slot == e0->slot &&
               r->events[j].unit == e0->unit) {
            const region_event *e = &r->events[j];
            const double d = (double)(e->end_ns - e->start_ns) * 1e-3;
            const int depth = e->depth < MAX_DEPTH ? e->depth : MAX_DEPTH - 1;
            int in_wait = 0;                             /* nested in a wait: counted there */
            for (int q = 0; q < depth; q++) in_wait |= wait_at[q];
            wait_at[depth] = attn_region_is_wait(e->region);
            if (e->unit < MAX_UNITS && e->region < ATTN_REGION_COUNT) {
                sum[e->region][e->unit] += d;
                cnt[e->region][e->unit]++;
                if (wait_at[depth] && !in_wait) waited[e->unit] += d;
            }
            /* a track holds its slot's blocks one after another: lifetime per block */
            if (j > i && e->block != r->events[j - 1].block) {
                if (e0->unit < MAX_UNITS) life[e0->unit] += (double)(t1 - t0) * 1e-3;
                t0 = UINT64_MAX; t1 = 0;
            }
            if (e->start_ns < t0) t0 = e->start_ns;
            if (e->end_ns > t1) t1 = e->end_ns;
            j++;
        }
        if (e0->unit < MAX_UNITS && t1 > t0) life[e0->unit] += (double)(t1 - t0) * 1e-3;
        i = j;
    }
    /* blocks: distinct block ids */
    uint32_t *ids = malloc((r->n_events + 1) * sizeof *ids);
    if (ids) {
        for (size_t i = 0; i < r->n_events; i++) ids[i] = r->events[i].block;
        qsort(ids, r->n_events, sizeof *ids, cmp_u32);
        for (size_t i = 0; i < r->n_events; i++) blocks += i == 0 || ids[i] != ids[i - 1];
        free(ids);
    }
    fprintf(f, "regions: %s, SMs 0-%u recorded: %zu blocks, %zu %ss, %zu regions; kernel %.3f us",
            stage, r->sm_limit ? r->sm_limit - 1 : 0, blocks, r->n_streams, unit, r->n_events,
            r->t_last > r->t_first ? (double)(r->t_last - r->t_first) * 1e-3 : 0.0);
    if (r->full)
        fprintf(f, "; buffer full (%" PRIu64 " of %" PRIu64 " slots claimed): later regions dropped",
                r->claimed, r->capacity);
    if (r->missing_end) fprintf(f, "; %zu without end", r->missing_end);
    if (r->stray_end) fprintf(f, "; %zu stray ends", r->stray_end);
    if (r->backwards) fprintf(f, "; %zu out of order", r->backwards);
    fputc('\n', f);
    fprintf(f, "  %-12s", "mean us (n)");
    for (int u = 0; u < units; u++) {
        char h[32];
        const char *role = unit_role(r, u);
        if (role) snprintf(h, sizeof h, "%s", role);
        else snprintf(h, sizeof h, "%s %d", unit, u);
        fprintf(f, " %16s", h);
    }
    fputc('\n', f);
    for (int g = 0; g < ATTN_REGION_COUNT; g++) {
        int any = 0;
        for (int u = 0; u < units; u++) any |= cnt[g][u] != 0;
        if (!any) continue;
        fprintf(f, "  %-12s", attn_region_name(g));
        for (int u = 0; u < units; u++) {
            char c[40];
            if (cnt[g][u]) snprintf(c, sizeof c, "%.3f (%zu)", sum[g][u] / (double)cnt[g][u], cnt[g][u]);
            else snprintf(c, sizeof c, "-");
            fprintf(f, " %16s", c);
        }
        fputc('\n', f);
    }
    fprintf(f, "  %-12s", "waited");
    for (int u = 0; u < units; u++) {
        char c[32];
        if (life[u] > 0) snprintf(c, sizeof c, "%.1f%%", 100.0 * waited[u] / life[u]);
        else snprintf(c, sizeof c, "-");
        fprintf(f, " %16s", c);
    }
    fputc('\n', f);
}

/* ---- trace tracks -------------------------------------------------------------------------- */

static void ev_sep(FILE *f, int *first)
{
    fputs(*first ? "\n  " : ",\n  ", f);
    *first = 0;
}

static void put_us(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

void regions_trace_events(FILE *f, const regions_result *r, uint64_t base_ns, int device, int *first)
{
    const uint32_t pid = 1000u + (uint32_t)device;   /* its own process, next to the GPU lane */
    const char *unit = r->unit_name ? r->unit_name : "unit";
    char name[96];
    snprintf(name, sizeof name, "GPU %d regions (SMs 0-%u)", device, r->sm_limit ? r->sm_limit - 1 : 0);
    ev_sep(f, first);
    fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": %" PRIu32
            ", \"tid\": 0, \"args\": {\"name\": ", pid);
    trace_json_string(f, name);
    fputs("}}", f);
    ev_sep(f, first);
    fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": %" PRIu32
            ", \"tid\": 0, \"args\": {\"name\": \"regions pass kernel\"}}", pid);
    const uint64_t k0 = r->t_first >= base_ns ? r->t_first - base_ns : 0;
    const uint64_t k1 = r->t_last >= base_ns ? r->t_last - base_ns : 0;
    ev_sep(f, first);
    fprintf(f, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": ");
    trace_json_string(f, r->kernel ? r->kernel : "regions pass");
    fprintf(f, ", \"pid\": %" PRIu32 ", \"tid\": 0, \"ts\": ", pid);
    put_us(f, k0);
    fputs(", \"dur\": ", f);
    put_us(f, k1 > k0 ? k1 - k0 : 0);
    fprintf(f, ", \"args\": {\"regions pass\": 1, \"sm_limit\": %" PRIu32 "}}", r->sm_limit);

    uint32_t tid = 0;
    for (size_t i = 0; i < r->n_events; i++) {
        const region_event *e = &r->events[i];
        const int new_track = i == 0 || e->sm != r->events[i - 1].sm ||
                              e->slot != r->events[i - 1].slot || e->unit != r->events[i - 1].unit;
        if (new_track) {
            tid++;
            const char *role = unit_role(r, e->unit);
            if (role)
                snprintf(name, sizeof name, "SM %u slot %d %s %u (%s)", (unsigned)e->sm, e->slot,
                         unit, (unsigned)e->unit, role);
            else
                snprintf(name, sizeof name, "SM %u slot %d %s %u", (unsigned)e->sm, e->slot, unit,
                         (unsigned)e->unit);
            ev_sep(f, first);
            fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": %" PRIu32
                    ", \"tid\": %" PRIu32 ", \"args\": {\"name\": ", pid, tid);
            trace_json_string(f, name);
            fputs("}}", f);
            ev_sep(f, first);
            fprintf(f, "{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": %"
                    PRIu32 ", \"tid\": %" PRIu32 ", \"args\": {\"sort_index\": %" PRIu32 "}}",
                    pid, tid, tid);
        }
        const uint64_t s = e->start_ns >= base_ns ? e->start_ns - base_ns : 0;
        const uint64_t d = e->end_ns - e->start_ns;
        ev_sep(f, first);
        fputs("{\"ph\": \"X\", \"cat\": \"gpu_region\", \"name\": ", f);
        trace_json_string(f, attn_region_name(e->region));
        fprintf(f, ", \"pid\": %" PRIu32 ", \"tid\": %" PRIu32 ", \"ts\": ", pid, tid);
        put_us(f, s);
        fputs(", \"dur\": ", f);
        put_us(f, d);
        fprintf(f, ", \"args\": {\"block\": %" PRIu32 ", \"sm\": %u, \"%s\": %u}}", e->block,
                (unsigned)e->sm, unit, (unsigned)e->unit);
    }
}
