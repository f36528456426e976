/* trace.c: the Chrome trace writer (layout in trace.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "check.h"
#include "counters.h"
#include "occupancy.h"
#include "timeline.h"
#include "regions.h"
#include "trace.h"

void trace_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        switch (*c) {
        case '"':  fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (*c < 0x20) fprintf(f, "\\u%04x", *c);
            else fputc(*c, f);
        }
    }
    fputc('"', f);
}

/* mkdir -p of path's parent. *first_created: the length of the shortest prefix of path that this
 * call created (its deeper components were created too), or 0 when every directory existed. */
static int make_parent_dirs(const char *path, size_t *first_created)
{
    *first_created = 0;
    char *d = strdup(path);
    if (!d) return -1;
    char *slash = strrchr(d, '/');
    if (!slash || slash == d) { free(d); return 0; }
    *slash = '\0';
    for (char *q = d + 1;; q++) {
        if (*q != '/' && *q != '\0') continue;
        const char c = *q;
        *q = '\0';
        if (mkdir(d, 0777) == 0) {
            if (!*first_created) *first_created = (size_t)(q - d);
        } else if (errno != EEXIST) {
            int e = errno;
            free(d);
            errno = e;
            return -1;
        }
        *q = c;
        if (c == '\0') break;
    }
    free(d);
    return 0;
}

/* Removes the directories make_parent_dirs created (deepest first); errors are ignored. */
static void remove_created_dirs(const char *path, size_t first_created)
{
    if (!first_created) return;
    char *d = strdup(path);
    if (!d) return;
    for (char *slash = strrchr(d, '/'); slash && (size_t)(slash - d) >= first_created;
         slash = strrchr(d, '/')) {
        *slash = '\0';
        if (rmdir(d) != 0) break;
        if ((size_t)(slash - d) == first_created) break;
    }
    free(d);
}

int trace_make_parent_dirs(const char *path)
{
    size_t created;
    return make_parent_dirs(path, &created);
}

/* What an existing path is, for the message; NULL for a regular file or a missing path. */
static const char *non_regular_kind(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode)) return NULL;
    if (S_ISLNK(st.st_mode)) return "a symbolic link";
    if (S_ISDIR(st.st_mode)) return "a directory";
    if (S_ISFIFO(st.st_mode)) return "a FIFO";
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
    if (S_ISSOCK(st.st_mode)) return "a socket";
    return "not a file";
}

/* 1 if path names /dev/null (same device and inode, symbolic links followed). */
static int is_dev_null(const char *path)
{
    struct stat a, b;
    return stat(path, &a) == 0 && stat("/dev/null", &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino && S_ISCHR(a.st_mode);
}

/* "<path>.tmp.<pid>" (malloc'd); exits 1 on host out-of-memory, as the writer's other buffers. */
static char *tmp_name(const char *path)
{
    const size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp) { fprintf(stderr, "trace: out of host memory\n"); attn_exit(1); }
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    return tmp;
}

/* 1 if path's directory (the part before its last '/'; "." when it has none) exists and is a
 * directory. */
static int parent_is_dir(const char *path, char *parent, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(parent, len, ".");
    else if (slash == path) snprintf(parent, len, "/");
    else snprintf(parent, len, "%.*s", (int)(slash - path), path);
    struct stat st;
    return stat(parent, &st) == 0 && S_ISDIR(st.st_mode);
}

int trace_check_path(const char *path)
{
    if (strcmp(path, "none") == 0 || is_dev_null(path)) return 1;
    /* The summary line prints the path as it is: no control character in it. */
    for (const unsigned char *c = (const unsigned char *)path; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            die_usage("--trace %s: the path holds a control character (0x%02x); give a path "
                      "without one, or none", path, *c);
    const char *last = strrchr(path, '/');
    last = last ? last + 1 : path;
    const char *kind = non_regular_kind(path);
    if (!kind && path[0] && path[strlen(path) - 1] == '/') kind = "a directory name";
    if (!kind && (!strcmp(last, ".") || !strcmp(last, ".."))) kind = "a directory name";
    if (kind)
        die_usage("--trace %s: not a regular file (%s); give a file path, or none", path, kind);
    size_t created = 0;
    if (make_parent_dirs(path, &created) != 0) {
        int e = errno;
        remove_created_dirs(path, created);
        die_usage("--trace %s: cannot create its directory: %s", path, strerror(e));
    }
    char *tmp = tmp_name(path);
    int e = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0) {
        e = errno;
    } else {
        if (write(fd, "{", 1) != 1) e = errno ? errno : EIO;
        if (close(fd) != 0 && !e) e = errno;
        unlink(tmp);
    }
    free(tmp);
    remove_created_dirs(path, created);
    char parent[4096];
    /* ENOENT from O_CREAT in a directory that exists: its file system takes no new files (/proc,
     * /sys), not a missing file. */
    if (e == ENOENT && parent_is_dir(path, parent, sizeof parent))
        die_usage("--trace %s: cannot create a file in %s: its file system takes no new files "
                  "(%s)", path, parent, strerror(e));
    if (e) die_usage("--trace %s: cannot write: %s", path, strerror(e));
    return 0;
}

