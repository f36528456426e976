/* 07_hopper: causal attention with Hopper's asynchronous machinery (FlashAttention-3's ideas),
 * as a ladder of rungs, each its own kernel in its own file, each one idea on the one before:
 *   rung1_tma_wgmma.cu   TMA loads completing on mbarriers, wgmma (S = Q.K^T from shared memory,
 *                        O += P.V with P from registers), a producer warpgroup (setmaxnreg 24)
 *                        and two consumer warpgroups (setmaxnreg 240); one block per query tile
 *   rung2_overlap.cu     + the intra-warpgroup overlap: the softmax of key tile n under the
 *                        tensor cores' O += P[n-1].V[n-1]
 *   rung3_persistent.cu  + a persistent grid: one block per SM walks its query tiles
 *                        longest-first, Q double-buffered
 *   rung4_pingpong.cu    + ping-pong of the two consumer warpgroups (named barriers); head_dim
 *                        64 only
 *   rung5_l2order.cu     rung 4 (head_dim 64) and rung 3 (head_dim 128) + an L2-aware order:
 *                        the query tiles in sections of heads whose K and V fit in L2
 *   rung6_tma_store.cu   + O stored through TMA (a bulk tensor store from the shared tile)
 *   rung7_store_overlap.cu + the store's read waited for under the next item's first product
 *   rung8_split_keys.cu  + a split over the keys where the grid is small (the plan: flash3_split.h;
 *                        the items, partials and combine: flash3_split.cuh), then a combine kernel
 *   rung9_item_overlap.cu + an item's first S and softmax under the previous item's last P.V
 *   rung10_three_consumers.cu rung 8 + three consumer warpgroups (192x128 tiles, setmaxnreg
 *                        32 / 160, per-warpgroup causal bounds); head_dim 64 only
 *   rung11_lazy_rescale.cu rung 10 (head_dim 64) and rung 8 with its products in turns (128) + O
 *                        rescaled only when a row's max grows by more than 8 in log2 units (P
 *                        would pass 2^8), in the next turn under S
 *   rung12_half_diagonal.cu + a warpgroup's last key tile at half width where the causal mask
 *                        leaves half of it empty for all its rows
 *   rung13_dependent_launch.cu + programmatic dependent launch: the next kernel's launch and
 *                        set-up under the tail of the one before (griddepcontrol)
 *   rung14_loads_ahead.cu + the producer's loads further ahead: K one tile ahead of V, and V
 *                        three stages deep
 *   rung15_cluster_multicast.cu + clusters of two blocks (head_dim 128): each K and V tile
 *                        loaded once, multicast to both blocks' shared memory
 * Without --rung: the fastest rung at each shape (rung_for: rung 14, and rung 8 on the small
 * grids of head_dim 64).
 * What they share (mask, online softmax, causal bounds, pipeline bookkeeping, epilogue, barrier
 * slots) is in flash3.cuh and common/sm90/.
 * This file is the stage: --rung, the TMA tensor maps, the launch of the chosen rung's kernel.
 *   Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao 2024, "FlashAttention-3: Fast and Accurate
 *   Attention with Asynchrony and Low-precision" (arXiv 2407.08608); Dao 2023, "FlashAttention-2".
 *
 * Tensors: bf16 [batch, heads, seq, head_dim], contiguous. head_dim 64 or 128 (rungs 4 and 10: 64), any
 * seq >= 1. One launch per forward, no extra device memory; rungs 8-14 where they split: two
 * launches and the plan and partials (flash3_split_bytes). Built for sm_90a only (wgmma exists
 * on compute capability 9.0 alone; the Makefile's 07_hopper_ARCH).
 *
 * Kernel names: flash3_fwd_bf16_causal_<BLOCK_M>x<BLOCK_N>_d<head_dim>_r<rung>_sm90a; the
 * regions build (--regions, flash3.cuh) adds _regions. Its units are the warpgroups: the
 * producer, consumer 0, consumer 1 (and consumer 2 with three consumer warpgroups).
 */
