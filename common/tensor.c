/* tensor.c: see tensor.h. */
#include "tensor.h"
#include "threads.h"

/* splitmix64 (Steele, Lea, Flood 2014): a full-period 64-bit generator. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* One thread's share of tensor_fill_normal: elements [first, end). */
typedef struct {
    bf16_bits *x;
    size_t first, end;
    uint64_t state0; /* the generator's state before element 0 */
} fill_job;

static void *fill_normal(void *arg)
{
    const fill_job *j = arg;
    /* Element i takes draws 3i+1 .. 3i+3, and splitmix64's state after m draws is
     * state0 + m·gamma: the share starts where one generator running from element 0 would be. */
    uint64_t state = j->state0 + 3 * (uint64_t)j->first * 0x9E3779B97F4A7C15ull;
    const uint64_t f02 = 0x0000FFFF0000FFFFull; /* a draw's 16-bit fields 0 and 2 */
    for (size_t i = j->first; i < j->end; i++) {
        /* 12 uniforms of 16 bits each from 3 draws: u_k = (k + 1/2) / 2^16. Their sum: fields 0
         * and 2 of each draw, then 1 and 3, added in two 32-bit lanes at once (each lane at most
         * 6·0xFFFF, no carry between them), then the two lanes. */
        const uint64_t r0 = splitmix64(&state), r1 = splitmix64(&state), r2 = splitmix64(&state);
        const uint64_t lanes = (r0 & f02) + (r1 & f02) + (r2 & f02) +
                               ((r0 >> 16) & f02) + ((r1 >> 16) & f02) + ((r2 >> 16) & f02);
        const uint32_t sum = (uint32_t)lanes + (uint32_t)(lanes >> 32);
        double normal = ((double)sum + 6.0) * 0x1.0p-16 - 6.0; /* exact in double */
        j->x[i] = bf16_from_float((float)normal);
    }
    return NULL;
}

/* Fewer elements than this per thread: fewer threads. */
enum { FILL_PER_THREAD = 1 << 16 };

void tensor_fill_normal_part(bf16_bits *x, size_t first, size_t n, uint64_t seed, uint64_t stream)
{
    const uint64_t state0 = seed * 0xD1B54A32D192ED03ull + stream * 0x8CB92BA72F3D8DD7ull;
    const size_t n_threads = threads_for(n, FILL_PER_THREAD);
    fill_job jobs[THREADS_MAX];
    for (size_t t = 0; t < n_threads; t++) /* contiguous shares of n / n_threads, rounded */
        jobs[t] = (fill_job){x, first + n / n_threads * t + (t < n % n_threads ? t : n % n_threads),
                             0, state0};
    for (size_t t = 0; t < n_threads; t++)
        jobs[t].end = t + 1 < n_threads ? jobs[t + 1].first : first + n;
    threads_run(n_threads, fill_normal, jobs, sizeof *jobs);
}

void tensor_fill_normal(bf16_bits *x, size_t n, uint64_t seed, uint64_t stream)
{
    tensor_fill_normal_part(x, 0, n, seed, stream);
}