/* ---- writer state -------------------------------------------------------------------------- */

typedef struct {
    FILE *f;
    uint64_t base;             /* baseTimeNanoseconds */
    int first;                 /* no event written yet */
    uint32_t pid;
} writer;

/* µs with 3 decimals, relative to the base time (negatives clamp to 0, as Kineto). */
static void put_ts(writer *w, uint64_t ns)
{
    const uint64_t rel = ns >= w->base ? ns - w->base : 0;
    fprintf(w->f, "%" PRIu64 ".%03" PRIu64, rel / 1000, rel % 1000);
}

static void put_dur(writer *w, uint64_t start, uint64_t end)
{
    const uint64_t d = end > start ? end - start : 0;
    fprintf(w->f, "%" PRIu64 ".%03" PRIu64, d / 1000, d % 1000);
}

static void begin_event(writer *w)
{
    fputs(w->first ? "\n  " : ",\n  ", w->f);
    w->first = 0;
}

/* {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ..., "dur": ..., "args": {
 * (the caller writes the args and closes with "}}") */
static void begin_complete(writer *w, const char *cat, const char *name, uint32_t pid, uint32_t tid,
                           uint64_t start, uint64_t end)
{
    begin_event(w);
    fprintf(w->f, "{\"ph\": \"X\", \"cat\": \"%s\", \"name\": ", cat);
    trace_json_string(w->f, name);
    fprintf(w->f, ", \"pid\": %" PRIu32 ", \"tid\": %" PRIu32 ", \"ts\": ", pid, tid);
    put_ts(w, start);
    fputs(", \"dur\": ", w->f);
    put_dur(w, start, end);
    fputs(", \"args\": {", w->f);
}

static void put_meta(writer *w, const char *what, uint32_t pid, uint32_t tid, const char *key,
                     const char *text, long long number)
{
    begin_event(w);
    fprintf(w->f, "{\"name\": \"%s\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": %" PRIu32
            ", \"tid\": %" PRIu32 ", \"args\": {\"%s\": ", what, pid, tid, key);
    if (text) trace_json_string(w->f, text);
    else fprintf(w->f, "%lld", number);
    fputs("}}", w->f);
}

static void put_flow(writer *w, const char *ph, uint32_t id, uint32_t pid, uint32_t tid, uint64_t ts)
{
    begin_event(w);
    fprintf(w->f, "{\"ph\": \"%s\", \"id\": %" PRIu32 ", \"pid\": %" PRIu32 ", \"tid\": %" PRIu32
            ", \"ts\": ", ph, id, pid, tid);
    put_ts(w, ts);
    fprintf(w->f, ", \"cat\": \"ac2g\", \"name\": \"ac2g\"%s}", ph[0] == 'f' ? ", \"bp\": \"e\"" : "");
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) { fprintf(stderr, "trace: out of host memory\n"); attn_exit(1); }
    return p;
}

/* ---- sections ------------------------------------------------------------------------------ */

static void put_device_properties(FILE *f, const report_info *info)
{
    fputs("  \"deviceProperties\": [", f);
    const struct cudaDeviceProp *p = info->prop;
    if (p) {
        fputs("\n    {\n      \"id\": ", f);
        fprintf(f, "%d, \"name\": ", info->device);
        trace_json_string(f, p->name);
        fprintf(f, ", \"totalGlobalMem\": %zu,\n"
                "      \"computeMajor\": %d, \"computeMinor\": %d,\n"
                "      \"maxThreadsPerBlock\": %d, \"maxThreadsPerMultiprocessor\": %d,\n"
                "      \"regsPerBlock\": %d, \"warpSize\": %d,\n"
                "      \"sharedMemPerBlock\": %zu, \"numSms\": %d,\n"
                "      \"regsPerMultiprocessor\": %d, \"sharedMemPerBlockOptin\": %zu, "
                "\"sharedMemPerMultiprocessor\": %zu\n    }\n  ",
                p->totalGlobalMem, p->major, p->minor, p->maxThreadsPerBlock,
                p->maxThreadsPerMultiProcessor, p->regsPerBlock, p->warpSize, p->sharedMemPerBlock,
                p->multiProcessorCount, p->regsPerMultiprocessor, p->sharedMemPerBlockOptin,
                p->sharedMemPerMultiprocessor);
    }
    fputs("],\n", f);
}

