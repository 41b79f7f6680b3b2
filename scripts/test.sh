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
# 1. everything without Spark on both cores (pytest-xdist; a test file stays on one worker: its module fixtures,
#    servers and tables are made once);
# 2. the Spark tests (one shared SparkSession per kind) and the suites that build venvs (other Pythons, clean
#    installs, older pyspark lines) in one process.
SERIAL=(tests/spark tests/pythons tests/spark_versions)
IGNORE=()
for d in "${SERIAL[@]}"; do IGNORE+=(--ignore="$d"); done
echo ">> part 1 of 2: the tests without Spark, on 2 workers"
first=0
"$VPY" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile "${IGNORE[@]}" tests || first=$?
echo ">> part 2 of 2: Spark and the install suites"
second=0
"$VPY" -m pytest -q -p no:cacheprovider "${SERIAL[@]}" || second=$?
if [ "$first" -ne 0 ] || [ "$second" -ne 0 ]; then
  echo ">> FAILED (part 1 exit $first, part 2 exit $second)"
  exit 1
fi
