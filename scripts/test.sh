#!/usr/bin/env bash
# Install everything the tests need and run the whole suite (unit, conformance, differential, Spark, ...).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
echo ">> installing deltakernel with test extras (the newest versions the ranges allow)"
"$VPY" -m pip install -q --upgrade --upgrade-strategy eager -e ".[test]" 2>&1 | grep -v -i "warning" || true
# best effort: Azurite (Azure Blob emulator, 127.0.0.1 only) for tests/unit/test_storage_azure_gcs.py; those tests skip without it
if [ ! -x .ci-tools/node_modules/.bin/azurite-blob ] && command -v npm >/dev/null 2>&1; then
  echo ">> installing azurite into .ci-tools (optional)"
  timeout 300 npm install --prefix .ci-tools --no-audit --no-fund --loglevel=error azurite@3 >/dev/null 2>&1 \
    || echo ">> note: azurite install failed; Azure emulator tests will be skipped"
fi
if [ "$#" -gt 0 ]; then  # a selection of tests: one pytest run, as given
  exec "$VPY" -m pytest -q -p no:cacheprovider "$@"
fi
# The whole suite in two parts at the same time (docs/decisions.md, "CI time: the suite in two parts" and
# "CI time: the two parts overlap"):
# 1. everything without the shared Spark sessions - the install suites (other Pythons, clean installs, older
#    pyspark lines) and the Spark tests that start JVMs / servers of their own (marker `own_jvm`) included - on both
#    cores (pytest-xdist; a test file stays on one worker: its module fixtures, servers and tables are made once;
#    files with long-running tests start first: tests/conftest.py), in the background under `nice`, its output
#    kept in a file and printed after part 2's;
# 2. the Spark tests on the shared sessions, in one process (one SparkSession per kind), in the foreground.
# Part 2 (one driver + one JVM, mostly one busy thread: py4j / gRPC round trips) leaves about one of the two cores
# idle; niced, part 1 fills it and yields when Spark's tasks want both. DELTAKERNEL_TEST_OVERLAP=0 runs part 1,
# then part 2 (the same tests). The exit code is non-zero when either part fails; both always run.
first=0
second=0
part1=("$VPY" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --no-loadscope-reorder --suite-part=rest tests)
part2=("$VPY" -m pytest -q -p no:cacheprovider --suite-part=shared-spark tests/spark)
if [ "${DELTAKERNEL_TEST_OVERLAP:-1}" = "1" ]; then
  log1="$(mktemp "${TMPDIR:-/tmp}/deltakernel-part1.XXXXXX")"
  echo ">> part 1 of 2 (the tests without the shared Spark sessions, on 2 workers) in the background, niced;" \
       "its output ($log1) follows part 2's"
  nice -n 10 "${part1[@]}" >"$log1" 2>&1 &
  pid1=$!
  trap 'kill "$pid1" 2>/dev/null || true' EXIT  # never leave part 1 running behind an interrupted run
  echo ">> part 2 of 2: the Spark tests on the shared sessions"
  "${part2[@]}" || second=$?
  echo ">> part 2 done; waiting for part 1"
  wait "$pid1" || first=$?
  trap - EXIT
  echo ">> part 1 of 2: the tests without the shared Spark sessions (ran during part 2)"
  cat "$log1"
  rm -f "$log1"
else
  echo ">> part 1 of 2: the tests without the shared Spark sessions, on 2 workers"
  "${part1[@]}" || first=$?
  echo ">> part 2 of 2: the Spark tests on the shared sessions"
  "${part2[@]}" || second=$?
fi
if [ "$first" -ne 0 ] || [ "$second" -ne 0 ]; then
  echo ">> FAILED (part 1 exit $first, part 2 exit $second)"
  exit 1
fi
