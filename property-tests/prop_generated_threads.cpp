// The smaller set on the threads backend: generated lanes, shards and
// single-flight scenarios (those real threads can run) hold every oracle on
// real pinned threads. A violation there ends the process with its exit code
// (a threads run has no record or replay); the scenario that was running is
// left in the record directory (generated_property.hpp), to run again with
// `lockstep run --backend threads` or to explore on the simulator.
#define BOOST_TEST_MODULE generated scenarios hold on threads
#include <rapidcheck/boost_test.h>

#include "property-tests/generated_property.hpp"

using lockstep::prop::draw_case;
using lockstep::prop::holds_on_threads;

RC_BOOST_PROP(lanes_hold_on_threads, ()) { holds_on_threads(draw_case("lanes"), "threads-lanes"); }

RC_BOOST_PROP(shards_hold_on_threads, ()) { holds_on_threads(draw_case("shards"), "threads-shards"); }

RC_BOOST_PROP(flights_hold_on_threads, ()) { holds_on_threads(draw_case("flights"), "threads-flights"); }
