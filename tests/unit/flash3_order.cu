/* flash3_order.cu: 07_hopper's work orders checked on the CPU (make builds it as
 * build/flash3_order, tests/07_ladder.bats runs it; no GPU). flash3_section_item and
 * flash3_l2_sections are host and device functions, so this program runs the very code the
 * kernels and the host run:
 *   - every (batch, head, query tile) exactly once over the G blocks, each with its causal
 *     bounds, for shapes, grid sizes and section counts around the edges (one tile, fewer tiles
 *     than blocks, sections of unequal size, one head per section);
 *   - with one section, item for item the order flash3_persistent_item documents (rungs 3-4);
 *   - the host's section counts at the bench shapes and a few more (132 SMs), one line each:
 *       order BxHxSxD G=<blocks> sections=<n> busiest=<key tiles> one_section=<key tiles>
 *     (busiest: the busiest block's work, flash3_busiest_block, with the sections chosen).
 *   - rung 8's split plans (flash3_split.h): every (batch, head, query tile, key tile) in exactly
 *     one item, items no longer than the chunk, each block's items longest first, block starts in
 *     order, every slot of a split tile written by exactly the chunk whose key range it names;
 *     and the plans at the sweep's small grids (132 SMs), one line each:
 *       split BxHxSxD G=<blocks> chunk=<key tiles> items=<n> slots=<n> combine=<tiles>
 *             busiest=<key tiles + 1 per item> unsplit=<the busiest block of rung 7's order>
 *   - the same for rung 10's 192-row tiles (BM = 192, shifted so that the first tile starts up
 *     to 128 rows before row 0: flash3_tile_m0), whose key tiles per query tile are no longer
 *     m + 1; its lines read order10 / split10. Every tile's 64-row warpgroups then lie wholly
 *     before row 0 or wholly at or after it, and the tiles cover rows 0 .. seq-1 exactly once.
 * Prints "order: N cases ok" and exits 0, or one line per failure and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flash3.cuh"
#include "flash3_split.h"

static int g_failed = 0;

static flash3_params shape_params(int bh, int seq, int sections, int bm = H3_BLOCK_M)
{
    flash3_params p;
    memset(&p, 0, sizeof p);
    p.seq = seq;
    p.bh_count = bh;
    p.q_tiles = (seq + bm - 1) / bm;
    p.l2_sections = sections;
    return p;
}

/* The query tile whose first row is m0 (flash3_tile_m0), or -1. */
static int tile_of(int m0, int bm, int seq)
{
    const int d = m0 - flash3_tile_m0(0, bm, seq);
    return d % bm == 0 ? d / bm : -1;
}

/* The tiles of bm rows at seq: the first starts at row 0 or up to 128 rows before it, a multiple
 * of 64 (so that no warpgroup's 64 rows straddle row 0), and the last ends at or past seq: with
 * bm = 192 by less than 64 rows (the rows of no work sit in the first tile); with 128, the first
 * starts at row 0. */
static void check_rows(int seq, int bm)
{
    const int q_tiles = (seq + bm - 1) / bm, first = flash3_tile_m0(0, bm, seq);
    const int end = flash3_tile_m0(q_tiles - 1, bm, seq) + bm;
    if (first > 0 || first <= -bm || first % 64 || end < seq || (bm != H3_BLOCK_M && end - seq >= 64) ||
        (bm == H3_BLOCK_M && first != 0)) {
        printf("rows FAIL seq=%d bm=%d: tiles from row %d to %d\n", seq, bm, first, end);
        ++g_failed;
    }
}

/* Every item once, within bounds, with flash3_item_bounds' n_end; with one section, the
 * persistent order (j-th item of block blk: i = jG + (j odd ? G-1-blk : blk), head i % bh,
 * query tile q_tiles-1 - i / bh). */
