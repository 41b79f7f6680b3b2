#!/usr/bin/env bash
# The main job: install deltakernel (+ Spark and demo data) and run the bronze -> silver -> gold pipeline
# on local Spark and the embedded engine (examples/pipeline.py). Needs Java 17 for Spark.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
echo ">> installing deltakernel (+ demo extras)"
"$VPY" -m pip install -q -e ".[demo]" 2>&1 | grep -v -i "warning" || true
if ! command -v java >/dev/null 2>&1; then
  echo "error: the pipeline runs on local Spark and needs Java (17 recommended) on PATH" >&2
  echo "       the Spark-free demo still runs: $VPY examples/demo.py" >&2
  exit 1
fi
exec "$VPY" examples/pipeline.py "$@"
