/* flash3_split.h: rung 8's split over the keys, planned on the host (flash-decoding's idea for a
 * causal forward whose grid is small).
 *
 * Rungs 3-7 hand each block whole query tiles. When batch*heads x query tiles is small against
 * the SMs, the longest tile sets the time: at 1x1x4096x64, 32 tiles on 132 SMs, the last tile
 * walks 32 key tiles while 100 SMs have nothing to do. Rung 8 cuts each query tile's key range
 * into chunks of at most `chunk` key tiles: every chunk is a work item (flash3_work), the items
 * go to the blocks longest first, each to the block with the least work so far (the LPT rule:
 * Graham 1969, "Bounds on multiprocessing timing anomalies"), and each chunk of a tile that has
 * more than one writes a partial O, divided by its own row sums, and its rows' log-sum-exp. A
 * second kernel then combines a tile's partials:
 *     L = log2(sum_k 2^lse_k),  O = sum_k 2^(lse_k - L) O_k
 * (Dao, Haziza, Massa, Sizov 2023, "Flash-Decoding for long-context inference"; FlashAttention-3's
 * hopper/flash_fwd_combine_kernel.h does the same for its split-KV path.)
 *
 * The plan is fixed per shape and grid, computed once at set-up and copied to the device with
 * the workspace: the items [n_work], each block's first item [G + 1], the combine list
 * [n_combine], then the partial O [n_slots][block_m][head_dim] and log-sum-exp [n_slots][block_m] (fp32).
 * Host code (C with C++ linkage, built by nvcc); no CUDA call.
 */
#ifndef ATTN_07_FLASH3_SPLIT_H
#define ATTN_07_FLASH3_SPLIT_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "flash3.cuh"

/* One query tile split over several chunks: its partials are slots first_slot ..
 * first_slot + chunks - 1, in key order. */
typedef struct {
    int bh, m_blk, first_slot, chunks;
} flash3_combine_tile;

/* The combine kernel's arguments (rung8_split_keys.cu): the split tiles, the partials, O. */
typedef struct {
    const flash3_combine_tile *tiles;   /* [split tiles] */
    const float *o_part, *lse_part;     /* [slot][block_m][head_dim], [slot][block_m] */
    __nv_bfloat16 *o;                   /* bf16 [batch, heads, seq, head_dim] */
    int seq;
} flash3_combine_params;

typedef struct {
    int chunk;                 /* key tiles per chunk; 0: no split (rung 7's order) */
    int blocks;                /* blocks with work (the grid) */
    int n_work, n_slots, n_combine;
    flash3_work *work;         /* [n_work], block by block */
    int *first;                /* [blocks + 1] */
    flash3_combine_tile *combine;   /* [n_combine] */
    long long busiest;         /* the busiest block's work: key tiles + 1 per item */
    int block_m;               /* rows of a query tile (and of a partial) */
} flash3_split_plan;

/* The key tiles that query tile m of bm rows (128, or 192 on rung 10 and rungs 11-13 at head_dim 64) reaches: 0 .. n-1
 * (causal_key_tiles). With bm = 128 = the key tile, m + 1. */
static inline int flash3_split_tile_keys(int m, int bm, int seq)
{
    return causal_key_tiles(flash3_tile_m0(m, bm, seq), bm, H3_BLOCK_N, seq);
}

/* Key tiles per chunk for seq, head_dim-independent, bh_count = batch*heads, query tiles of bm
 * rows, on G SMs, or 0 when the whole tiles already spread well: when the longest tile (n_max
 * key tiles, + 1 for its prologue and epilogue) is at most 5/4 of an even share of all the work
 * (key tiles + 1 per tile, over G blocks). Otherwise chunks of an even share of the key tiles,
 * ceil(W / G), at least 1; no split either where the longest tile would shed fewer than
 * H3_SPLIT_MIN_GAIN key tiles (n_max - chunk): the combine's second launch and the partials'
 * round trip through memory cost about as much as that (docs/perf-notes.md, rung 8). */
#define H3_SPLIT_MIN_GAIN 6

static inline int flash3_split_chunk(int seq, int bh_count, int G, int bm)
{
    const int q_tiles = (seq + bm - 1) / bm;
    long long W = 0;                          /* key tiles of one head, causal */
    for (int m = 0; m < q_tiles; ++m) W += flash3_split_tile_keys(m, bm, seq);
    W *= bh_count;
    const long long n_max = flash3_split_tile_keys(q_tiles - 1, bm, seq);
    const long long share = (W + (long long)bh_count * q_tiles + G - 1) / G;
    if ((n_max + 1) * 4 <= share * 5) return 0;
    long long chunk = (W + G - 1) / G;
    if (chunk < 1) chunk = 1;
    if (n_max - chunk < H3_SPLIT_MIN_GAIN) return 0;
    return (int)chunk;
}

/* The chunks of chunk key tiles that query tile m of bm rows is cut into: ceil(keys / chunk). */
static inline int flash3_split_chunks(int m, int bm, int seq, int chunk)
{
    return (flash3_split_tile_keys(m, bm, seq) + chunk - 1) / chunk;
}

static inline void flash3_split_plan_free(flash3_split_plan *pl)
{
    free(pl->work);
    free(pl->first);
    free(pl->combine);
    memset(pl, 0, sizeof *pl);
}

