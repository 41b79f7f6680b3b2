# Shared by scripts/demo.sh and scripts/test.sh: find Python >= 3.10, make .venv, check Java.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY=""
for cand in python3.13 python3.12 python3.11 python3.10 python3; do
  # probe quietly: a pyenv shim exists for versions it does not have and prints "command not found"
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' >/dev/null 2>&1; then
    PY="$(command -v "$cand")"; break
  fi
done
if [ -z "$PY" ]; then echo "error: Python >= 3.10 is required" >&2; exit 1; fi
if [ ! -x .venv/bin/python ]; then
  echo ">> creating .venv with $PY"
  "$PY" -m venv .venv
fi
VPY="$ROOT/.venv/bin/python"
"$VPY" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
if command -v java >/dev/null 2>&1; then
  echo ">> java: $(java -version 2>&1 | head -1)"
else
  echo ">> note: no java on PATH (only the Spark engine needs it; Java 17 recommended)"
fi