#include <cuda.h>              /* CUtensorMap and its enums (types only: no -lcuda) */
#include <cudaTypedefs.h>      /* PFN_cuTensorMapEncodeTiled_v12000 */
#include <cuda_runtime.h>
#include <math_constants.h>   /* CUDART_L2E_F = log2(e) */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "check.h"
#include "tiled_stage.h"
#include "flash3.cuh"
#include "flash3_split.h"

/* The ladder, in order (in the regions build, its instrumented copies: flash3.cuh). */
static const flash3_rung *const RUNGS[] = { &FLASH3_RUNG(1), &FLASH3_RUNG(2), &FLASH3_RUNG(3),
                                            &FLASH3_RUNG(4), &FLASH3_RUNG(5), &FLASH3_RUNG(6),
                                            &FLASH3_RUNG(7), &FLASH3_RUNG(8), &FLASH3_RUNG(9),
                                            &FLASH3_RUNG(10), &FLASH3_RUNG(11),
                                            &FLASH3_RUNG(12), &FLASH3_RUNG(13),
                                            &FLASH3_RUNG(14), &FLASH3_RUNG(15) };
#define N_RUNGS ((int)(sizeof RUNGS / sizeof RUNGS[0]))

/* --rung N (0: not given, the default below). This file is compiled twice (the plain build and
 * the regions build, both linked into ./07_hopper/run); the harness parses the flags with the
 * plain build's stage object only, so the one variable lives there and the regions build reads
 * it: --regions runs the rung that --rung chose. */
#if defined(ATTN_REGIONS) && ATTN_REGIONS
extern int flash3_rung_flag;
#else
int flash3_rung_flag = 0;
#endif

static const void *rung_kernel(const flash3_rung *r, int head_dim)
{
    return head_dim == 64 ? r->kernel_d64 : r->kernel_d128;
}

/* Query rows of the rung's tile at head_dim (rungs 11-14: they differ between 64 and 128). */
static int block_m_of(const flash3_rung *r, int head_dim)
{
    return head_dim == 128 && r->block_m_d128 ? r->block_m_d128 : r->block_m;
}

static size_t smem_for(const flash3_rung *r, int head_dim)
{
    return H3_SMEM_BYTES_VS((size_t)head_dim, (size_t)block_m_of(r, head_dim), (size_t)r->q_buffers,
                            (size_t)(r->v_stages ? r->v_stages : H3_STAGES));
}

/* A block of the rung: the producer warpgroup and one consumer warpgroup per 64 query rows. */
static unsigned threads_for(const flash3_rung *r, int head_dim)
{
    return 128u * (1u + (unsigned)block_m_of(r, head_dim) / 64u);
}

/* Query rows of one work item: the rung's tile, or a cluster's (rung 15: two blocks' tiles). */
static int item_rows_of(const flash3_rung *r, int head_dim)
{
    return block_m_of(r, head_dim) * (r->cluster ? r->cluster : 1);
}

/* Query tiles (work items) of one (batch, head) of shape s on the rung's tiles. */
static int q_tiles_for(const flash3_rung *r, const attn_shape *s)
{
    const int rows = item_rows_of(r, s->head_dim);
    return (s->seq + rows - 1) / rows;
}

/* The chapter's kernel, without --rung: at each head_dim the rung of the ladder that ran fastest
 * at the bench shapes and over the sweep (07_hopper/ladder/, docs/perf-notes.md has each rung's
 * measurements). At head_dim 64 that depends on the grid: rung 14's 192-row tiles where
 * batch x heads x its query tiles fill the SMs; below that (a small grid, split over the keys)
 * rung 8's 128-row tiles, where each block's one item is not shared by three warpgroups taking
 * turns. Kept per head_dim: for a while rung 6 was the fastest at head_dim 64 and rung 5 at 128,
 * and rung 10 runs head_dim 64 only. Rung 14 is rung 13 with the producer's loads further ahead:
 * faster than rung 13 at head_dim 128 and level at 64's bench shapes (docs/perf-notes.md). */