/* The plan for seq and bh_count, query tiles of bm rows, on G blocks (flash3_split_chunk's chunk;
 * with 0, an empty plan). Query tile m (n_end = flash3_split_tile_keys(m) key tiles: m + 1 with
 * 128-row tiles) has chunks [k*chunk, min((k+1)*chunk, n_end)), k = 0 .. ceil(n_end/chunk) - 1. Items are ordered by length,
 * longest first (then by head, tile, chunk), and each goes to the block whose work so far is
 * least (the lowest-numbered of equals); a block runs its items in the order it got them.
 * Returns 0, or -1 when host memory runs out (the plan is then empty). */
static inline int flash3_split_plan_make(flash3_split_plan *pl, int seq, int bh_count, int G, int bm)
{
    memset(pl, 0, sizeof *pl);
    const int chunk = flash3_split_chunk(seq, bh_count, G, bm);
    if (chunk == 0) return 0;
    const int q_tiles = (seq + bm - 1) / bm;
    /* items and slots */
    long long n_work = 0, n_slots = 0, n_combine = 0;
    for (int m = 0; m < q_tiles; ++m) {
        const int chunks = flash3_split_chunks(m, bm, seq, chunk);
        n_work += chunks;
        if (chunks > 1) { n_slots += chunks; ++n_combine; }
    }
    n_work *= bh_count;
    n_slots *= bh_count;
    n_combine *= bh_count;
    flash3_work *all = (flash3_work *)malloc((size_t)n_work * sizeof *all);
    pl->work = (flash3_work *)malloc((size_t)n_work * sizeof *pl->work);
    pl->combine = (flash3_combine_tile *)malloc((size_t)(n_combine ? n_combine : 1) * sizeof *pl->combine);
    int *count = (int *)calloc((size_t)G, sizeof *count);
    long long *load = (long long *)calloc((size_t)G, sizeof *load);
    int *owner = (int *)malloc((size_t)n_work * sizeof *owner);
    pl->first = (int *)calloc((size_t)G + 1, sizeof *pl->first);
    if (!all || !pl->work || !pl->combine || !count || !load || !owner || !pl->first) {
        free(all); free(count); free(load); free(owner);
        flash3_split_plan_free(pl);
        return -1;
    }
    /* every item, longest first: by length from chunk down to 1, then head, tile, chunk */
    long long i = 0;
    int slot = 0, c = 0;
    for (int len = chunk; len >= 1; --len)
        for (int bh = 0; bh < bh_count; ++bh)
            for (int m = 0; m < q_tiles; ++m) {
                const int chunks = flash3_split_chunks(m, bm, seq, chunk), n_end = flash3_split_tile_keys(m, bm, seq);
                for (int k = 0; k < chunks; ++k) {
                    const int nb = k * chunk, ne = (nb + chunk < n_end) ? nb + chunk : n_end;
                    if (ne - nb != len) continue;
                    flash3_work w = { bh, m, nb, ne, -1 };
                    all[i++] = w;
                }
            }
    /* slots: the split tiles in (head, tile) order, their chunks in key order */
    for (int bh = 0; bh < bh_count; ++bh)
        for (int m = 0; m < q_tiles; ++m) {
            const int chunks = flash3_split_chunks(m, bm, seq, chunk);
            if (chunks < 2) continue;
            flash3_combine_tile t = { bh, m, slot, chunks };
            pl->combine[c++] = t;
            slot += chunks;
        }
    for (long long x = 0; x < n_work; ++x) {
        flash3_work *w = &all[x];
        const int chunks = flash3_split_chunks(w->m_blk, bm, seq, chunk);
        if (chunks > 1) {
            /* the tile's combine entry: tiles with one chunk have none, so count them out */
            int before = 0;   /* split tiles of this head before tile m_blk */
            for (int m = 0; m < w->m_blk; ++m) before += (flash3_split_chunks(m, bm, seq, chunk) > 1);
            const int per_head = c / bh_count;
            w->slot = pl->combine[w->bh * per_head + before].first_slot + w->n_begin / chunk;
        }
        int best = 0;
        for (int b = 1; b < G; ++b) if (load[b] < load[best]) best = b;
        owner[x] = best;
        load[best] += w->n_end - w->n_begin + 1;
        ++count[best];
    }
    /* block by block, each in the order it got its items */
    int blocks = 0;
    for (int b = 0; b < G; ++b) {
        pl->first[b + 1] = pl->first[b] + count[b];
        if (count[b]) blocks = b + 1;
        if (load[b] > pl->busiest) pl->busiest = load[b];
    }
    for (int b = 0; b < G; ++b) count[b] = 0;
    for (long long x = 0; x < n_work; ++x)
        pl->work[pl->first[owner[x]] + count[owner[x]]++] = all[x];
    free(all); free(count); free(load); free(owner);
    pl->chunk = chunk;
    pl->blocks = blocks;
    pl->n_work = (int)n_work;
    pl->n_slots = slot;
    pl->n_combine = c;
    pl->block_m = bm;
    return 0;
}

/* Device bytes of the plan and its workspace, in the order the stage lays them out (each part
 * 256-byte aligned): items, block starts, combine list, partial O, log-sum-exp. */
static inline size_t flash3_split_align(size_t b) { return (b + 255) & ~(size_t)255; }
static inline size_t flash3_split_bytes(const flash3_split_plan *pl, int head_dim)
{
    if (pl->chunk == 0) return 0;
    return flash3_split_align((size_t)pl->n_work * sizeof(flash3_work)) +
           flash3_split_align((size_t)(pl->blocks + 1) * sizeof(int)) +
           flash3_split_align((size_t)pl->n_combine * sizeof(flash3_combine_tile)) +
           flash3_split_align((size_t)pl->n_slots * pl->block_m * head_dim * sizeof(float)) +
           flash3_split_align((size_t)pl->n_slots * pl->block_m * sizeof(float));
}

#endif
