#!/usr/bin/env bash
# The Python suite: the official `elasticsearch` 8 client, `elasticsearch.dsl`, and a client
# generated with openapi-python-client, against the API over the real stack (which must be up:
# `npm run stack -- up`, as `npm test` leaves it in .ci/run).
# - creates the venv test/python/.venv (gitignored) and pip-installs test/python/requirements.txt
#   (pinned versions);
# - starts the API with indexed fixtures (test/python/serve.ts, plain node + tsx, no vitest,
#   through test/support/fixture-api.sh) and waits for it (60 s at most);
# - runs pytest on test/python and exits with pytest's code (5, no test collected, fails too);
#   the API it started (and only that pid) is stopped on exit, which deletes its indices and keys.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$PATH"

venv=test/python/.venv
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r test/python/requirements.txt

source test/support/fixture-api.sh python

status=0
CHAINSIFT_PY_INFO="$CHAINSIFT_FIXTURE_INFO" "$venv/bin/python" -m pytest -q -p no:cacheprovider test/python || status=$?
exit "$status"
