/* table.h: the profiler table on stdout, in the layout of torch.profiler's
 * key_averages().table(sort_by="cuda_time_total") (torch/autograd/profiler_util.py _build_table),
 * so ours and PyTorch's can be read side by side:
 *
 *   <header: stage and idea; device, SMs, shape, profiled steps>
 *   ---------  ------------  ...                      (dashed separator, 2 spaces after each)
 *        Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg     Self CUDA
 *                Self CUDA %    CUDA total  CUDA time avg    # of Calls   (one line in reality)
 *   ---------  ------------  ...
 *   rows, sorted by CUDA total (descending, ties in order of first appearance)
 *   ---------  ------------  ...
 *   Self CPU time total: 1.200ms
 *   Self CUDA time total: 272.625us
 *   <kernel details: one line per distinct kernel launch configuration>
 *
 * Rows, aggregated by name over the active steps (set-up records are in the trace only):
 *   - "attn_fwd" (GPU): Self CUDA = CUDA total = the span of its step's GPU activities per stream,
 *     first start to last end (PyTorch's gpu_user_annotation row; not in Self CUDA time total,
 *     so its Self CUDA % can pass 100%);
 *   - host ranges ("attn_fwd" and the stage's ops): CPU total = duration, Self CPU = duration
 *     minus nested ranges and traced API calls; Self CUDA = GPU time launched directly inside,
 *     CUDA total = GPU time launched inside at any depth;
 *   - runtime/driver calls: Self CPU = CPU total = duration;
 *   - kernels, memcpys, memsets: Self CUDA = CUDA total = duration.
 * Percentages are of "Self CPU time total" (sum of Self CPU) and "Self CUDA time total" (sum of
 * the GPU activities' time).
 */
#ifndef ATTN_TABLE_H
#define ATTN_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include "profiler.h"
#include "report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Names of this many characters or more are cut to their first TABLE_NAME_CUT + "..." */
enum { TABLE_NAME_CUT = 52, TABLE_NAME_WIDTH_MAX = 55, TABLE_COL_WIDTH = 12 };

/* Header, table and kernel details (everything above), to out. */
void table_print(FILE *out, const profile *p, const report_info *info);

/* The parts of table_print. */
void table_print_header(FILE *out, const profile *p, const report_info *info);
void table_print_averages(FILE *out, const profile *p);
void table_print_kernel_details(FILE *out, const profile *p, const report_info *info);

/* torch's _format_time: us >= 1e6 -> "%.3fs" of seconds, >= 1000 -> "%.3fms", else "%.3fus". */
void table_format_time(double us, char *buf, size_t len);
/* torch's _format_time_share: "%.2f%%" of part * 100 / total, "NaN" when total is 0. */
void table_format_share(double part, double total, char *buf, size_t len);
/* torch's name cut: len >= 52 -> first 52 characters + "...". buf holds at least 56 bytes. */
void table_truncate_name(const char *name, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