#define H3_DEFAULT_RUNG_D64       14
#define H3_DEFAULT_RUNG_D64_SMALL 8
#define H3_DEFAULT_RUNG_D128      14

#define H3_STR_(x) #x
#define H3_STR(x)  H3_STR_(x)

/* The rung to run shape s on sms multiprocessors (0: not known, as under --validate, where the
 * choice changes no check): --rung, else the default above. */
static const flash3_rung *rung_for(const attn_shape *s, int sms)
{
    if (flash3_rung_flag > 0) return RUNGS[flash3_rung_flag - 1];
    if (s->head_dim == 128) return RUNGS[H3_DEFAULT_RUNG_D128 - 1];
    const flash3_rung *r = RUNGS[H3_DEFAULT_RUNG_D64 - 1];
    const long long tiles = (long long)s->batch * s->heads * q_tiles_for(r, s);
    return tiles < sms ? RUNGS[H3_DEFAULT_RUNG_D64_SMALL - 1] : r;
}

/* --rung N, N in 1..N_RUNGS (attn_flag_uint: anything else is one line and exit 2). */
static int flash3_parse_flag(const char *flag, const char *value)
{
    if (!flag) { /* the harness's reset: the default rung per head_dim */
        flash3_rung_flag = 0;
        return 0;
    }
    if (strcmp(flag, "--rung") != 0) return 0;
    flash3_rung_flag = (int)attn_flag_uint(flag, value, 1, (uint64_t)N_RUNGS);
    return 2;
}

/* The tensor maps of the last forward and the tensors they describe (re-encoded when those
 * change). */
typedef struct {
    PFN_cuTensorMapEncodeTiled_v12000 encode;
    PFN_cuGetErrorString_v6000 error_string;
    CUtensorMap q_map, k_map, v_map, o_map;
    const void *q, *k, *v, *o;
    attn_shape shape;
    int sms;                   /* multiprocessors: the persistent grid's size */
    int clusters;              /* rung 15: clusters of its kernel that fit on the GPU at once */
    int l2_sections;           /* flash3_l2_sections for this shape (rungs 5-15) */
    flash3_split_plan plan;    /* rungs 8-14: the split for this shape (plan.chunk 0: none) */
    void *split_mem;           /* its device copy and the partials (flash3_split_bytes) */
    flash3_work *d_work;
    int *d_first;
    flash3_combine_tile *d_combine;
    float *d_o_part, *d_lse_part;
} flash3_state;

/* A driver function through the runtime (cudaGetDriverEntryPointByVersion), so the stage links
 * only the runtime. Exits 1 with the symbol's name if the driver does not have it. */
static void *driver_entry(const char *symbol, unsigned int version)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || fn == NULL)
        check_fail("CUDA", "cudaGetDriverEntryPointByVersion", __FILE__, __LINE__, symbol,
                   q == cudaDriverEntryPointVersionNotSufficent ? "driver too old"
                                                                : "symbol not found");
    return fn;
}

/* Q, K, V or O ([batch, heads, seq, head_dim] bf16 at ptr) as a 4-D TMA tensor map, innermost
 * first:
 *   dim 0: 64 columns of one panel (128 B, the widest box row 128-byte swizzle allows)
 *   dim 1: seq rows,                 stride head_dim*2 B
 *   dim 2: head_dim/64 panels,       stride 128 B
 *   dim 3: batch*heads,              stride seq*head_dim*2 B
 * box {64, rows, panels, 1}: Q, K, V with all head_dim/64 panels, one tile landing in shared
 * memory as [panel][row][64] with 128-byte swizzle, rows past seq zero-filled (OOB_FILL_NONE),
 * never another head's; O with one panel of 64 rows (a consumer warpgroup's, stored from the
 * tile), rows past seq not written. */