static void put_metadata_events(writer *w, const profile *p, const char *stage)
{
    char label[64];
    put_meta(w, "process_name", w->pid, 0, "name", stage, 0);
    put_meta(w, "process_labels", w->pid, 0, "labels", "CPU", 0);
    put_meta(w, "process_sort_index", w->pid, 0, "sort_index", NULL, w->pid);

    /* CPU threads: the profiled thread and any other thread that made a traced call */
    uint32_t *tids = xmalloc((p->n_apis + 1) * sizeof *tids);
    size_t nt = 0;
    tids[nt++] = p->tid;
    for (size_t i = 0; i < p->n_apis; i++) {
        size_t j = 0;
        while (j < nt && tids[j] != p->apis[i].thread_id) j++;
        if (j == nt) tids[nt++] = p->apis[i].thread_id;
    }
    for (size_t i = 0; i < nt; i++) {
        snprintf(label, sizeof label, "thread %" PRIu32 " (%s)", tids[i], stage);
        put_meta(w, "thread_name", w->pid, tids[i], "name", label, 0);
        put_meta(w, "thread_sort_index", w->pid, tids[i], "sort_index", NULL, tids[i]);
    }
    free(tids);

    /* GPU lanes: one process per device, one thread per stream */
    uint32_t (*lanes)[2] = xmalloc((p->n_acts + 1) * sizeof *lanes);
    size_t nl = 0;
    for (size_t i = 0; i < p->n_acts; i++) {
        const gpu_activity *a = &p->acts[i];
        size_t j = 0;
        while (j < nl && !(lanes[j][0] == a->device && lanes[j][1] == a->stream)) j++;
        if (j < nl) continue;
        int new_device = 1;
        for (size_t k = 0; k < nl; k++) if (lanes[k][0] == a->device) new_device = 0;
        lanes[nl][0] = a->device;
        lanes[nl][1] = a->stream;
        nl++;
        if (new_device) {
            snprintf(label, sizeof label, "GPU %" PRIu32, a->device);
            put_meta(w, "process_name", a->device, 0, "name", stage, 0);
            put_meta(w, "process_labels", a->device, 0, "labels", label, 0);
            put_meta(w, "process_sort_index", a->device, 0, "sort_index", NULL,
                     5000000LL + a->device);
        }
        snprintf(label, sizeof label, "stream %" PRIu32, a->stream);
        put_meta(w, "thread_name", a->device, a->stream, "name", label, 0);
        put_meta(w, "thread_sort_index", a->device, a->stream, "sort_index", NULL, a->stream);
    }
    free(lanes);
}

static void put_kernel_args(writer *w, const gpu_activity *a, const report_info *info)
{
    FILE *f = w->f;
    fprintf(f, "\"queued\": 0, \"device\": %" PRIu32 ", \"context\": %" PRIu32 ", \"stream\": %"
            PRIu32 ", \"correlation\": %" PRIu32 ", \"registers per thread\": %d, "
            "\"shared memory\": %d, ", a->device, a->context, a->stream, a->correlation,
            a->registers, a->static_smem + a->dynamic_smem);
    occ_result o;
    const int have = info->prop && occupancy_of_activity(info->prop, a, &o) == 0;
    if (info->prop && isfinite(o.blocks_per_sm))
        fprintf(f, "\"blocks per SM\": %f, \"warps per SM\": %f, ", o.blocks_per_sm, o.warps_per_sm);
    else
        fputs("\"blocks per SM\": \"inf\", \"warps per SM\": \"inf\", ", f);
    fprintf(f, "\"grid\": [%d, %d, %d], \"block\": [%d, %d, %d]", a->grid[0], a->grid[1],
            a->grid[2], a->block[0], a->block[1], a->block[2]);
    if (have) {
        fprintf(f, ", \"est. achieved occupancy %%\": %d, \"theoretical occupancy %%\": %.2f, "
                "\"active blocks per SM\": %d, \"occupancy limiter\": ", o.est_pct,
                o.occupancy_pct, o.active_blocks);
        trace_json_string(f, o.limiter);
        fprintf(f, ", \"shared memory config\": \"%s\", \"kineto est. achieved occupancy %%\": %d",
                a->smem_optin ? "opt-in" : "default", o.kineto_pct);
    }
    fputs(", \"launch api\": ", f);
    trace_json_string(f, a->launch_api ? a->launch_api : "");
}

