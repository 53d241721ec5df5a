// A small, portable random generator for the data layer. Batches must be a pure function of
// (seed, index) and identical on every platform, so nothing here uses <random>'s
// distributions (whose algorithms differ between standard libraries).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace relpos {

// SplitMix64 finaliser: a bijective 64-bit mix (Steele, Lea & Flood 2014).
inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Combines several integers (a seed, a stream tag, a batch index, ...) into one seed.
inline uint64_t derive_seed(std::initializer_list<uint64_t> parts) {
  uint64_t h = 0x6a09e667f3bcc909ULL;
  for (uint64_t p : parts) h = mix64(h ^ mix64(p));
  return h;
}

// xoshiro256** (Blackman & Vigna 2018), seeded through SplitMix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      s = mix64(seed - 0x9e3779b97f4a7c15ULL);
    }
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform integer in [0, n), n > 0, without modulo bias (rejection sampling).
  int64_t below(int64_t n) {
    const uint64_t un = static_cast<uint64_t>(n);
    const uint64_t limit = UINT64_MAX - UINT64_MAX % un;
    uint64_t x;
    do x = next();
    while (x >= limit);
    return static_cast<int64_t>(x % un);
  }
  // Uniform integer in [lo, hi] (inclusive).
  int64_t between(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
  // Uniform double in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool bernoulli(double p) { return uniform() < p; }

  template <class T>
  void shuffle(std::vector<T>& v) {  // Fisher-Yates
    for (int64_t i = static_cast<int64_t>(v.size()) - 1; i > 0; --i)
      std::swap(v[i], v[below(i + 1)]);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace relpos