static void encode_tile_map(const flash3_state *st, CUtensorMap *map, const void *ptr,
                            const attn_shape *s, int rows, int panels)
{
    const cuuint64_t dims[4] = { 64, (cuuint64_t)s->seq, (cuuint64_t)(s->head_dim / 64),
                                 (cuuint64_t)s->batch * s->heads };
    const cuuint64_t strides[3] = { (cuuint64_t)s->head_dim * 2, 128,
                                    (cuuint64_t)s->seq * s->head_dim * 2 };
    const cuuint32_t box[4] = { 64, (cuuint32_t)rows, (cuuint32_t)panels, 1 };
    const cuuint32_t elem_strides[4] = { 1, 1, 1, 1 };
    const CUresult r = st->encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, (void *)ptr, dims,
                                  strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        const char *msg = NULL;
        if (st->error_string) st->error_string(r, &msg);
        check_fail("CUDA driver", "cuTensorMapEncodeTiled", __FILE__, __LINE__,
                   msg ? msg : "unknown error", NULL);
    }
}

/* The persistent grid: one block per SM, fewer if there are fewer tiles; on a rung with clusters
 * (rung 15), one cluster per item up to as many as fit at once (st->clusters), its blocks. */
static long long grid_blocks(const flash3_state *st, const attn_shape *s)
{
    const flash3_rung *r = rung_for(s, st->sms);
    const long long tiles = (long long)s->batch * s->heads * q_tiles_for(r, s);
    if (r->cluster) return (tiles < st->clusters ? tiles : st->clusters) * r->cluster;
    return tiles < st->sms ? tiles : st->sms;
}

/* The four tensor maps, and the shape's L2 sections (flash3_l2_sections, on the persistent
 * grid's size), for the tensors and shape of p. */
static void encode_maps(flash3_state *st, const attn_problem *p)
{
    const attn_shape *s = &p->shape;
    const int panels = s->head_dim / 64;
    const flash3_rung *r = rung_for(s, st->sms);
    const int bm = block_m_of(r, s->head_dim);
    if (r->cluster) {
        /* rung 15: Q by 64-row blocks of one panel; K and V by panels (one per block of the
         * cluster, multicast to both) */
        encode_tile_map(st, &st->q_map, p->q, s, 64, 1);
        encode_tile_map(st, &st->k_map, p->k, s, H3_BLOCK_N, 1);
        encode_tile_map(st, &st->v_map, p->v, s, H3_BLOCK_N, 1);
    } else {
        encode_tile_map(st, &st->q_map, p->q, s, bm, panels);
        encode_tile_map(st, &st->k_map, p->k, s, H3_BLOCK_N, panels);
        encode_tile_map(st, &st->v_map, p->v, s, H3_BLOCK_N, panels);
    }
    encode_tile_map(st, &st->o_map, p->o, s, 64, 1);
    st->q = p->q;
    st->k = p->k;
    st->v = p->v;
    st->o = p->o;
    st->shape = *s;
    const int G = (int)grid_blocks(st, s);
    const int bh = s->batch * s->heads;
    st->l2_sections = r->cluster ? flash3_l2_sections<2 * H3_BLOCK_M>(s->seq, s->head_dim, bh, G / r->cluster)
                    : bm == H3_BLOCK_M3 ? flash3_l2_sections<H3_BLOCK_M3>(s->seq, s->head_dim, bh, G)
                                        : flash3_l2_sections<H3_BLOCK_M>(s->seq, s->head_dim, bh, G);
}

/* The multiprocessors of the current device. */
static int device_sms(void)
{
    int dev = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    return sms;
}

/* rungs 8-14's plan for shape s on G blocks (the SMs) (an empty plan for the other rungs, or
 * where it does not split). Exits 1 if host memory runs out. */
static void split_plan(flash3_split_plan *pl, const attn_shape *s, int G)
{
    memset(pl, 0, sizeof *pl);
    const flash3_rung *r = rung_for(s, G);
    if (!r->combine_d64) return;
    if (flash3_split_plan_make(pl, s->seq, s->batch * s->heads, G, block_m_of(r, s->head_dim)) != 0) {
        fprintf(stderr, "07_hopper: out of host memory (the split plan)\n");
        attn_exit(1);
    }
}

