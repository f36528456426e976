/* causal.cuh: the causal-attention arithmetic that does not depend on the GPU generation, written
 * once for the tiled kernels of 04_efficient, 05_flash (common/sm80/attn_tiles.cuh) and 07_hopper
 * (07_hopper/flash3.cuh). Top-left causal mask: query row i sees keys 0..i, and no key >= seq.
 *
 *   causal_key_tiles   how many key tiles of BN keys a query tile of BM rows from m0 needs
 *   causal_mask_limit  the first masked key of one row, relative to a thread's first key column
 *
 * Source: Dao 2023, "FlashAttention-2" (causal tile skipping); FlashAttention-3's mask.h and
 * block.h compute the same bounds (bottom-right aligned there; with equal query and key lengths
 * the two alignments agree).
 */
#ifndef ATTN_CAUSAL_CUH
#define ATTN_CAUSAL_CUH

/* Key tiles 0 .. causal_key_tiles-1 reach the tile's last row m0 + BM - 1 (or seq): none past
 * them is ever loaded. Host and device (07_hopper's host weighs its schedule with it). */
static __host__ __device__ __forceinline__ int causal_key_tiles(int m0, int BM, int BN, int seq)
{
    const int n_tiles = (seq + BN - 1) / BN, reach = (m0 + BM - 1) / BN + 1;
    return n_tiles < reach ? n_tiles : reach;
}

/* Key col is visible to row iff col <= row and col < seq, i.e. iff
 * col - key0 - 2t < min(row + 1, seq) - key0 - 2t, the value returned: key0 is the key tile's
 * first key and 2t the first column of this thread's pair in each 8-key group (mma.sync and
 * wgmma accumulators alike), so element (group j, e) of the thread is masked iff
 * 8j + e >= causal_mask_limit. */
static __device__ __forceinline__ int causal_mask_limit(int row, int seq, int key0, int t)
{
    return min(row + 1, seq) - key0 - 2 * t;
}

#endif
