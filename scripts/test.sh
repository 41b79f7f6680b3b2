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
# The whole suite in two parts (docs/decisions.md, "CI time: the suite in two parts"):
# 1. everything without Spark - the install suites (other Pythons, clean installs, older pyspark lines: mostly
#    downloads and subprocesses) included - on both cores (pytest-xdist; a test file stays on one worker: its
#    module fixtures, servers and tables are made once);
# 2. the Spark tests, in one process (one shared SparkSession per kind).
echo ">> part 1 of 2: the tests without Spark, on 2 workers"
first=0
"$VPY" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --ignore=tests/spark tests || first=$?
echo ">> part 2 of 2: the Spark tests"
second=0
"$VPY" -m pytest -q -p no:cacheprovider tests/spark || second=$?
if [ "$first" -ne 0 ] || [ "$second" -ne 0 ]; then
  echo ">> FAILED (part 1 exit $first, part 2 exit $second)"
  exit 1
fi