/* Device bytes beyond Q, K, V, O: rungs 8-14's plan and partials where they split, else none. */
static size_t flash3_extra_bytes(const attn_shape *s)
{
    flash3_split_plan pl;
    split_plan(&pl, s, device_sms());
    const size_t bytes = flash3_split_bytes(&pl, s->head_dim);
    flash3_split_plan_free(&pl);
    return bytes;
}

/* head_dim 64 or 128 and one the chosen rung runs, batch x heads within an int (the kernels'
 * (batch, head) index, the work orders; checked without a device); compute capability 9.0
 * exactly (the sm_90a binary runs nowhere else); shared memory within the opt-in limit; grid
 * limits (rungs 1-2, one block per query tile). */
static int flash3_supports(const attn_shape *s, const cudaDeviceProp *prop, char *why, size_t why_len)
{
    const flash3_rung *r = rung_for(s, prop ? prop->multiProcessorCount : 0);
    const tiled_launch l = { "07_hopper", 9, 1,
                             "a Hopper GPU, compute capability 9.0 (sm_90a: wgmma, TMA, mbarrier "
                             "transactions)", block_m_of(r, s->head_dim), r->persistent,
                             smem_for(r, s->head_dim) };
    if ((long long)s->batch * s->heads > INT_MAX) {
        snprintf(why, why_len, "batch x heads = %lld is more than 07_hopper indexes (at most %d)",
                 (long long)s->batch * s->heads, INT_MAX);
        return 1;
    }
    if ((s->head_dim == 64 || s->head_dim == 128) && !rung_kernel(r, s->head_dim)) {
        snprintf(why, why_len, "rung %d of 07_hopper does not run head_dim %d (it runs %d; rungs "
                 "1-3, 5-9 and 11-14 run 64 and 128)", r->number, s->head_dim,
                 s->head_dim == 64 ? 128 : 64);
        return 1;
    }
    return tiled_supports(&l, s, prop, why, why_len);
}

/* Finds the tensor-map encoder in the driver, counts the SMs, encodes the four maps, opts the
 * kernel into its dynamic shared memory (over the default 48 KiB). */