/* ", \"<metric>\": value" for each measured counter of k, stall reasons included (Kineto's arg
 * names: the metrics'). */
static void put_counter_args(FILE *f, const kernel_counters *k)
{
    for (int m = 0; m < CTR_N; m++) {
        if (isnan(k->v[m])) continue;
        fprintf(f, ", \"%s\": %.17g", METRICS[m].cupti, k->v[m]);
    }
}

/* A launch HolisticTraceAnalysis counts: a cuda_runtime event whose name starts with
 * cudaLaunchKernel (its counter analysis matches the names with that prefix). */
static int runtime_launch(const char *api) { return api && strncmp(api, "cudaLaunchKernel", 16) == 0; }

/* The timeline's samples as counter events (ph "C"), one track per MP_PM metric on the GPU
 * process: at each sample's start the value over its window, args {"<metric>": value}; Perfetto
 * and chrome://tracing draw each track as a graph. */
static void put_timeline_counters(writer *w, const report_info *info)
{
    const timeline *t = info->timeline;
    if (!t || t->state != TIMELINE_ON) return;
    for (int j = 0; j < TL_N; j++) {
        const metric_row *m = &METRICS[TL_FIRST + j];
        for (size_t i = 0; i < t->n; i++) {
            if (isnan(t->s[i].v[j])) continue;
            begin_event(w);
            fputs("{\"ph\": \"C\", \"cat\": \"pm_sampling\", \"name\": ", w->f);
            char track[96];
            snprintf(track, sizeof track, "%s %%", m->label);
            trace_json_string(w->f, track);
            fprintf(w->f, ", \"pid\": %d, \"ts\": ", info->device);
            put_ts(w, t->s[i].start_ns);
            fprintf(w->f, ", \"args\": {\"%s\": %.6g}}", m->cupti, t->s[i].v[j]);
        }
    }
}

