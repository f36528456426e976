/* setmaxnreg.cuh: moving registers between the warpgroups of a block, as inline PTX for sm_90a.
 *
 * A block that specialises its warpgroups (one only issues TMA copies, the others only compute)
 * wants different register budgets per role: the loader needs a couple of dozen, the math
 * warpgroups as many as they can get. The kernel is compiled with a cap at entry
 * (__launch_bounds__(threads, 1)); then each warpgroup, all its warps together, lowers or raises
 * its own cap. .dec returns registers to the block's pool; .inc waits until the pool has them.
 * The budgets must fit the SM's 65536 registers: e.g. 128 x 24 + 256 x 240 = 64512.
 * ptxas ignores the instruction (warning C7508) when it cannot tell the register count at entry.
 *
 * Source: PTX ISA 8.x/9.x, "Miscellaneous Instructions: setmaxnreg" (sm_90a; N in 24..256, a
 * multiple of 8; .sync.aligned: every thread of the warpgroup executes the same one).
 */
#ifndef ATTN_SM90_SETMAXNREG_CUH
#define ATTN_SM90_SETMAXNREG_CUH

/* PTX "setmaxnreg" .inc: raise this warpgroup's per-thread register cap to N. */
template <int N>
static __device__ __forceinline__ void setmaxnreg_inc(void)
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(N));
}

/* PTX "setmaxnreg" .dec: lower this warpgroup's per-thread register cap to N. */
template <int N>
static __device__ __forceinline__ void setmaxnreg_dec(void)
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(N));
}

#endif
