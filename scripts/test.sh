#!/usr/bin/env bash
# Install everything the tests need and run the whole suite (unit, conformance, differential).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
echo ">> installing deltakernel with test extras"
"$VPY" -m pip install -q -e ".[test]" 2>&1 | grep -v -i "warning" || true
exec "$VPY" -m pytest -q -p no:cacheprovider "$@"