int trace_write_stream(FILE *f, const profile *p, const report_info *info, const char *trace_name)
{
    const char *stage = info->stage ? info->stage : "attn";
    writer w = { f, 0, 1, p->pid };

    uint64_t t0 = UINT64_MAX;
    for (size_t i = 0; i < p->n_ranges; i++) if (p->ranges[i].start_ns < t0) t0 = p->ranges[i].start_ns;
    for (size_t i = 0; i < p->n_apis; i++) if (p->apis[i].start_ns < t0) t0 = p->apis[i].start_ns;
    for (size_t i = 0; i < p->n_acts; i++) if (p->acts[i].start_ns < t0) t0 = p->acts[i].start_ns;
    w.base = t0 == UINT64_MAX ? 0 : t0 / 1000000000ull * 1000000000ull; /* whole seconds */

    fputs("{\n  \"schemaVersion\": 1,\n", f);
    put_device_properties(f, info);
    fprintf(f, "  \"cuda_driver_version\": %d,\n  \"cuda_runtime_version\": %d,\n"
            "  \"cupti_version\": %d,\n", p->cuda_driver_version, p->cuda_runtime_version,
            p->cupti_version);
    fputs("  \"stage\": ", f);
    trace_json_string(f, stage);
    fputs(",\n  \"idea\": ", f);
    trace_json_string(f, info->idea ? info->idea : "");
    fprintf(f, ",\n  \"shape\": {\"batch\": %d, \"heads\": %d, \"seq\": %d, \"head_dim\": %d},\n",
            info->shape.batch, info->shape.heads, info->shape.seq, info->shape.head_dim);
    /* One process, rank 0 of 1, as torch.profiler writes it for a distributed job: Kineto's
     * analysis tools (HolisticTraceAnalysis) key traces by this rank. */
    const timeline *tl = info->timeline;
    if (tl && tl->state == TIMELINE_ON)
        fprintf(f, "  \"timeline\": {\"interval_ns\": %llu, \"samples\": %zu, "
                "\"measured_clock_offset_ns\": %lld, \"applied_clock_offset_ns\": %lld},\n",
                (unsigned long long)tl->interval_ns, tl->n, (long long)tl->measured_offset_ns,
                (long long)tl->applied_offset_ns);
    fputs("  \"distributedInfo\": {\"backend\": \"none\", \"rank\": 0, \"world_size\": 1},\n", f);
    fprintf(f, "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %" PRIu64 ",\n", w.base);
    fputs("  \"traceEvents\": [", f);

    put_metadata_events(&w, p, stage);

    /* host ranges */
    for (size_t i = 0; i < p->n_ranges; i++) {
        const host_range *r = &p->ranges[i];
        char step_name[48];
        if (r->is_step == 2) snprintf(step_name, sizeof step_name, "ProfilerStep#%d", r->step + 1);
        begin_complete(&w, r->is_step ? "user_annotation" : "cpu_op",
                       r->is_step == 2 ? step_name : r->name, p->pid, p->tid, r->start_ns, r->end_ns);
        fprintf(f, "\"step\": %d}}", r->step);
    }

    /* correlation ids that reached the GPU, for the flow starts */
    uint32_t *gpu_corr = xmalloc((p->n_acts + 1) * sizeof *gpu_corr);
    for (size_t i = 0; i < p->n_acts; i++) gpu_corr[i] = p->acts[i].correlation;
    qsort(gpu_corr, p->n_acts, sizeof *gpu_corr, cmp_u32);

    /* runtime and driver calls, with their flow starts */
    for (size_t i = 0; i < p->n_apis; i++) {
        const api_call *a = &p->apis[i];
        begin_complete(&w, a->is_driver ? "cuda_driver" : "cuda_runtime", a->name, p->pid,
                       a->thread_id, a->start_ns, a->end_ns);
        fprintf(f, "\"cbid\": %" PRIu32 ", \"correlation\": %" PRIu32 ", \"step\": %d}}", a->cbid,
                a->correlation, a->step);
        if (bsearch(&a->correlation, gpu_corr, p->n_acts, sizeof *gpu_corr, cmp_u32))
            put_flow(&w, "s", a->correlation, p->pid, a->thread_id, a->start_ns);
    }
    free(gpu_corr);

    /* GPU activities, with their flow ends */
    for (size_t i = 0; i < p->n_acts; i++) {
        const gpu_activity *a = &p->acts[i];
        const char *cat = a->kind == ACT_KERNEL ? "kernel" : a->kind == ACT_MEMCPY ? "gpu_memcpy"
                        : "gpu_memset";
        begin_complete(&w, cat, a->name, a->device, a->stream, a->start_ns, a->end_ns);
        if (a->kind == ACT_KERNEL) {
            put_kernel_args(&w, a, info);
            const kernel_counters *k = counters_for(p, info->counters, a);
            if (k) put_counter_args(f, k);
        } else {
            const uint64_t d = a->end_ns > a->start_ns ? a->end_ns - a->start_ns : 0;
            fprintf(f, "\"device\": %" PRIu32 ", \"context\": %" PRIu32 ", \"stream\": %" PRIu32
                    ", \"correlation\": %" PRIu32 ", \"bytes\": %" PRIu64
                    ", \"memory bandwidth (GB/s)\": ", a->device, a->context, a->stream,
                    a->correlation, a->bytes);
            if (d) fprintf(f, "%.6f", (double)a->bytes / (double)d);
            else fputs("\"N/A\"", f);
            fputs(", \"launch api\": ", f);
            trace_json_string(f, a->launch_api ? a->launch_api : "");
        }
        fprintf(f, ", \"step\": %d}}", a->step);
        if (a->launch_api) put_flow(&w, "f", a->correlation, a->device, a->stream, a->start_ns);
    }

    /* The counters as Kineto's range profiler wrote them (libkineto CuptiRangeProfiler.cpp):
     * one "cuda_profiler_range" event per kernel, named after it, args = its correlation id and
     * one number per metric. HolisticTraceAnalysis pairs these events 1:1, in time order, with
     * the trace's cuda_runtime cudaLaunchKernel* calls, so (when the counter pass measured) every
     * kernel so launched gets one,
     * those of the set-up and of the timeline pass included (args: the correlation id alone when
     * the counter pass did not measure it); a kernel launched through the driver
     * (cuLaunchKernelEx, cuDNN's) gets none, as HTA does not count its launch. Times are the
     * kernel's traced ones (the counter pass's own are not comparable). */
    uint32_t *launch_corr = xmalloc((p->n_apis + 1) * sizeof *launch_corr);
    size_t n_launch = 0;
    for (size_t i = 0; i < p->n_apis; i++)
        if (!p->apis[i].is_driver && runtime_launch(p->apis[i].name))
            launch_corr[n_launch++] = p->apis[i].correlation;
    qsort(launch_corr, n_launch, sizeof *launch_corr, cmp_u32);
    const int counters_on = info->counters && info->counters->state == COUNTERS_ON;
    for (size_t i = 0; counters_on && i < p->n_acts; i++) {
        const gpu_activity *a = &p->acts[i];
        if (a->kind != ACT_KERNEL ||
            !bsearch(&a->correlation, launch_corr, n_launch, sizeof *launch_corr, cmp_u32))
            continue;
        const kernel_counters *k = counters_for(p, info->counters, a);
        begin_complete(&w, "cuda_profiler_range", a->name, a->device, a->stream, a->start_ns,
                       a->end_ns);
        /* device and stream as on the kernel: HTA then places the event on the GPU side of its
         * correlation join (without a stream it would be a second CPU event of the launch's
         * correlation id and duplicate the kernel in HTA's frame) */
        fprintf(f, "\"device\": %" PRIu32 ", \"stream\": %" PRIu32 ", \"correlation\": %" PRIu32,
                a->device, a->stream, a->correlation);
        if (k) put_counter_args(f, k);
        fprintf(f, ", \"step\": %d}}", a->step);
    }
    free(launch_corr);

    /* attn_fwd on the GPU lane: per active step and stream, first start to last end, widened by
     * 1 ns each side so that it encloses its activities (as Kineto) */
    for (size_t i = 0; i < p->n_acts; i++) {
        const gpu_activity *a = &p->acts[i];
        if (a->step < 1 && a->step != PROF_STEP_TIMELINE) continue;
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            if (p->acts[j].step == a->step && p->acts[j].device == a->device &&
                p->acts[j].stream == a->stream) first = 0;
        if (!first) continue;
        uint64_t s = a->start_ns, e = a->end_ns;
        for (size_t j = i; j < p->n_acts; j++) {
            const gpu_activity *b = &p->acts[j];
            if (b->step != a->step || b->device != a->device || b->stream != a->stream) continue;
            if (b->start_ns < s) s = b->start_ns;
            if (b->end_ns > e) e = b->end_ns;
        }
        begin_complete(&w, "gpu_user_annotation",
                       a->step == PROF_STEP_TIMELINE ? "timeline pass" : "attn_fwd", a->device,
                       a->stream, s > 0 ? s - 1 : 0, e + 1);
        fprintf(f, "\"step\": %d}}", a->step);
    }
    put_timeline_counters(&w, info);

    /* the regions pass: its kernel and one track per (SM, slot, warp or warpgroup) */
    if (info->regions) regions_trace_events(f, info->regions, w.base, info->device, &w.first);

    fputs("\n  ],\n  \"traceName\": ", f);
    trace_json_string(f, trace_name ? trace_name : "");
    fputs("\n}\n", f);
    return ferror(f) ? -1 : 0;
}

