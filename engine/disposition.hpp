// engine/disposition.hpp — what a processor hands back for the key it ran.
//
// keep(state): the state stays resident in the scheduler (a write-back cache)
// and the key's next dispatch sees it. drop(): the state is discarded, so the
// next dispatch of the key sees none and the processor reloads.
// Invariant: is_keep() is true exactly when a state is held.
#pragma once

#include <optional>
#include <stdexcept>
#include <utility>

namespace lockstep {

template <class State>
class disposition {
public:
    /// The state stays resident for the key's next dispatch.
    [[nodiscard]] static disposition keep(State state) { return disposition(std::move(state)); }
    /// The state is discarded; the key's next dispatch sees none.
    [[nodiscard]] static disposition drop() { return disposition(); }

    /// True for keep, false for drop.
    bool is_keep() const { return state_.has_value(); }

    /// The kept state; throws std::logic_error on a drop.
    State& state() {
        require_keep();
        return *state_;
    }
    const State& state() const {
        require_keep();
        return *state_;
    }

    /// Moves the state out (nullopt on a drop); the disposition becomes a drop.
    std::optional<State> take_state() { return std::exchange(state_, std::nullopt); }

private:
    disposition() = default;
    explicit disposition(State state) : state_(std::move(state)) {}

    void require_keep() const {
        if (!state_) {
            throw std::logic_error("disposition::state: a drop holds no state");
        }
    }

    std::optional<State> state_;
};

}  // namespace lockstep
