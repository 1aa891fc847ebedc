#!/usr/bin/env bash
# The Python suite, run twice: with the official `elasticsearch` 8 client (venv test/python/.venv,
# test/python/requirements.txt) and with the 9 client (venv test/python/.venv9,
# test/python/requirements9.txt), each with its `elasticsearch.dsl`, the eland of the same major
# and a client generated with openapi-python-client, against the API over the real stack (which
# must be up: `npm run stack -- up`, as `npm test` leaves it in .ci/run).
# - creates each venv (gitignored) and pip-installs its requirements file (pinned versions) when
#   the file differs from the one the venv was last installed from (a copy kept in the venv), so
#   a second run installs nothing;
# - starts the API with indexed fixtures (test/python/serve.ts, plain node + tsx, no vitest,
#   through test/support/fixture-api.sh) once and waits for it (60 s at most);
# - runs pytest on test/python with each venv and exits 0 only when both runs pass, else with the
#   first failing run's pytest code (5, no test collected, fails too); the API it started (and
#   only that pid) is stopped on exit, which deletes its indices and keys.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$PATH"

# "<venv> <requirements file>" per client major.
suites=("test/python/.venv test/python/requirements.txt" "test/python/.venv9 test/python/requirements9.txt")

for suite in "${suites[@]}"; do
  read -r venv requirements <<<"$suite"
  if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
  fi
  if ! cmp -s "$requirements" "$venv/installed-requirements.txt"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv/installed-requirements.txt"
  fi
done

source test/support/fixture-api.sh python

status=0
for suite in "${suites[@]}"; do
  read -r venv requirements <<<"$suite"
  client="$("$venv/bin/python" -c 'import elasticsearch; print(elasticsearch.__versionstr__)')"
  echo "test/python: elasticsearch $client ($venv)"
  run=0
  CHAINSIFT_PY_INFO="$CHAINSIFT_FIXTURE_INFO" "$venv/bin/python" -m pytest -q -p no:cacheprovider test/python || run=$?
  if [[ $status -eq 0 && $run -ne 0 ]]; then status=$run; fi
done
exit "$status"
