/* threads.c: see threads.h. */
#include <pthread.h>
#include <unistd.h>

#include "threads.h"

size_t threads_for(size_t items, size_t min_per_thread)
{
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t t = cpus > 1 ? (size_t)cpus : 1;
    if (t > THREADS_MAX) t = THREADS_MAX;
    if (min_per_thread > 0 && t > items / min_per_thread) t = items / min_per_thread;
    return t > 1 ? t : 1;
}

void threads_run(size_t n, void *(*fn)(void *job), void *jobs, size_t job_size)
{
    pthread_t tid[THREADS_MAX];
    char *job = jobs;
    size_t started = 1;
    while (started < n && started < THREADS_MAX && pthread_create(&tid[started], NULL, fn, job + started * job_size) == 0)
        started++;
    for (size_t i = started; i < n; i++) fn(job + i * job_size); /* not started: here */
    if (n > 0) fn(job);
    for (size_t i = 1; i < started; i++) pthread_join(tid[i], NULL);
}
