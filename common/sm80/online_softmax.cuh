/* online_softmax.cuh: the online softmax normalizer of one row held by one warp, shared by the
 * row-softmax kernels of 01/02 (bf16 scores, common/eager_ops.cu) and 03 (FP32 scores,
 * 03_math/math.cu). Milakov & Gimelshein 2018, "Online normalizer calculation for softmax".
 *
 * Base 2 throughout: a value x enters as x·log2(e), so every exponential is one exp2f, and the
 * probability is later 2^(x·log2 e - m) / l with (m, l) from below.
 *   online_max_sum_update<VEC>(&m, &l, v)  folds VEC raw values into a lane's running maximum m
 *       (of x·log2 e) and sum l = Σ 2^(x·log2 e - m), rescaling l by 2^(m_old - m_new) once per
 *       call when the maximum grows;
 *   warp_max_sum_merge(&m, &l)  merges the 32 lanes' (m, l) pairs with the same rule in a
 *       butterfly: every lane ends with the whole row's.
 * A lane that saw only -inf keeps (m, l) = (-inf, 0), which merges as 0; a row of only -inf ends
 * with l = 0, so its probabilities are 0/0 = NaN, as torch.softmax gives (03's NaN-safe guard
 * turns them into zeros afterwards).
 */
#ifndef ATTN_ONLINE_SOFTMAX_CUH
#define ATTN_ONLINE_SOFTMAX_CUH

#include <math.h>
#include <math_constants.h>   /* CUDART_L2E_F = log2(e) */

template <int VEC>
static __device__ __forceinline__ void online_max_sum_update(float *m, float *l, const float v[VEC])
{
    float x[VEC], vmax = -INFINITY;
#pragma unroll
    for (int i = 0; i < VEC; i++) {
        x[i] = v[i] * CUDART_L2E_F;
        vmax = fmaxf(vmax, x[i]);
    }
    const float mn = fmaxf(*m, vmax);
    if (mn != -INFINITY) {
        float acc = *l * exp2f(*m - mn);
#pragma unroll
        for (int i = 0; i < VEC; i++) acc += exp2f(x[i] - mn);
        *l = acc;
        *m = mn;
    }
}

static __device__ __forceinline__ void warp_max_sum_merge(float *m, float *l)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const float mo = __shfl_xor_sync(0xffffffffu, *m, off);
        const float lo = __shfl_xor_sync(0xffffffffu, *l, off);
        const float mn = fmaxf(*m, mo);
        *l = mn == -INFINITY ? 0.0f : *l * exp2f(*m - mn) + lo * exp2f(mo - mn);
        *m = mn;
    }
}

#endif
