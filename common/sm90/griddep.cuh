/* griddep.cuh: programmatic dependent launch from the kernel's side, as inline PTX for sm_90.
 *
 * A kernel launched with cudaLaunchAttributeProgrammaticStreamSerialization may start before the
 * kernel ahead of it in the stream has finished: its blocks are placed on SMs as that kernel's
 * blocks leave them, once every block of that kernel has executed griddep_launch_dependents (or
 * exited). What it may do before griddep_wait is limited to what does not touch memory that kernel
 * writes or reads: set-up in shared memory and registers, descriptor prefetches.
 *
 * Sources: PTX ISA 8.x/9.x, "Parallel Synchronization and Communication Instructions:
 * griddepcontrol"; CUDA C++ Programming Guide, "Programmatic Dependent Launch and
 * Synchronization".
 */
#ifndef ATTN_SM90_GRIDDEP_CUH
#define ATTN_SM90_GRIDDEP_CUH

/* griddepcontrol.wait: wait until every grid this one depends on has completed and its memory
 * operations are visible to this thread (returns at once when there is none). */
static __device__ __forceinline__ void griddep_wait(void)
{
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

/* griddepcontrol.launch_dependents: this block no longer holds back the launch of the grid that
 * depends on this one (it will still wait for this grid to complete before it reads memory). */
static __device__ __forceinline__ void griddep_launch_dependents(void)
{
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

#endif
