// y = x @ W.T for a few rows of x (a decode step's batch) with W pre-packed in strips.
//
// MKL's sgemm streams the weights far more slowly for a few rows of x than for one.
// Here W is packed once into strips of 16 output columns, each strip a contiguous
// (K, 16) block, so every thread streams contiguous memory with a software prefetch,
// and every weight vector loaded serves several rows of x. With AVX-512 a strip is one
// register and up to 16 rows' accumulators fit in the 32 registers; with AVX2 (16
// registers of 8 floats) a strip is two, so 6 rows fit, and the next 6 rows read the
// strip again from cache (a strip is at most K * 64 bytes: 98 KB here). See
// spade_tasks/llm/cpu/linear.py for when it is used and docs/cpu-inference.md for the
// measurements.

#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <array>
#include <utility>

namespace {

constexpr int64_t kStrip = 16;         // output columns per strip
constexpr int64_t kPrefetch = 1024;    // floats ahead of the current row of a strip (4 KB)

#if defined(__AVX512F__)
constexpr int kRowsPerPass = 16;       // one AVX-512 register of accumulators per row

// Rows [0, R) of x against one strip: out[r, 0:16] = sum_k x[r, k] * strip[k, 0:16].
template <int R>
inline void strip_rows(const float* x, int64_t ldx, const float* strip, int64_t K,
                       float* out, int64_t ldo) {
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const float* w = strip + k * kStrip;
    _mm_prefetch(reinterpret_cast<const char*>(w + kPrefetch), _MM_HINT_T0);
    const __m512 wv = _mm512_loadu_ps(w);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(x[r * ldx + k]), wv, acc[r]);
  }
  for (int r = 0; r < R; ++r) _mm512_storeu_ps(out + r * ldo, acc[r]);
}
#elif defined(__AVX2__) && defined(__FMA__)
// Two registers of accumulators per row: 6 rows take 12 of the 16, the strip's two
// halves and the broadcast row value the rest.
constexpr int kRowsPerPass = 6;

template <int R>
inline void strip_rows(const float* x, int64_t ldx, const float* strip, int64_t K,
                       float* out, int64_t ldo) {
  __m256 lo[R], hi[R];
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const float* w = strip + k * kStrip;
    _mm_prefetch(reinterpret_cast<const char*>(w + kPrefetch), _MM_HINT_T0);
    const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 xv = _mm256_broadcast_ss(x + r * ldx + k);
      lo[r] = _mm256_fmadd_ps(xv, w0, lo[r]);
      hi[r] = _mm256_fmadd_ps(xv, w1, hi[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(out + r * ldo, lo[r]);
    _mm256_storeu_ps(out + r * ldo + 8, hi[r]);
  }
}
#else
#error "small_batch_linear needs AVX-512 or AVX2 with FMA (see linear.py's build flags)"
#endif

using StripFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t);

template <int... R>
constexpr std::array<StripFn, sizeof...(R)> strip_table(std::integer_sequence<int, R...>) {
  return {&strip_rows<R + 1>...};
}

const auto kStripFns = strip_table(std::make_integer_sequence<int, kRowsPerPass>{});

}  // namespace

// x: (G, M, K) float32, contiguous. packed: (G, N / 16, K, 16) float32, from pack().
// -> (G, M, N): y[g] = x[g] @ W[g].T for each group g (one weight: G = 1).
torch::Tensor packed_bmm(const torch::Tensor& x, const torch::Tensor& packed) {
  TORCH_CHECK(x.dim() == 3 && x.scalar_type() == at::kFloat && x.is_contiguous(),
              "x must be a contiguous 3-D float32 tensor");
  TORCH_CHECK(packed.dim() == 4 && packed.size(0) == x.size(0) && packed.size(3) == kStrip &&
                  packed.size(2) == x.size(2) && packed.scalar_type() == at::kFloat &&
                  packed.is_contiguous(),
              "packed must come from pack() for these groups and this input width");
  const int64_t G = x.size(0), M = x.size(1), K = x.size(2), strips = packed.size(1);
  const int64_t N = strips * kStrip;
  auto y = torch::empty({G, M, N}, x.options());
  const float* X = x.data_ptr<float>();
  const float* P = packed.data_ptr<float>();
  float* Y = y.data_ptr<float>();
  // One task per (group, strip): each streams its strip from memory once for all rows.
  at::parallel_for(0, G * strips, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t g = t / strips, s = t % strips;
      const float* xg = X + g * M * K;
      float* yg = Y + g * M * N;
      for (int64_t m = 0; m < M; m += kRowsPerPass) {
        const int64_t rows = std::min<int64_t>(kRowsPerPass, M - m);
        kStripFns[rows - 1](xg + m * K, K, P + t * K * kStrip, K, yg + m * N + s * kStrip, N);
      }
    }
  });
  return y;
}

// weight: (..., N, K), any strides. -> (..., N / 16, K, 16), contiguous.
torch::Tensor pack(const torch::Tensor& weight) {
  TORCH_CHECK(weight.dim() >= 2 && weight.size(-2) % kStrip == 0,
              "weight must have a multiple of 16 rows");
  const int64_t N = weight.size(-2), K = weight.size(-1);
  auto shape = weight.sizes().slice(0, weight.dim() - 2).vec();  // the leading dims
  shape.insert(shape.end(), {N / kStrip, kStrip, K});
  return weight.detach().to(at::kFloat).reshape(shape).transpose(-1, -2).contiguous();
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("packed_bmm", &packed_bmm, "x[g] @ W[g].T for each group, with W packed by pack()");
  m.def("pack", &pack, "weights (..., N, K) packed in strips of 16 output columns");
}
