#!/usr/bin/env python3
"""Checks every bundled scenario against scenarios/schema/scenario.schema.json
with an independent validator (python3-jsonschema, Draft 7), so the schema and
the C++ reader (valijson) cannot drift apart unnoticed; and the scenarios
the failure records in scenarios/regressions/ embed. Also checks that the
schema itself is valid draft-07, and that it refuses a few edits of a bundled
file that the C++ reader refuses (an unknown field, a wrong type, a missing
field), so a schema loosened by mistake fails here.

    scenario_schema_check.py SCENARIOS_DIR
"""
import copy
import json
import pathlib
import sys

import jsonschema

root = pathlib.Path(sys.argv[1])
schema = json.loads((root / "schema" / "scenario.schema.json").read_text())
jsonschema.Draft7Validator.check_schema(schema)
validator = jsonschema.Draft7Validator(schema)

files = (sorted(root.glob("*.json")) + sorted(root.glob("canaries/*.json")) + sorted(root.glob("harness/*.json")) +
         sorted(root.glob("swarm/*.json")) + sorted(root.glob("canaries/swarm/*.json")))
failures = 0
for f in files:
    errors = sorted(validator.iter_errors(json.loads(f.read_text())), key=lambda e: list(e.path))
    for e in errors:
        failures += 1
        print(f"FAIL {f}: /{'/'.join(map(str, e.path))}: {e.message}")
# The scenarios the committed failure records embed (scenarios/regressions/).
for f in sorted(root.glob("regressions/*.json")):
    errors = sorted(validator.iter_errors(json.loads(f.read_text())["scenario"]), key=lambda e: list(e.path))
    for e in errors:
        failures += 1
        print(f"FAIL {f}: /scenario/{'/'.join(map(str, e.path))}: {e.message}")
if len(files) < 4:
    failures += 1
    print(f"FAIL: expected at least 4 bundled scenarios, found {len(files)}")

# A lane file: the edits below reach into system.lanes.
# A lanes file whose first actor starts with a route (the edits below reach into it).
sample_file = next(f for f in files if f.name.startswith("lanes_") and
                   "route" in json.loads(f.read_text())["workload"]["actors"][0]["steps"][0])
sample = json.loads(sample_file.read_text())
edits = {
    "unknown field": lambda d: d["system"].__setitem__("cache", {}),
    "wrong type": lambda d: d["system"].__setitem__("cores", "two"),
    "missing field": lambda d: d["system"]["lanes"].pop("capacity"),
    "unknown oracle": lambda d: d.__setitem__("oracles", ["liveliness"]),
    "two kinds in a step": lambda d: d["workload"]["actors"][0]["steps"][0].__setitem__("sleep_ns", 1),
}
for what, edit in edits.items():
    d = copy.deepcopy(sample)
    edit(d)
    if validator.is_valid(d):
        failures += 1
        print(f"FAIL: the schema accepts {sample_file.name} with {what}")

# The single-flight slice: a join step with a field it does not have, a worker
# outcome it does not know.
flight_file = next(f for f in files if f.name.startswith("flight_"))
flight = json.loads(flight_file.read_text())
flight_edits = {
    "a join with an unknown field": lambda d: d["workload"]["actors"][0]["steps"][0]["join"].__setitem__("class", 0),
    "an unknown worker outcome": lambda d: d["behaviour"]["worker"].__setitem__(
        "outcomes", [{"when": {"key": 1}, "outcome": "error_clean"}]),
}
for what, edit in flight_edits.items():
    d = copy.deepcopy(flight)
    edit(d)
    if validator.is_valid(d):
        failures += 1
        print(f"FAIL: the schema accepts {flight_file.name} with {what}")
edits.update(flight_edits)

# Swarm ranges: accepted on the knobs the schema lists, refused elsewhere and in the wrong form.
swarm_edits = {
    "a range on a workload count": lambda d: d["workload"]["actors"][0]["steps"][0]["route"].__setitem__(
        "count", {"range": [1, 3]}),
    "a swarm range on cores": lambda d: d["system"].__setitem__("cores", {"one_of": [1, 2]}),
    "an empty one_of": lambda d: d["system"]["lanes"].__setitem__("capacity", {"one_of": []}),
    "a range and a one_of at once": lambda d: d["system"]["lanes"].__setitem__(
        "capacity", {"range": [1, 2], "one_of": [1]}),
    "a range of strings": lambda d: d["system"]["lanes"].__setitem__("capacity", {"range": ["a", "b"]}),
    "a range on placement": lambda d: d["system"]["lanes"].__setitem__("placement", {"range": [0, 1]}),
}
for what, edit in swarm_edits.items():
    d = copy.deepcopy(sample)
    edit(d)
    if validator.is_valid(d):
        failures += 1
        print(f"FAIL: the schema accepts {sample_file.name} with {what}")
swarm_files = [f for f in files if "swarm" in f.parts]
if len(swarm_files) < 2:
    failures += 1
    print(f"FAIL: expected the bundled swarm scenarios, found {len(swarm_files)}")
edits.update(swarm_edits)

print(f"scenario_schema_check: {len(files)} files, {len(edits)} refused edits, {failures} failures")
sys.exit(1 if failures else 0)
