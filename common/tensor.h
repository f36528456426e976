/* tensor.h: host-side bf16 tensors: seeded init, conversions. C11. */
#ifndef ATTN_TENSOR_H
#define ATTN_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* bf16 as its 16 bits (host C has no bf16 type). */
typedef uint16_t bf16_bits;

/* float -> bf16, round to nearest even; NaN stays a (quiet) NaN. Inline: the reference check and
 * the unit tests' emulations convert every element they read. */
static inline bf16_bits bf16_from_float(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu))
        return (bf16_bits)((u >> 16) | 0x0040u); /* NaN: keep sign, force quiet */
    u += 0x7FFFu + ((u >> 16) & 1u);             /* round to nearest, ties to even */
    return (bf16_bits)(u >> 16);
}

/* bf16 -> float, exact. */
static inline float bf16_to_float(bf16_bits b)
{
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Fills x[0..n) with approximately standard-normal values rounded to bf16, from a generator
 * seeded by (seed, stream) so Q, K and V differ. The generator is splitmix64 feeding an
 * Irwin–Hall sum of 12 16-bit uniforms minus 6 (mean 0, variance 1, tails cut at ±6): integer and
 * exactly-rounded double arithmetic only, no libm, so the same seed gives the same bits on any
 * machine and compiler. The elements are shared out among threads (threads.h) in contiguous
 * parts, each part's generator started at its first element's state: the same bits again. */
void tensor_fill_normal(bf16_bits *x, size_t n, uint64_t seed, uint64_t stream);

/* Elements [first, first + n) of what tensor_fill_normal(x, ..., seed, stream) writes, the same
 * bits, and no others (x is the whole tensor): the unit tests generate only the rows they read. */
void tensor_fill_normal_part(bf16_bits *x, size_t first, size_t n, uint64_t seed, uint64_t stream);

/* The bf16 bit pattern that poisons O before the checked forward: a quiet NaN. */
#define BF16_POISON ((bf16_bits)0x7FC1)

#endif
