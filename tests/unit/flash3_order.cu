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
 * Prints "order: N cases ok" and exits 0, or one line per failure and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flash3.cuh"

static int g_failed = 0;

static flash3_params shape_params(int bh, int seq, int sections)
{
    flash3_params p;
    memset(&p, 0, sizeof p);
    p.seq = seq;
    p.bh_count = bh;
    p.q_tiles = (seq + H3_BLOCK_M - 1) / H3_BLOCK_M;
    p.l2_sections = sections;
    return p;
}

/* Every item once, within bounds, with flash3_item_bounds' n_end; with one section, the
 * persistent order (j-th item of block blk: i = jG + (j odd ? G-1-blk : blk), head i % bh,
 * query tile q_tiles-1 - i / bh). */
static void check_order(int bh, int seq, int G, int sections)
{
    const flash3_params p = shape_params(bh, seq, sections);
    const long long total = (long long)bh * p.q_tiles;
    unsigned char *seen = (unsigned char *)calloc((size_t)total, 1);
    if (!seen) { fprintf(stderr, "order: out of host memory\n"); exit(1); }
    long long count = 0;
    for (int blk = 0; blk < G; ++blk) {
        flash3_cursor c = { 0, 0 };
        flash3_item w;
        for (int j = 0; flash3_section_item(p, G, blk, c, w); ++j) {
            const int m_blk = w.m0 / H3_BLOCK_M;
            flash3_item ref;
            flash3_item_bounds(p, m_blk, ref);
            if (w.bh < 0 || w.bh >= bh || m_blk < 0 || m_blk >= p.q_tiles || w.m0 % H3_BLOCK_M ||
                w.n_end != ref.n_end || w.n_end < 1) {
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

/* The host's choice at one shape, as the launch makes it (G = min(SMs, tiles)). */
static void report(int b, int h, int seq, int d, int sms)
{
    const int bh = b * h;
    const long long tiles = (long long)bh * ((seq + H3_BLOCK_M - 1) / H3_BLOCK_M);
    const int G = (int)(tiles < sms ? tiles : sms);
    const int sections = flash3_l2_sections(seq, d, bh, G);
    const flash3_params p = shape_params(bh, seq, 1);
    check_order(bh, seq, G, sections);
    printf("order %dx%dx%dx%d G=%d sections=%d busiest=%lld one_section=%lld\n", b, h, seq, d, G,
           sections, flash3_busiest_block(p, G, sections), flash3_busiest_block(p, G, 1));
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
                }
    static const int shapes[][4] = { { 8, 16, 1024, 64 }, { 4, 16, 2048, 64 }, { 2, 16, 4096, 128 },
                                     { 2, 16, 3001, 128 }, { 2, 3, 1000, 64 }, { 4, 8, 4096, 64 },
                                     { 1, 16, 4096, 128 }, { 4, 16, 6000, 64 } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i, ++cases)
        report(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], 132);
    if (g_failed) return 1;
    printf("order: %d cases ok\n", cases);
    return 0;
}