template <int BM = H3_BLOCK_M>
static void check_order(int bh, int seq, int G, int sections)
{
    const flash3_params p = shape_params(bh, seq, sections, BM);
    const long long total = (long long)bh * p.q_tiles;
    unsigned char *seen = (unsigned char *)calloc((size_t)total, 1);
    if (!seen) { fprintf(stderr, "order: out of host memory\n"); exit(1); }
    long long count = 0;
    for (int blk = 0; blk < G; ++blk) {
        flash3_cursor c = { 0, 0 };
        flash3_item w;
        for (int j = 0; flash3_section_item<BM>(p, G, blk, c, w); ++j) {
            const int m_blk = tile_of(w.m0, BM, seq);
            flash3_item ref;
            flash3_item_bounds<BM>(p, m_blk, ref);
            if (w.bh < 0 || w.bh >= bh || m_blk < 0 || m_blk >= p.q_tiles ||
                w.n_end != ref.n_end || w.n_end < 1 ||
                w.n_end != causal_key_tiles(w.m0, BM, H3_BLOCK_N, seq)) {
                printf("order FAIL bh=%d seq=%d G=%d sections=%d: block %d item %d is (bh %d, m0 %d, "
                       "n_end %d)\n", bh, seq, G, sections, blk, j, w.bh, w.m0, w.n_end);
                ++g_failed;
                free(seen);
                return;
            }
            if (seen[(long long)w.bh * p.q_tiles + m_blk]++) {
                printf("order FAIL bh=%d seq=%d G=%d sections=%d: (bh %d, query tile %d) twice\n",
                       bh, seq, G, sections, w.bh, m_blk);
                ++g_failed;
            }
            if (sections == 1) {
                const long long i = (long long)j * G + ((j & 1) ? G - 1 - blk : blk);
                if (w.bh != (int)(i % bh) || m_blk != p.q_tiles - 1 - (int)(i / bh)) {
                    printf("order FAIL bh=%d seq=%d G=%d: one section, block %d item %d is (bh %d, "
                           "query tile %d), the persistent order's is (%d, %d)\n", bh, seq, G, blk,
                           j, w.bh, m_blk, (int)(i % bh), p.q_tiles - 1 - (int)(i / bh));
                    ++g_failed;
                }
            }
            ++count;
        }
    }
    if (count != total) {
        printf("order FAIL bh=%d seq=%d G=%d sections=%d: %lld items handed out, %lld tiles\n", bh,
               seq, G, sections, count, total);
        ++g_failed;
    }
    free(seen);
}

/* rung 8's plan (rung 10's with bm = 192) for bh heads of seq on G blocks, checked as the header
 * comment says. */
