// The simulator's only source of randomness: splitmix64 seeding xoshiro256**,
// with its own bounded draw. Never std::*_distribution or std::hash: libstdc++
// and libc++ differ, and a seed must replay the same bytes with either.
#pragma once

#include <cstdint>

namespace lockstep::sim {

/// One step of splitmix64 (Steele, Lea, Flood 2014); used to expand a seed.
inline std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// xoshiro256** (Blackman, Vigna 2018), seeded through splitmix64.
class prng {
 public:
  explicit prng(std::uint64_t seed) {
    for (auto& word : s_) word = splitmix64(seed);
  }

  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform in [0, n) for n > 0, by Lemire's multiply-shift (bias < n / 2^64).
  /// Defined by integer arithmetic alone, so every compiler draws the same.
  std::uint64_t below(std::uint64_t n) { return reduce(next(), n); }

  /// below()'s reduction of one drawn value x into [0, n).
  static std::uint64_t reduce(std::uint64_t x, std::uint64_t n) {
    __extension__ using u128 = unsigned __int128;  // GCC and Clang both have it
    return static_cast<std::uint64_t>((static_cast<u128>(x) * n) >> 64);
  }

  /// True with probability num / den.
  bool chance(std::uint64_t num, std::uint64_t den) { return below(den) < num; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace lockstep::sim
