/* check.c: the failure paths of check.h and harness.h's dev_alloc. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "harness.h"

static void (*exit_hook)(int status);

void attn_set_exit_hook(void (*hook)(int status))
{
    exit_hook = hook;
}

void attn_exit(int status)
{
    fflush(stdout);
    if (exit_hook) exit_hook(status);
    exit(status);
}

void check_fail(const char *lib, const char *call, const char *file, int line,
                const char *message, const char *detail)
{
    fprintf(stderr, "%s error: %s failed at %s:%d: %s", lib, call, file, line, message);
    if (detail && detail[0])
        fprintf(stderr, " (%s)", detail);
    fputc('\n', stderr);
    attn_exit(1);
}

void die_usage(const char *fmt, ...)
{
    /* Format into a buffer first, then write it as one line: a newline or other control byte in
     * the message (a flag typed as $'--fo\no') is escaped (\n, \t, \r, else \xHH). */
    char small[1024], *msg = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small) {
        char *big = malloc((size_t)n + 1);
        if (big) {
            va_start(ap, fmt);
            vsnprintf(big, (size_t)n + 1, fmt, ap);
            va_end(ap);
            msg = big;
        } /* else: the message stays cut at sizeof small - 1 bytes */
    }
    for (const unsigned char *c = (const unsigned char *)msg; n > 0 && *c; c++) {
        if (*c == '\n') fputs("\\n", stderr);
        else if (*c == '\t') fputs("\\t", stderr);
        else if (*c == '\r') fputs("\\r", stderr);
        else if (*c < 0x20 || *c == 0x7f) fprintf(stderr, "\\x%02x", *c);
        else fputc(*c, stderr);
    }
    fputc('\n', stderr);
    if (msg != small) free(msg);
    attn_exit(2);
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
