// Properties over generated scenarios, through rapidcheck's Boost.Test
// integration: for each component and for composed systems, every oracle of
// the generated scenario holds on a run of the real engine in the simulator,
// whatever the scenario (configuration, behaviour and faults, actors and
// steps), the seed and the strategy (random or pct). A failure is shrunk by
// rapidcheck, then by lockstep shrink, and leaves one record
// (generated_property.hpp).
#define BOOST_TEST_MODULE generated scenarios hold every oracle
#include <rapidcheck/boost_test.h>

#include "property-tests/generated_property.hpp"

using lockstep::prop::draw_case;
using lockstep::prop::holds_on_sim;

RC_BOOST_PROP(lanes_hold_every_oracle, ()) { holds_on_sim(draw_case("lanes"), "lanes"); }

RC_BOOST_PROP(shards_hold_every_oracle, ()) { holds_on_sim(draw_case("shards"), "shards"); }

RC_BOOST_PROP(flights_hold_every_oracle, ()) { holds_on_sim(draw_case("flights"), "flights"); }

RC_BOOST_PROP(composed_systems_hold_every_oracle, ()) { holds_on_sim(draw_case("composed"), "composed"); }
