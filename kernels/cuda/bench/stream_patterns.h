// deltafin-cuda-bench --patterns: how fast the expert kernels' access pattern can stream at all.
#pragma once

namespace deltafin::cuda::bench {

// Streams 16 experts' worth of bytes (280 MB, T = 1's call) the way the fragment-order expert kernels
// do, with nothing computed: a persistent grid of 2 blocks per SM takes tickets of 8 tiles (one per
// warp, 28 KB each), each warp reads its tile in 512-byte chunks with U loads in flight. Layouts:
// each tile contiguous (today's fragment order), or a task's 8 tiles interleaved chunk by chunk
// (a block reads 4 KB contiguous per step). Prints GB/s and % of d2d_gbs for each.
void stream_patterns(int sms, double d2d_gbs);

}  // namespace deltafin::cuda::bench
