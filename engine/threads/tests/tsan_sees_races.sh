#!/bin/sh
# Runs tsan_sees_races (argument 1) and passes only when ThreadSanitizer
# reports the data race it plants, naming both writers' source line.
out=$(TSAN_OPTIONS=halt_on_error=1:exitcode=86 "$1" 2>&1)
rc=$?
if [ "$rc" -ne 86 ]; then
  echo "expected ThreadSanitizer's exit code 86, got $rc:"
  echo "$out"
  exit 1
fi
if ! echo "$out" | grep -q "WARNING: ThreadSanitizer: data race"; then
  echo "exit 86 but no data race reported:"
  echo "$out"
  exit 1
fi
if ! echo "$out" | grep -q "tsan_sees_races.cpp"; then
  echo "the race report does not point at the planted writes:"
  echo "$out"
  exit 1
fi
echo "ThreadSanitizer reported the planted race"