void trace_write(const char *path, const profile *p, const report_info *info)
{
    if (is_dev_null(path)) return; /* as none: /dev/null itself is never replaced */
    const char *kind = non_regular_kind(path);
    if (kind)
        die_usage("--trace %s: not a regular file (%s); give a file path, or none", path, kind);
    if (trace_make_parent_dirs(path) != 0)
        die_usage("--trace %s: cannot create its directory: %s", path, strerror(errno));
    char *tmp = tmp_name(path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        int e = errno;
        free(tmp);
        die_usage("--trace %s: cannot write: %s", path, strerror(e));
    }
    int rc = trace_write_stream(f, p, info, path);
    int e = rc ? EIO : 0;
    if (fclose(f) != 0 && rc == 0) { rc = -1; e = errno; }
    /* A FIFO, link or device created at path while the trace was written is not replaced. */
    if (rc == 0 && (kind = non_regular_kind(path)) != NULL) { rc = -1; e = EEXIST; }
    if (rc == 0 && rename(tmp, path) != 0) { rc = -1; e = errno; }
    if (rc != 0) {
        unlink(tmp);
        free(tmp);
        if (kind)
            die_usage("--trace %s: not a regular file (%s); give a file path, or none", path, kind);
        die_usage("--trace %s: cannot write: %s", path, strerror(e));
    }
    free(tmp);
}
