// Direct (no im2col) stride-1 convolution kernels for CPUs with AVX-512, used by conv.cpp when the
// CPU has AVX-512F and the geometry allows; conv.cpp keeps im2col + GEMM for everything else.
#pragma once
#include <cstdint>

namespace ddp4j::cpu::direct {

/** Stride-1 convolution of x[N, C, H, W] with w[K, C, R, S] into y[N, K, P, Q], padding (ph, pw). */
struct Geometry {
  int64_t N, C, H, W, K, R, S, P, Q, ph, pw;
};

/** Whether the CPU runs these kernels (AVX-512F) and they have not been switched off. */
bool enabled();
/** Switches the direct kernels off (false) or back on where the CPU has them; for tests. */
void set_enabled(bool on);
/**
 * Whether forward() is used: channels are padded to a multiple of 16, so fewer than 8 output
 * channels would waste most of each vector, and rows of at most 7 outputs with many channels
 * leave the tiles mostly empty (im2col + GEMM does better in both).
 */
bool forward_supported(const Geometry& g);
/**
 * Likewise for backward() (the input gradient's output channels are the C input channels); it
 * pays off for few channels (C * K <= 4096), as in the two-conv net.
 */
bool backward_supported(const Geometry& g, bool need_gx);

/** y = conv(x, w) + b (b may be null). */
void forward(const float* x, const float* w, const float* b, float* y, const Geometry& g);
/**
 * gw = Σ_n gy ⋆ x, gb = Σ gy (gb may be null), gx = full correlation of gy with the flipped
 * weights (gx may be null). Outputs are overwritten.
 */
void backward(const float* gy, const float* x, const float* w, float* gx, float* gw, float* gb,
              const Geometry& g);

}  // namespace ddp4j::cpu::direct