static void *flash3_setup(attn_problem *p)
{
    flash3_state *st = (flash3_state *)calloc(1, sizeof *st);
    if (!st) { fprintf(stderr, "07_hopper: out of host memory\n"); attn_exit(1); }
    st->encode = (PFN_cuTensorMapEncodeTiled_v12000)driver_entry("cuTensorMapEncodeTiled", 12000);
    st->error_string = (PFN_cuGetErrorString_v6000)driver_entry("cuGetErrorString", 6000);
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&st->sms, cudaDevAttrMultiProcessorCount, dev));
    const flash3_rung *r = rung_for(&p->shape, st->sms);
    tiled_kernel_setup(rung_kernel(r, p->shape.head_dim), smem_for(r, p->shape.head_dim), 0);
    if (r->cluster) {
        /* rung 15: how many of its clusters the GPU holds at once (one block per SM; a cluster's
         * blocks on SMs of one GPC) */
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3((unsigned)(r->cluster * st->sms));
        cfg.blockDim = dim3(threads_for(r, p->shape.head_dim));
        cfg.dynamicSmemBytes = smem_for(r, p->shape.head_dim);
        CUDA_CHECK(cudaOccupancyMaxActiveClusters(&st->clusters, rung_kernel(r, p->shape.head_dim), &cfg));
        if (st->clusters < 1)
            check_fail("CUDA", "cudaOccupancyMaxActiveClusters", __FILE__, __LINE__,
                       "no cluster of rung 15's kernel fits on this GPU", NULL);
    }
    encode_maps(st, p);
    split_plan(&st->plan, &p->shape, st->sms);   /* all SMs: a split makes more items than tiles */
    if (st->plan.chunk) {
        /* the plan to the device, and room for the partials, in flash3_split_bytes' layout */
        const flash3_split_plan *pl = &st->plan;
        const size_t bytes = flash3_split_bytes(pl, p->shape.head_dim);
        CUDA_CHECK(cudaMalloc(&st->split_mem, bytes));
        char *at = (char *)st->split_mem;
        st->d_work = (flash3_work *)at;
        at += flash3_split_align((size_t)pl->n_work * sizeof(flash3_work));
        st->d_first = (int *)at;
        at += flash3_split_align((size_t)(pl->blocks + 1) * sizeof(int));
        st->d_combine = (flash3_combine_tile *)at;
        at += flash3_split_align((size_t)pl->n_combine * sizeof(flash3_combine_tile));
        st->d_o_part = (float *)at;
        at += flash3_split_align((size_t)pl->n_slots * pl->block_m * p->shape.head_dim * sizeof(float));
        st->d_lse_part = (float *)at;
        CUDA_CHECK(cudaMemcpy(st->d_work, pl->work, (size_t)pl->n_work * sizeof(flash3_work),
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(st->d_first, pl->first, (size_t)(pl->blocks + 1) * sizeof(int),
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(st->d_combine, pl->combine,
                              (size_t)pl->n_combine * sizeof(flash3_combine_tile),
                              cudaMemcpyHostToDevice));
        p->extra_bytes = bytes;
    }
    return st;
}

/* Launches kernel fn of rung r on stream st: with programmatic dependent launch where the rung's
 * kernels wait for the kernel ahead themselves (rungs 13-15: cudaLaunchKernelExC with
 * cudaLaunchAttributeProgrammaticStreamSerialization; CUDA C++ Programming Guide, "Programmatic
 * Dependent Launch and Synchronization"), else a plain cudaLaunchKernel. */
static void launch_kernel(const flash3_rung *r, const void *fn, dim3 grid, dim3 block, void **args,
                          size_t smem, cudaStream_t st)
{
    if (!r->dependent_launch) {
        CUDA_CHECK(cudaLaunchKernel(fn, grid, block, args, smem, st));
        return;
    }
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelExC(&cfg, fn, args));
}

/* One launch of the rung's kernel: grid (batch*heads, query tiles), or min(SMs, query tiles x
 * batch*heads) blocks for a persistent rung (rung 15: two per cluster, grid_blocks); 128 threads
 * per warpgroup (384, or 512 with three consumer warpgroups: rung 10, and rungs 11-14 at
 * head_dim 64). */
static void flash3_forward(attn_problem *p)
{
    flash3_state *st = (flash3_state *)p->state;
    const attn_shape *s = &p->shape;
    if (st->q != p->q || st->k != p->k || st->v != p->v || st->o != p->o ||
        memcmp(&st->shape, s, sizeof *s) != 0) {
        if (st->plan.chunk && memcmp(&st->shape, s, sizeof *s) != 0)
            check_fail("07_hopper", "flash3_forward", __FILE__, __LINE__,
                       "the shape changed after set-up", "the split plan is the set-up's");
        encode_maps(st, p);
    }
    flash3_params fp;
    fp.q_map = st->q_map;
    fp.k_map = st->k_map;
    fp.v_map = st->v_map;
    fp.o_map = st->o_map;
    fp.o = (__nv_bfloat16 *)p->o;
    fp.seq = s->seq;
    fp.scale_log2 = p->scale * CUDART_L2E_F;
    fp.regions = attn_regions_param_of(p);
    const flash3_rung *r = rung_for(s, st->sms);
    fp.bh_count = s->batch * s->heads;
    fp.q_tiles = q_tiles_for(r, s);
    fp.l2_sections = st->l2_sections;
    fp.work = st->plan.chunk ? st->d_work : NULL;
    fp.work_first = st->d_first;
    fp.o_part = st->d_o_part;
    fp.lse_part = st->d_lse_part;
    const dim3 grid = st->plan.chunk ? dim3((unsigned)st->plan.blocks)
                    : r->persistent  ? dim3((unsigned)grid_blocks(st, s))
                                     : dim3((unsigned)fp.bh_count, (unsigned)fp.q_tiles);
    void *args[] = { &fp };

    prof_range_push("flash3_attention_forward");
    launch_kernel(r, rung_kernel(r, s->head_dim), grid, dim3(threads_for(r, s->head_dim)), args,
                  smem_for(r, s->head_dim), p->stream);
    if (st->plan.n_combine) {
        /* rungs 8-14: the split tiles' partials into O (256 threads: 8 columns each, rows of
         * 256 / (head_dim / 8) a block) */
        flash3_combine_params cp;
        cp.tiles = st->d_combine;
        cp.o_part = st->d_o_part;
        cp.lse_part = st->d_lse_part;
        cp.o = (__nv_bfloat16 *)p->o;
        cp.seq = s->seq;
        void *cargs[] = { &cp };
        const unsigned rows = 256u / (unsigned)(s->head_dim / 8);
        launch_kernel(r, s->head_dim == 64 ? r->combine_d64 : r->combine_d128,
                      dim3((unsigned)st->plan.n_combine, (unsigned)block_m_of(r, s->head_dim) / rows),
                      dim3(256), cargs, 0, p->stream);
    }
    prof_range_pop();
}

