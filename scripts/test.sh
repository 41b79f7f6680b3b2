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
# The whole suite in three processes at the same time (docs/decisions.md, "CI time: the suite in two parts" and
# "CI time: the parts overlap"):
# 1. everything without Spark sessions - the install suites (other Pythons, clean installs, older pyspark lines:
#    downloads and subprocesses) included - on both cores (pytest-xdist; a test file stays on one worker: its
#    module fixtures, servers and tables are made once; files with long-running tests start first:
#    tests/conftest.py), in the background under `nice`: it fills the core the Spark tests leave idle and yields
#    when they want both;
# 2. the Spark tests on the shared sessions, in one process (one SparkSession per kind), in the foreground: the
#    longest part, mostly one busy thread at a time (py4j / gRPC round trips);
# 3. the Spark tests that start JVMs / servers of their own (marker `own_jvm`: a standalone cluster, fresh
#    sessions, a separate Connect server), one after the other in the background at normal priority (their jobs
#    have timeouts and want CPU), off part 2's path.
# The background parts' output is kept in files and printed after part 2's. DELTAKERNEL_TEST_OVERLAP=0 runs the
# same three one after the other. The exit code is non-zero when any part fails; all always run.
q=("$VPY" -m pytest -q -p no:cacheprovider)
part1=("${q[@]}" -n 2 --dist loadfile --no-loadscope-reorder --suite-part=rest tests)
part2=("${q[@]}" --suite-part=shared-spark tests/spark)
part3=("${q[@]}" --suite-part=own-jvm tests/spark)
first=0
second=0
third=0
if [ "${DELTAKERNEL_TEST_OVERLAP:-1}" = "1" ]; then
  log1="$(mktemp "${TMPDIR:-/tmp}/deltakernel-part1.XXXXXX")"
  log3="$(mktemp "${TMPDIR:-/tmp}/deltakernel-part3.XXXXXX")"
  echo ">> part 1 of 3 (the tests without Spark sessions, on 2 workers) in the background, niced: $log1"
  nice -n 10 "${part1[@]}" >"$log1" 2>&1 &
  pid1=$!
  echo ">> part 3 of 3 (the Spark tests with JVMs of their own) in the background: $log3"
  "${part3[@]}" >"$log3" 2>&1 &
  pid3=$!
  trap 'kill "$pid1" "$pid3" 2>/dev/null || true' EXIT  # never leave a part running behind an interrupted run
  echo ">> part 2 of 3: the Spark tests on the shared sessions"
  "${part2[@]}" || second=$?
  echo ">> part 2 done; waiting for parts 1 and 3"
  wait "$pid3" || third=$?
  wait "$pid1" || first=$?
  trap - EXIT
  echo ">> part 3 of 3: the Spark tests with JVMs of their own (ran during part 2)"
  cat "$log3"
  echo ">> part 1 of 3: the tests without Spark sessions (ran during part 2)"
  cat "$log1"
  rm -f "$log1" "$log3"
else
  echo ">> part 1 of 3: the tests without Spark sessions, on 2 workers"
  "${part1[@]}" || first=$?
  echo ">> part 2 of 3: the Spark tests on the shared sessions"
  "${part2[@]}" || second=$?
  echo ">> part 3 of 3: the Spark tests with JVMs of their own"
  "${part3[@]}" || third=$?
fi
if [ "$first" -ne 0 ] || [ "$second" -ne 0 ] || [ "$third" -ne 0 ]; then
  echo ">> FAILED (part 1 exit $first, part 2 exit $second, part 3 exit $third)"
  exit 1
fi
