/* threads.h: the host's CPU work (the float64 reference check, the input generator) spread over
 * POSIX threads, one per online CPU. C11 + POSIX. Callers split their work so that each thread
 * writes only its own part of the output: the results have the same bits whatever the count. */
#ifndef ATTN_THREADS_H
#define ATTN_THREADS_H

#include <stddef.h>

/* How many threads for `items` units of work: the online CPUs (sysconf(_SC_NPROCESSORS_ONLN)),
 * at most THREADS_MAX, and at most one per `min_per_thread` items; at least 1. */
size_t threads_for(size_t items, size_t min_per_thread);

/* Runs fn(job) for each of the n jobs (an array of n records of job_size bytes), each on its own
 * thread, and returns when all are done. Job 0 runs on the calling thread; a job whose thread
 * cannot be started (pthread_create fails, or beyond THREADS_MAX) runs there too. */
void threads_run(size_t n, void *(*fn)(void *job), void *jobs, size_t job_size);

#define THREADS_MAX 256

#endif
