/* trace.h: the profile as a Chrome trace (JSON), in Kineto's layout (torch.profiler's
 * export_chrome_trace), so ours and PyTorch's open side by side in ui.perfetto.dev or
 * chrome://tracing (Kineto's libkineto/src/output_json.cpp; PyTorch's own traces of the six
 * variants are in docs/pytorch-h200/):
 *
 *   {"schemaVersion": 1, "deviceProperties": [{...as Kineto...}], "cuda_driver_version": ...,
 *    "cuda_runtime_version": ..., "cupti_version": ..., "stage": ..., "idea": ..., "shape": [...],
 *    "distributedInfo": {"backend": "none", "rank": 0, "world_size": 1},
 *    "displayTimeUnit": "ms", "baseTimeNanoseconds": N, "traceEvents": [...], "traceName": PATH}
 *
 * Steps as torch.profiler writes them: each active step is a user_annotation "ProfilerStep#N"
 * (N = step + 1, torch's numbering after the schedule's wait and warm-up steps) around its
 * attn_fwd, so HolisticTraceAnalysis finds the iterations. Counters (counters.h, when the
 * counter pass measured them): each kernel's metrics as extra kernel args under their metric
 * names, and one "cuda_profiler_range" complete event per runtime-launched kernel (name = the
 * kernel, args = correlation + the metrics, the kernel's traced ts/dur), as Kineto's range
 * profiler wrote them; with counters, every kernel whose cudaLaunchKernel* event is in the trace
 * (set-up and timeline pass included) gets one, as HolisticTraceAnalysis pairs them 1:1.
 * Timeline (timeline.h, when the pass ran): a "timeline" field {interval_ns, samples,
 * measured_clock_offset_ns, applied_clock_offset_ns}; the pass's kernels (step -2) inside a
 * "timeline pass" range (user_annotation on the CPU lane, gpu_user_annotation on the GPU lane);
 * one counter track (ph "C", cat pm_sampling, pid = device, name "<label> %", args
 * {"<metric>": value}) per MP_PM metric, one event per sample at its window's start.
 *
 * Events: complete events (ph "X", ts/dur in µs with 3 decimals, ts relative to
 * baseTimeNanoseconds) in categories user_annotation (attn_fwd), cpu_op (the stage's host ops and
 * set-up ranges such as cudnn_build_plan), cuda_runtime, cuda_driver (pid = process, tid = thread),
 * kernel, gpu_memcpy, gpu_memset, gpu_user_annotation (attn_fwd on the GPU lane, the span of its
 * step's activities on that stream; pid = device, tid = stream); flow events "ac2g" from each
 * launching call (ph "s") to its GPU activity (ph "f", bp "e"), id = correlation; process and
 * thread name metadata (ph "M"). Kernel args: Kineto's (queued, device, context, stream,
 * correlation, registers per thread, shared memory, blocks per SM, warps per SM, grid, block,
 * est. achieved occupancy % — computed with the kernel's own shared-memory config) plus ours
 * (theoretical occupancy %, active blocks per SM, occupancy limiter, shared memory config,
 * kineto est. achieved occupancy %, launch api).
 * Records of the set-up phase (step 0) are included; inactive steps are not in the profile.
 * With a regions pass (report_info.regions), its kernel and its region tracks follow the other
 * events (regions_trace_events, regions.h).
 */
#ifndef ATTN_TRACE_H
#define ATTN_TRACE_H

#include <stdio.h>

#include "profiler.h"
#include "report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Validates --trace PATH before any GPU work (run.c calls it right after the flags), so that a
 * bad path fails with nothing done:
 *   - "none", or a path naming /dev/null (the same device and inode, even through a symbolic
 *     link): returns 1, meaning "write no trace";
 *   - a path holding a control character (a newline, ...: the summary line prints the path
 *     raw): exit 2;
 *   - an existing path that is not a regular file (a directory, a symbolic link, a FIFO, a device,
 *     a socket), or a directory name (ending in '/', or a last component "." or ".."): exit 2,
 *     "--trace PATH: not a regular file (...)"; the path is left alone;
 *   - else the parent directories are created and a temporary file "<path>.tmp.<pid>" is created,
 *     written and removed; failure: exit 2 with one line (a directory whose file system
 *     takes no new files, such as /proc, is named as such). Either way the directories this call
 *     created are removed again (trace_write creates them for real), so nothing is left behind.
 * Returns 0 when the trace can be written. */
int trace_check_path(const char *path);

/* Writes the trace to path: parent directories are created as needed, the JSON goes to
 * "<path>.tmp.<pid>" and is renamed to path once complete. A path naming /dev/null writes
 * nothing; any other existing path that is not a regular file is refused (exit 2, as
 * trace_check_path), so no device node, FIFO or symbolic link is ever replaced. On failure the
 * temporary file is removed and the program exits 2 with one line on stderr (die_usage). */
void trace_write(const char *path, const profile *p, const report_info *info);

/* The JSON document to f (trace_name: the "traceName" value). Returns 0, or -1 on a write error. */
int trace_write_stream(FILE *f, const profile *p, const report_info *info, const char *trace_name);

/* s as a JSON string literal with its quotes: ", \ and control characters escaped (\n, \t, ...,
 * else \u00XX); other bytes (UTF-8) are copied. */
void trace_json_string(FILE *f, const char *s);

/* mkdir -p of path's parent directory. Returns 0, or -1 with errno set. */
int trace_make_parent_dirs(const char *path);

#ifdef __cplusplus
}
#endif
#endif
