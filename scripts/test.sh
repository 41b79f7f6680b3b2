#!/usr/bin/env bash
# Install everything the tests need and run the whole suite (unit, conformance, differential).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
echo ">> installing deltakernel with test extras"
# --upgrade eager: an existing .venv moves to the newest versions the ranges allow, as a fresh clone's install does
"$VPY" -m pip install -q --upgrade --upgrade-strategy eager -e ".[test]" 2>&1 | grep -v -i "warning" || true
# best effort: Azurite (Azure Blob emulator, 127.0.0.1 only) for tests/unit/test_storage_azure_gcs.py; those tests skip without it
if [ ! -x .ci-tools/node_modules/.bin/azurite-blob ] && command -v npm >/dev/null 2>&1; then
  echo ">> installing azurite into .ci-tools (optional)"
  timeout 300 npm install --prefix .ci-tools --no-audit --no-fund --loglevel=error azurite@3 >/dev/null 2>&1 \
    || echo ">> note: azurite install failed; Azure emulator tests will be skipped"
fi
exec "$VPY" -m pytest -q -p no:cacheprovider "$@"