static void check_split(int bh, int seq, int G, flash3_split_plan *pl, int bm = H3_BLOCK_M)
{
    if (flash3_split_plan_make(pl, seq, bh, G, bm) != 0) { fprintf(stderr, "order: out of host memory\n"); exit(1); }
    if (pl->chunk == 0) return;
    const int q_tiles = (seq + bm - 1) / bm, k_tiles = (seq + H3_BLOCK_N - 1) / H3_BLOCK_N;
    const long long cells = (long long)bh * q_tiles * k_tiles;    /* (bh, m, n) */
    unsigned char *seen = (unsigned char *)calloc((size_t)cells, 1);
    int *slot_of = (int *)malloc((size_t)(pl->n_slots ? pl->n_slots : 1) * sizeof(int));
    if (!seen || !slot_of) { fprintf(stderr, "order: out of host memory\n"); exit(1); }
    for (int i = 0; i < pl->n_slots; ++i) slot_of[i] = -1;
    int fails = 0;
#define SPLIT_FAIL(...) do { if (fails++ == 0) { printf("split FAIL bh=%d seq=%d G=%d: ", bh, seq, G); printf(__VA_ARGS__); printf("\n"); } } while (0)
    if (pl->blocks < 1 || pl->blocks > G || pl->first[0] != 0 || pl->first[pl->blocks] != pl->n_work)
        SPLIT_FAIL("blocks %d, first[0] %d, first[blocks] %d, items %d", pl->blocks, pl->first[0],
                   pl->first[pl->blocks], pl->n_work);
    for (int b = 0; b < pl->blocks && !fails; ++b) {
        if (pl->first[b + 1] <= pl->first[b]) SPLIT_FAIL("block %d has no item", b);
        for (int i = pl->first[b]; i < pl->first[b + 1]; ++i) {
            const flash3_work w = pl->work[i];
            const int len = w.n_end - w.n_begin;
            /* the key tiles the tile reaches: m + 1 with 128-row tiles */
            const int keys = w.m_blk >= 0 && w.m_blk < q_tiles
                           ? causal_key_tiles(flash3_tile_m0(w.m_blk, bm, seq), bm, H3_BLOCK_N, seq) : 0;
            if (bm == H3_BLOCK_M && keys != w.m_blk + 1) SPLIT_FAIL("tile %d reaches %d key tiles", w.m_blk, keys);
            if (w.bh < 0 || w.bh >= bh || w.m_blk < 0 || w.m_blk >= q_tiles || w.n_begin < 0 ||
                w.n_end > keys || len < 1 || len > pl->chunk || w.n_begin % pl->chunk)
                SPLIT_FAIL("item %d (bh %d, tile %d, keys %d..%d)", i, w.bh, w.m_blk, w.n_begin, w.n_end);
            if (i > pl->first[b] && len > pl->work[i - 1].n_end - pl->work[i - 1].n_begin)
                SPLIT_FAIL("block %d: item %d longer than the one before", b, i);
            const int whole = w.n_begin == 0 && w.n_end == keys;
            if (whole != (w.slot < 0)) SPLIT_FAIL("item %d: slot %d for a %s", i, w.slot, whole ? "whole tile" : "chunk");
            if (w.slot >= pl->n_slots) SPLIT_FAIL("item %d: slot %d of %d", i, w.slot, pl->n_slots);
            if (w.slot >= 0) {
                if (slot_of[w.slot] >= 0) SPLIT_FAIL("slot %d twice", w.slot);
                slot_of[w.slot] = i;
            }
            for (int n = w.n_begin; n < w.n_end && !fails; ++n)
                if (seen[((long long)w.bh * q_tiles + w.m_blk) * k_tiles + n]++)
                    SPLIT_FAIL("(bh %d, tile %d, key tile %d) twice", w.bh, w.m_blk, n);
        }
    }
    for (long long x = 0; x < cells && !fails; ++x) {
        const int n = (int)(x % k_tiles), m = (int)(x / k_tiles % q_tiles);
        const int keys = causal_key_tiles(flash3_tile_m0(m, bm, seq), bm, H3_BLOCK_N, seq);
        if ((n < keys) != (seen[x] == 1)) SPLIT_FAIL("(tile %d, key tile %d) seen %d times", m, n, seen[x]);
    }
    /* the combine list: each split tile's slots in key order, each written by that chunk */
    int slots = 0;
    for (int c = 0; c < pl->n_combine && !fails; ++c) {
        const flash3_combine_tile t = pl->combine[c];
        const int keys = causal_key_tiles(flash3_tile_m0(t.m_blk, bm, seq), bm, H3_BLOCK_N, seq);
        if (t.first_slot != slots || t.chunks != (keys + pl->chunk - 1) / pl->chunk || t.chunks < 2)
            SPLIT_FAIL("combine %d: (bh %d, tile %d) slots %d+%d", c, t.bh, t.m_blk, t.first_slot, t.chunks);
        for (int k = 0; k < t.chunks && !fails; ++k) {
            const int i = slot_of[t.first_slot + k];
            if (i < 0 || pl->work[i].bh != t.bh || pl->work[i].m_blk != t.m_blk ||
                pl->work[i].n_begin != k * pl->chunk)
                SPLIT_FAIL("combine %d: slot %d not chunk %d of (bh %d, tile %d)", c, t.first_slot + k, k, t.bh, t.m_blk);
        }
        slots += t.chunks;
    }
    if (slots != pl->n_slots) SPLIT_FAIL("combine list covers %d slots of %d", slots, pl->n_slots);
#undef SPLIT_FAIL
    g_failed += fails != 0;
    free(seen);
    free(slot_of);
}

/* rung 8's plan (BM = 192: rung 10's, line "split10") at one shape, as the launch makes it (on all
 * SMs; unsplit: rung 7's order on min(SMs, tiles) blocks), one line. */
template <int BM = H3_BLOCK_M>
static void report_split(int b, int h, int seq, int d, int sms)
{
    const int bh = b * h;
    const long long tiles = (long long)bh * ((seq + BM - 1) / BM);
    const int G = (int)(tiles < sms ? tiles : sms);
    flash3_split_plan pl;
    check_split(bh, seq, sms, &pl, BM);
    const flash3_params p = shape_params(bh, seq, 1, BM);
    printf("split%s %dx%dx%dx%d G=%d chunk=%d items=%d slots=%d combine=%d busiest=%lld unsplit=%lld "
           "bytes=%zu\n", BM == H3_BLOCK_M ? "" : "10", b, h, seq, d, pl.chunk ? pl.blocks : G,
           pl.chunk, pl.n_work, pl.n_slots, pl.n_combine, pl.busiest,
           flash3_busiest_block<BM>(p, G, flash3_l2_sections<BM>(seq, d, bh, G)),
           flash3_split_bytes(&pl, d));
    flash3_split_plan_free(&pl);
}

