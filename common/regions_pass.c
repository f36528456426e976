/* regions_pass.c: see regions_pass.h. */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "regions_pass.h"

enum { OVERHEAD_RUNS = 5 };

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void reset_head(attn_regions_head *d_head, uint32_t capacity, cudaStream_t stream)
{
    attn_regions_head h;
    memset(&h, 0, sizeof h);
    h.t_first = ~0ull;                       /* lowered by atomicMin */
    h.capacity = capacity;
    CUDA_CHECK(cudaMemcpyAsync(d_head, &h, sizeof h, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
}

/* Median time of OVERHEAD_RUNS single forwards of stage on p (after a sync each; the head reset
 * before each when head is not NULL). */
static double single_forward_us(const attn_stage *stage, attn_problem *p, attn_regions_head *head,
                                uint32_t capacity)
{
    double t[OVERHEAD_RUNS];
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < OVERHEAD_RUNS; i++) {
        if (head) reset_head(head, capacity, p->stream);
        CUDA_CHECK(cudaEventRecord(e0, p->stream));
        stage->forward(p);
        CUDA_CHECK(cudaEventRecord(e1, p->stream));
        CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0.f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        t[i] = ms * 1e3;
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    qsort(t, OVERHEAD_RUNS, sizeof *t, cmp_double);
    return t[OVERHEAD_RUNS / 2];
}

void regions_pass_run(const attn_regions_build *rb, const attn_stage *plain_stage,
                      const attn_problem *plain, int sm_limit,
                      const regions_check_input *in, regions_pass_result *out)
{
    memset(out, 0, sizeof *out);
    const attn_stage *stage = rb->stage;
    const attn_shape *s = &plain->shape;
    size_t capacity = (size_t)ATTN_REGIONS_RECORDS_PER_SM * (size_t)sm_limit;
    if (capacity > ATTN_REGIONS_MAX_RECORDS) capacity = ATTN_REGIONS_MAX_RECORDS;
    attn_regions_arg arg;
    arg.head = dev_alloc(sizeof(attn_regions_head) + capacity * sizeof(attn_region_rec),
                         "--regions record buffer");
    arg.sm_limit = (uint32_t)sm_limit;
    attn_region_rec *d_rec = (attn_region_rec *)(arg.head + 1);

    attn_problem p = *plain;                 /* same tensors, stream and flags; its own state */
    p.regions = &arg;
    p.state = stage->setup ? stage->setup(&p) : NULL;

    attn_problem q = *plain;                 /* the plain build, for the overhead */
    out->plain_us = single_forward_us(plain_stage, &q, NULL, 0);
    out->regions_us = single_forward_us(stage, &p, arg.head, (uint32_t)capacity);

    /* The recorded forward, on an O of NaN: checked as the plain build's. */
    const size_t elems = (size_t)s->batch * s->heads * s->seq * s->head_dim;
    const size_t bytes = elems * sizeof(bf16_bits);
    CUDA_CHECK(cudaMemsetAsync(d_rec, 0, capacity * sizeof(attn_region_rec), p.stream));
    reset_head(arg.head, (uint32_t)capacity, p.stream);
    CUDA_CHECK(cudaMemsetAsync(p.o, 0xFF, bytes, p.stream));
    stage->forward(&p);
    CUDA_CHECK(cudaStreamSynchronize(p.stream));

    bf16_bits *ho = malloc(bytes);
    attn_region_rec *rec = malloc(capacity * sizeof *rec);
    if (!ho || !rec)
        die_usage("--regions: %zu bytes of host memory not available", bytes + capacity * sizeof *rec);
    attn_regions_head head;
    CUDA_CHECK(cudaMemcpy(ho, p.o, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&head, arg.head, sizeof head, cudaMemcpyDeviceToHost));
    const size_t n = head.claimed < capacity ? head.claimed : capacity;
    CUDA_CHECK(cudaMemcpy(rec, d_rec, n * sizeof *rec, cudaMemcpyDeviceToHost));

    out->check = ref_check(s, plain->scale, in->q, in->k, in->v, ho, in->rows, in->n_rows);
    out->pass = ref_check_pass(&out->check, in->tol);
    ref_check_line(out->check_line, sizeof out->check_line, &out->check,
                   (size_t)s->batch * s->heads * s->seq, in->tol);
    if (regions_decode(rec, n, &head, (uint32_t)capacity, &out->decoded) != 0)
        die_usage("--regions: %zu records do not fit in host memory", n);
    out->decoded.sm_limit = (uint32_t)sm_limit;
    out->decoded.unit_name = rb->unit;
    out->decoded.roles = rb->roles;

    if (stage->teardown) stage->teardown(&p);
    free(ho);
    free(rec);
    dev_free(arg.head);
}
