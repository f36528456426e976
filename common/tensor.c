/* tensor.c: see tensor.h. */
#include <string.h>

#include "tensor.h"

bf16_bits bf16_from_float(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu))
        return (bf16_bits)((u >> 16) | 0x0040u); /* NaN: keep sign, force quiet */
    u += 0x7FFFu + ((u >> 16) & 1u);             /* round to nearest, ties to even */
    return (bf16_bits)(u >> 16);
}

float bf16_to_float(bf16_bits b)
{
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* splitmix64 (Steele, Lea, Flood 2014): a full-period 64-bit generator. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void tensor_fill_normal(bf16_bits *x, size_t n, uint64_t seed, uint64_t stream)
{
    uint64_t state = seed * 0xD1B54A32D192ED03ull + stream * 0x8CB92BA72F3D8DD7ull;
    for (size_t i = 0; i < n; i++) {
        /* 12 uniforms of 16 bits each from 3 draws: u_k = (k + 1/2) / 2^16. */
        uint64_t sum = 0;
        for (int d = 0; d < 3; d++) {
            uint64_t r = splitmix64(&state);
            sum += (r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48);
        }
        double normal = ((double)sum + 6.0) * 0x1.0p-16 - 6.0; /* exact in double */
        x[i] = bf16_from_float((float)normal);
    }
}
