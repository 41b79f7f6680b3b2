#!/usr/bin/env bash
# Build the user guide (mkdocs.yml, docs/) into site/: installs the docs extra into .venv first, as test.sh does.
# Offline: nothing is fetched at build time and the site opens from disk (site/index.html).
# `bash scripts/docs.sh serve` serves it on http://127.0.0.1:8000 with live reload instead.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
echo ">> installing deltakernel with the docs extra"
"$VPY" -m pip install -q -e ".[docs]" 2>&1 | grep -v -i "warning" || true
export NO_MKDOCS_2_WARNING=1
if [ "${1:-}" = "serve" ]; then
  exec "$VPY" -m mkdocs serve -a 127.0.0.1:8000
fi
"$VPY" -m mkdocs build --strict "$@"
echo ">> built: $ROOT/site/index.html"
