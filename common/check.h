/* check.h: every CUDA, cuBLAS, cuDNN and CUPTI call is checked. On failure print
 *     <LIB> error: <call> failed at <file>:<line>: <library's own message>
 * on stderr and exit 1 (attn_exit). The macros expand to the library's own status-string function, so a file
 * must include the library's header before using its macro. C11 and C++.
 */
#ifndef ATTN_CHECK_H
#define ATTN_CHECK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Every exit of a run, with its status: the failure paths below, the out-of-memory paths and
 * cli_check_stdout. Flushes stdout, calls the exit hook (if one is set), then exit(status). */
void attn_exit(int status)
#ifdef __GNUC__
    __attribute__((noreturn))
#endif
    ;

/* The run harness's --cases mode (common/run.c) sets a hook that attn_exit calls first with the
 * status: it records the status of the case that is ending, and may resume the next case with a
 * longjmp (only while the case has touched no device state). NULL: none. */
void attn_set_exit_hook(void (*hook)(int status));

/* Prints the failure line and exits 1 (attn_exit). detail may be NULL. */
void check_fail(const char *lib, const char *call, const char *file, int line,
                const char *message, const char *detail);

/* Bad input (flags, shapes, sizes, no GPU): one line on stderr, exit 2 (attn_exit). printf-style. */
void die_usage(const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

#ifdef __cplusplus
}
#endif

#define CUDA_CHECK(call) do { cudaError_t e_ = (call); \
    if (e_ != cudaSuccess) check_fail("CUDA", #call, __FILE__, __LINE__, cudaGetErrorString(e_), cudaGetErrorName(e_)); } while (0)

/* After a <<<>>> launch: launch-configuration errors. */
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#define CUBLAS_CHECK(call) do { cublasStatus_t s_ = (call); \
    if (s_ != CUBLAS_STATUS_SUCCESS) check_fail("cuBLAS", #call, __FILE__, __LINE__, cublasGetStatusString(s_), cublasGetStatusName(s_)); } while (0)

#define CUBLASLT_CHECK(call) CUBLAS_CHECK(call)

#define CUPTI_CHECK(call) do { CUptiResult r_ = (call); if (r_ != CUPTI_SUCCESS) { const char *m_ = NULL; \
    cuptiGetResultString(r_, &m_); check_fail("CUPTI", #call, __FILE__, __LINE__, m_ ? m_ : "unknown", NULL); } } while (0)

/* cuDNN: the status string plus cudnnGetLastErrorString's detail (cuDNN 9). */
#define CUDNN_CHECK(call) do { cudnnStatus_t s_ = (call); if (s_ != CUDNN_STATUS_SUCCESS) { \
    char d_[1024] = {0}; cudnnGetLastErrorString(d_, sizeof d_); \
    check_fail("cuDNN", #call, __FILE__, __LINE__, cudnnGetErrorString(s_), d_); } } while (0)

#endif
