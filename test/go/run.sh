#!/usr/bin/env bash
# The Go suite: the official go-elasticsearch v8 client (esapi and typed API, test/go/go.mod)
# against the API over the real stack (which must be up: `npm run stack -- up`, as `npm test`
# leaves it in .ci/run).
# - builds in its own directory: GOPATH caches as usual (the module cache), the test binary in a
#   temporary directory; nothing is written into the work tree;
# - starts the API with indexed fixtures (test/support/fixture-api.sh) and runs `go test -v`,
#   exiting with its code (a build failure or a failing test fails the run).
set -euo pipefail
cd "$(dirname "$0")/../.."
# /usr/local/go/bin: where the official Go distribution installs, for shells whose PATH lacks it.
export PATH="$PWD/node_modules/.bin:$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "test/go: go is not installed" >&2; exit 1; }

# Build first (downloads the modules once), so the API is only started for a binary that compiles.
bin="$(mktemp -d -t chainsift-go-bin-XXXXXX)"
(cd test/go && go test -c -o "$bin/estest.test" .)

source test/support/fixture-api.sh go
trap 'fixture_stop_api; rm -rf "$bin"' EXIT

status=0
(cd test/go && "$bin/estest.test" -test.v -test.count=1) || status=$?
if [[ $status -eq 0 ]]; then echo "ok  	chainsift/test/go"; else echo "FAIL	chainsift/test/go"; fi
exit "$status"