/* The host's choice at one shape, as the launch makes it (G = min(SMs, tiles)); BM = 192: rung
 * 10's, line "order10". */
template <int BM = H3_BLOCK_M>
static void report(int b, int h, int seq, int d, int sms)
{
    const int bh = b * h;
    const long long tiles = (long long)bh * ((seq + BM - 1) / BM);
    const int G = (int)(tiles < sms ? tiles : sms);
    const int sections = flash3_l2_sections<BM>(seq, d, bh, G);
    const flash3_params p = shape_params(bh, seq, 1, BM);
    check_order<BM>(bh, seq, G, sections);
    printf("order%s %dx%dx%dx%d G=%d sections=%d busiest=%lld one_section=%lld\n",
           BM == H3_BLOCK_M ? "" : "10", b, h, seq, d, G, sections,
           flash3_busiest_block<BM>(p, G, sections), flash3_busiest_block<BM>(p, G, 1));
}

int main(void)
{
    static const int bhs[] = { 1, 2, 3, 6, 7, 16, 32, 33, 128 };
    static const int seqs[] = { 1, 17, 128, 129, 1000, 1024, 3001, 4097 };
    static const int grids[] = { 1, 5, 48, 132 };
    static const int sections[] = { 1, 2, 3, 5, 7, 16, 32 };
    int cases = 0;
    for (size_t a = 0; a < sizeof bhs / sizeof bhs[0]; ++a)
        for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; ++s)
            for (size_t g = 0; g < sizeof grids / sizeof grids[0]; ++g)
                for (size_t n = 0; n < sizeof sections / sizeof sections[0]; ++n) {
                    const int bh = bhs[a], seq = seqs[s], sec = sections[n];
                    const long long tiles = (long long)bh * ((seq + H3_BLOCK_M - 1) / H3_BLOCK_M);
                    const int G = (int)(tiles < grids[g] ? tiles : grids[g]);
                    if (sec > bh) continue;
                    check_order(bh, seq, G, sec);
                    ++cases;
                    const long long tiles10 = (long long)bh * ((seq + H3_BLOCK_M3 - 1) / H3_BLOCK_M3);
                    check_order<H3_BLOCK_M3>(bh, seq, (int)(tiles10 < grids[g] ? tiles10 : grids[g]), sec);
                    ++cases;
                }
    for (int seq = 1; seq <= 1200; ++seq, cases += 2) {
        check_rows(seq, H3_BLOCK_M);
        check_rows(seq, H3_BLOCK_M3);
    }
    static const int shapes[][4] = { { 8, 16, 1024, 64 }, { 4, 16, 2048, 64 }, { 2, 16, 4096, 128 },
                                     { 2, 16, 3001, 128 }, { 2, 3, 1000, 64 }, { 4, 8, 4096, 64 },
                                     { 1, 16, 4096, 128 }, { 4, 16, 6000, 64 } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i, ++cases)
        report(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], 132);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
        if (shapes[i][3] == 64) {
            report<H3_BLOCK_M3>(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], 132);
            ++cases;
        }
    for (size_t a = 0; a < sizeof bhs / sizeof bhs[0]; ++a)
        for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; ++s)
            for (size_t g = 0; g < sizeof grids / sizeof grids[0]; ++g, cases += 2) {
                flash3_split_plan pl;
                check_split(bhs[a], seqs[s], grids[g], &pl);
                flash3_split_plan_free(&pl);
                check_split(bhs[a], seqs[s], grids[g], &pl, H3_BLOCK_M3);
                flash3_split_plan_free(&pl);
            }
    static const int small[][4] = { { 1, 1, 512, 64 }, { 1, 1, 4096, 64 }, { 1, 4, 512, 128 },
                                     { 1, 4, 2048, 128 }, { 1, 1, 16384, 128 }, { 2, 3, 1000, 64 },
                                     { 1, 16, 16384, 128 }, { 8, 16, 1024, 64 }, { 1, 8, 16384, 64 } };
    for (size_t i = 0; i < sizeof small / sizeof small[0]; ++i, ++cases)
        report_split(small[i][0], small[i][1], small[i][2], small[i][3], 132);
    for (size_t i = 0; i < sizeof small / sizeof small[0]; ++i)
        if (small[i][3] == 64) {
            report_split<H3_BLOCK_M3>(small[i][0], small[i][1], small[i][2], small[i][3], 132);
            ++cases;
        }
    if (g_failed) return 1;
    printf("order: %d cases ok\n", cases);
    return 0;
}
