// tools/scenario/violation.hpp — what an oracle over an event log reports:
// its name (as the scenario's `oracles` list spells it) and a message naming
// the key, the virtual time and the event's index in the log.
#pragma once

#include <string>

namespace lockstep::scenario {

struct violation {
  std::string oracle;
  std::string message;
};

}  // namespace lockstep::scenario
