/* check.c: the failure paths of check.h and harness.h's dev_alloc. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "harness.h"

void check_fail(const char *lib, const char *call, const char *file, int line,
                const char *message, const char *detail)
{
    fprintf(stderr, "%s error: %s failed at %s:%d: %s", lib, call, file, line, message);
    if (detail && detail[0])
        fprintf(stderr, " (%s)", detail);
    fputc('\n', stderr);
    exit(1);
}

void die_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

void *dev_alloc(size_t bytes, const char *what)
{
    void *ptr = NULL;
    cudaError_t e = cudaMalloc(&ptr, bytes);
    if (e == cudaErrorMemoryAllocation) {
        size_t free_b = 0, total_b = 0;
        cudaGetLastError(); /* clear it: out-of-memory is not sticky */
        CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
        die_usage("%s: %zu bytes do not fit in device memory (%zu bytes free of %zu)",
                  what, bytes, free_b, total_b);
    }
    if (e != cudaSuccess)
        check_fail("CUDA", "cudaMalloc", __FILE__, __LINE__, cudaGetErrorString(e), what);
    return ptr;
}

void dev_free(void *ptr)
{
    if (ptr)
        CUDA_CHECK(cudaFree(ptr));
}
