// engine/stable_hash.hpp — a 64-bit hash that is the same on every platform,
// standard library and run, for routing keys to shards.
//
// std::hash may differ between libstdc++ and libc++ (and is the identity for
// integers in libstdc++), so a key routed through it could land on another
// shard when a seed is replayed elsewhere. These functions are fixed:
// * integers: the splitmix64 output function (Steele, Lea, Flood 2014) applied
//   to the value converted to uint64 (two's complement), so equal values of
//   different integer types hash alike;
// * bytes (strings): 64-bit FNV-1a (Fowler, Noll, Vo);
// * enums: their underlying integer;
// * a type with a member `std::uint64_t stable_hash() const`: that.
// Invariant: a value's hash never changes; these are part of the replay format.
#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace lockstep {

/// splitmix64's output for state x: a bijection on uint64 with good avalanche.
[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t x) {
    std::uint64_t z = x + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// 64-bit FNV-1a over the bytes.
[[nodiscard]] constexpr std::uint64_t fnv1a64(std::string_view bytes) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const char c : bytes) {
        h ^= static_cast<std::uint8_t>(c);
        h *= 0x100000001b3ULL;
    }
    return h;
}

/// An integer key: splitmix64 of its two's-complement value.
template <std::integral T>
[[nodiscard]] constexpr std::uint64_t stable_hash(T value) {
    return splitmix64(static_cast<std::uint64_t>(value));
}

/// A string key: FNV-1a over its bytes.
[[nodiscard]] constexpr std::uint64_t stable_hash(std::string_view bytes) {
    return fnv1a64(bytes);
}

/// An enum key: its underlying integer.
template <class T>
requires std::is_enum_v<T>
[[nodiscard]] constexpr std::uint64_t stable_hash(T value) {
    return stable_hash(static_cast<std::underlying_type_t<T>>(value));
}

/// A user key that states its own stable hash.
template <class T>
requires requires(const T& v) {
    { v.stable_hash() } -> std::same_as<std::uint64_t>;
}
[[nodiscard]] constexpr std::uint64_t stable_hash(const T& value) {
    return value.stable_hash();
}

/// A key the router can place: one of the overloads above applies.
template <class T>
concept StablyHashable = requires(const T& v) {
    { lockstep::stable_hash(v) } -> std::same_as<std::uint64_t>;
};

}  // namespace lockstep
