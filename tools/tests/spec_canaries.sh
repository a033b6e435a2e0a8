#!/usr/bin/env bash
# Goal: each component's whole specification (the `spec_lanes`,
# `spec_shards`, `spec_flights` oracles, the default of every file) catches
# every planted bug in scenarios/canaries/, and names the rule it broke.
#   (a) every canary, its `oracles` replaced by the spec of each component in
#       its system (plus `delivery` when composed), fails as an oracle
#       violation within seeds 1..1000 under random; where the canary file
#       names the rules its bug breaks, the spec names one of those (first,
#       or among the other rules "the run also breaks");
#   (b) every rule of every spec is named for at least one canary:
#       no clause of a spec is left without a planted bug caught by its name;
#   (c) the same canaries with their bug switched off ("canary": "none" in
#       the component that carries it) hold under the spec over seeds 1..50:
#       the spec fires on the bug, not on the scenario's shape.
#
#   spec_canaries.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case_timeout=300
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

# The spec oracles of a file's components; and the file without its bug.
respec() {
  python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.load(open(src))
system = d["system"]
specs = [name for part, name in (("lanes", "spec_lanes"), ("shards", "spec_shards"),
                                 ("single_flight", "spec_flights")) if part in system]
if len(specs) > 1:
    specs.append("delivery")
named = d.get("oracles")
d["oracles"] = specs
if mode == "fixed":
    for part in ("lanes", "shards", "single_flight"):
        if part in system and "canary" in system[part]:
            system[part]["canary"] = "none"
json.dump(d, open(dst, "w"))
print(" ".join(named) if named else "")
EOF
}

declare -A caught_rules=()
for f in "$S"/canaries/*.json; do
  b=$(basename "$f" .json)
  named=$(respec "$f" "spec_$b.json" bugged) || { fail "cannot rewrite $f"; continue; }
  expect "spec_catches_$b" 1 "oracle '" -- "$L" explore "spec_$b.json" --seeds 1000 --record "rec_$b.json"
  rule=$(sed -n "s/.*FAILED oracle: oracle '\([a-z_]*\)' failed.*/\1/p" out | head -1)
  [ -n "$rule" ] || rule=$(sed -n "s/.*failing seed [0-9]*: oracle \([a-z_]*\).*/\1/p" out | head -1)
  if [ -z "$rule" ]; then
    name="spec_names_rule_$b" cases=$((cases + 1))
    fail "no rule named in the output"
    continue
  fi
  # The first rule broken, then "(the run also breaks: a, b)".
  also=$(sed -n "s/.*FAILED oracle: .*(the run also breaks: \([a-z_, ]*\)).*/\1/p" out | head -1 | tr -d ',')
  caught_rules[$rule]=1
  for r in $also; do caught_rules[$r]=1; done
  if [ -n "$named" ]; then
    name="spec_names_planted_rule_$b" cases=$((cases + 1))
    hit=0
    for r in $rule $also; do
      case " $named " in *" $r "*) hit=1 ;; esac
    done
    [ $hit -eq 1 ] || fail "the spec reported '$rule' (also: ${also:-none}); the canary plants a bug for: $named"
  fi
  if grep -q '"canary"' "$f"; then
    respec "$f" "fixed_$b.json" fixed >/dev/null
    expect "spec_holds_fixed_$b" 0 "all 50 seeds held" -- "$L" explore "fixed_$b.json" --seeds 50
  fi
done

# (b) every rule of every spec has a planted bug caught by its name.
rules="per_key_order exactly_once one_lane_per_key capacity lanes_gone lane_survives no_black_hole counters
conservation state one_in_flight class_budget pending_cap fairness request_ids deadlines eviction backpressure placement
one_leader cancel_publish same_value servable answered delivery"
for r in $rules; do
  name="spec_rule_has_canary_$r" cases=$((cases + 1))
  [ -n "${caught_rules[$r]:-}" ] || fail "no canary is caught by '$r' under the specs (caught: ${!caught_rules[*]})"
done

echo "spec_canaries: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
