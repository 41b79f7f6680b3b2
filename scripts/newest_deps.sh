#!/usr/bin/env bash
# Weekly-style drift check: a fresh venv with the newest version of every dependency that pyproject.toml's ranges
# allow (the `test` extra, transitive dependencies included, the index asked again), then the suite on it - so a
# new release inside a range (like sqlglot 30.31's new keywords) fails here before a user's fresh install meets it.
# Usage: bash scripts/newest_deps.sh [pytest args]   (default: the whole suite without the install matrix,
# which builds its own venvs; e.g. `bash scripts/newest_deps.sh tests/unit -x` for a quick core)
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
"$VPY" -m pip install -q "uv>=0.13,<0.14" 2>&1 | grep -v -i "warning" || true
UV="$ROOT/.venv/bin/uv"
VENV="$ROOT/.ci-tools/venvs/newest"
rm -rf "$VENV"
echo ">> resolving the newest allowed versions into $VENV"
"$UV" venv -q --python "$PY" "$VENV"
# --refresh: ask the index again (no cached metadata); --find-links: pyspark wheels built earlier by
# tests/pythons (pyspark is an sdist only; a newer release than those is still resolved and built)
mkdir -p .ci-tools/wheelhouse
"$UV" pip install -q --refresh --find-links .ci-tools/wheelhouse --python "$VENV/bin/python" -e ".[test]"
"$UV" pip freeze --python "$VENV/bin/python" | grep -v "^-e " > "$VENV/versions.txt"
echo ">> $(wc -l < "$VENV/versions.txt") packages; the ones in pyproject.toml:"
grep -i -E "^($(sed -n '/^dependencies = \[/,/^\]/p;/^test = \[/,/^\]/p' pyproject.toml \
  | grep -o '^    "[A-Za-z0-9_.-]*' | tr -d ' "' | paste -sd'|'))==" "$VENV/versions.txt" | sed 's/^/   /' || true
set -- -m "newest_deps or not (pythons or installs or pyspark_minors)" "$@"
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