static void flash3_teardown(attn_problem *p)
{
    flash3_state *st = (flash3_state *)p->state;
    if (st) {
        if (st->split_mem) CUDA_CHECK(cudaFree(st->split_mem));
        flash3_split_plan_free(&st->plan);
    }
    free(p->state);
    p->state = NULL;
}

const attn_stage ATTN_STAGE_SYMBOL = {
    /* name */        "07_hopper",
    /* idea */        "FlashAttention-3's machinery by hand: TMA loads completing on mbarriers, "
                      "wgmma from shared memory and registers (sm_90a)",
    /* supports */    flash3_supports,
    /* extra_bytes */ flash3_extra_bytes,
    /* setup */       flash3_setup,
    /* forward */     flash3_forward,
    /* teardown */    flash3_teardown,
    /* parse_flag */  flash3_parse_flag,
    /* flag_help */
    "  --rung N          the ladder's rung, each one idea on the one before; kernel\n"
    "                    ..._r<N>_sm90a (default: the fastest rung at each shape: "
    H3_STR(H3_DEFAULT_RUNG_D64) " at\n"
    "                    head_dim 64 (" H3_STR(H3_DEFAULT_RUNG_D64_SMALL) " where batch x heads x 192-row tiles < SMs),\n"
    "                    " H3_STR(H3_DEFAULT_RUNG_D128) " at 128). Rung, idea, head_dims:\n"
    "                      1  TMA + mbarriers + wgmma; producer warpgroup, setmaxnreg  64, 128\n"
    "                      2  + softmax of tile n under P.V of tile n-1 (overlap)      64, 128\n"
    "                      3  + persistent grid, tiles longest-first, 2 Q buffers      64, 128\n"
    "                      4  + ping-pong of the two consumer warpgroups               64\n"
    "                      5  + tiles in L2 sections of heads (4 at 64, 3 at 128)      64, 128\n"
    "                      6  + O stored by TMA from the shared tile                   64, 128\n"
    "                      7  + the store's read waited for under the next S           64, 128\n"
    "                      8  + split over the keys where the grid is small, combine   64, 128\n"
    "                      9  + the next item's first S under this one's last P.V      64, 128\n"
    "                     10  8 + three consumer warpgroups, 192x128 tiles             64\n"
    "                     11  + O rescaled only when P would pass 2^8, under next S    64, 128\n"
    "                     12  + the masked half of the diagonal tile skipped           64, 128\n"
    "                     13  + the next kernel's launch under this one's tail (PDL)   64, 128\n"
    "                     14  + K one tile ahead of V, and V three stages deep         64, 128\n"
    "                     15  + K and V multicast to a cluster of two (head_dim 128)   128",
    /* tolerance */   0.0,
    /* env_help */    NULL,
    /* check_env */   NULL,
};
ATTN_REGIONS_REGISTER_ROLES("warpgroup", "producer", "consumer 0", "consumer 1", "consumer 2")
