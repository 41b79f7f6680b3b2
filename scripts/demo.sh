#!/usr/bin/env bash
# The main job: install deltakernel and run the demo pipeline (read a real Delta table:
# history, schema, a filtered query, time travel).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
echo ">> installing deltakernel (+ demo extras)"
"$VPY" -m pip install -q -e ".[demo]" 2>&1 | grep -v -i "warning" || true
exec "$VPY" examples/demo.py "$@"
