#!/usr/bin/env bash
# regions_clock.sh: what the region markers' clock (%globaltimer) is on this GPU, and one
# --regions run of 05_flash. Run from the repository root on the GPU machine (needs nvcc and a
# built 05_flash: make 05_flash). Prints, one per line:
#   globaltimer_step_ns min=.. median=..   the smallest and the median nonzero step between two
#                                          back-to-back reads in one thread (the clock's update
#                                          granularity: a region shorter than it reads 0 or one step)
#   globaltimer_minus_realtime_ns=..       %globaltimer at a kernel's start minus the host's
#                                          CLOCK_REALTIME midway through the launch-to-sync window
#                                          (CUPTI's timestamps are CLOCK_REALTIME: how far the
#                                          regions tracks sit from the traced kernels' clock)
#   then 05_flash --regions's summary, its regions line and the trace's size in bytes.
set -u
cd "$(dirname "$0")/../.." || exit 1
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/clock.cu" <<'CU'
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#define N 4096
__global__ void reads(unsigned long long *t)
{
    for (int i = 0; i < N; i++) {
        unsigned long long g;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g) :: "memory");
        t[i] = g;
    }
}
static int cmp(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return (x > y) - (x < y);
}
int main(void)
{
    unsigned long long *d, h[N], steps[N];
    if (cudaMalloc(&d, sizeof h) != cudaSuccess) { printf("cudaMalloc failed\n"); return 1; }
    reads<<<1, 1>>>(d);                       /* warm-up */
    cudaDeviceSynchronize();
    struct timespec a, b;
    clock_gettime(CLOCK_REALTIME, &a);
    reads<<<1, 1>>>(d);
    cudaDeviceSynchronize();
    clock_gettime(CLOCK_REALTIME, &b);
    if (cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) { printf("copy failed\n"); return 1; }
    int n = 0;
    for (int i = 1; i < N; i++) if (h[i] != h[i - 1]) steps[n++] = h[i] - h[i - 1];
    qsort(steps, n, sizeof *steps, cmp);
    printf("globaltimer_step_ns min=%llu median=%llu (%d changes in %d reads)\n",
           n ? steps[0] : 0ull, n ? steps[n / 2] : 0ull, n, N);
    const double host_mid = 0.5 * ((a.tv_sec * 1e9 + a.tv_nsec) + (b.tv_sec * 1e9 + b.tv_nsec));
    printf("globaltimer_minus_realtime_ns=%.0f (launch-to-sync window %.0f ns)\n",
           (double)h[0] - host_mid, (b.tv_sec * 1e9 + b.tv_nsec) - (a.tv_sec * 1e9 + a.tv_nsec));
    return 0;
}
CU
if "$NVCC" -O2 -o "$tmp/clock" "$tmp/clock.cu" 2> "$tmp/nvcc.log"; then
    timeout 20 "$tmp/clock"
else
    echo "probe: nvcc failed: $(head -n 1 "$tmp/nvcc.log")"
fi
if [ -x 05_flash/run ]; then
    timeout 40 ./05_flash/run --regions --trace "$tmp/r.json" --no-counters 2>&1 | sed -n '/^regions: /,$p'
    [ -f "$tmp/r.json" ] && echo "trace_bytes=$(stat -c %s "$tmp/r.json")"
else
    echo "probe: 05_flash/run not built (make 05_flash)"
fi
