#!/usr/bin/env bash
# The README's test command (`npm test`): brings the real stack up (Kafka, Elasticsearch,
# schema registry, Redis; downloads once), then runs every suite (unit, integration, e2e) with
# vitest and prints a closing line "tests: N passed, N failed, N skipped".
# Extra arguments go to vitest, e.g. `npm test -- test/unit`.
# Set CHAINSIFT_SKIP_STACK=1 to use services you started yourself.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${CHAINSIFT_SKIP_STACK:-0}" != "1" ]]; then
  bash scripts/stack.sh up
fi
# Chromium for the console's browser test (test/e2e/console.test.ts; it calls the script too).
bash scripts/browser.sh >/dev/null || echo "scripts/browser.sh: no chromium; the console's browser test will fail" >&2

results="$(mktemp -t chainsift-vitest-XXXXXX.json)"
trap 'rm -f "$results"' EXIT
status=0
npx vitest run --reporter=default --reporter=json --outputFile="$results" "$@" || status=$?

node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
  if (r.numTotalTests === 0) { console.error("no test ran"); process.exit(1); }
' "$results" || status=1
exit "$status"
