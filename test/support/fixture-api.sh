#!/usr/bin/env bash
# Sourced by the client suites' run.sh (test/python, test/go, test/java): starts the API over
# indexed fixture records (test/python/serve.ts: its own index and Redis prefixes and token) and
# waits for it (60 s at most). Afterwards `$CHAINSIFT_FIXTURE_INFO` names the JSON file
# `{url, token, chainPath, records, webhooks, fixtures}` (test/python/serve.ts says what each is); on exit the API it started (and only that pid) is stopped,
# which deletes its indices and keys. Expects the repository root as the working directory and
# the real stack up (`npm run stack -- up`). Usage: `source test/support/fixture-api.sh <label>`.
fixture_label="${1:-suite}"
fixture_work="$(mktemp -d -t "chainsift-${fixture_label}-XXXXXX")"
export CHAINSIFT_FIXTURE_INFO="$fixture_work/info.json"
node --import tsx test/python/serve.ts "$CHAINSIFT_FIXTURE_INFO" >"$fixture_work/api.log" 2>&1 &
fixture_api_pid=$!
fixture_stop_api() {
  kill -TERM "$fixture_api_pid" 2>/dev/null || true
  wait "$fixture_api_pid" 2>/dev/null || true
  rm -rf "$fixture_work"
}
trap fixture_stop_api EXIT

for _ in $(seq 1 120); do
  [[ -s "$CHAINSIFT_FIXTURE_INFO" ]] && break
  if ! kill -0 "$fixture_api_pid" 2>/dev/null; then
    echo "test/$fixture_label: the API did not start:" >&2
    cat "$fixture_work/api.log" >&2
    exit 1
  fi
  sleep 0.5
done
if [[ ! -s "$CHAINSIFT_FIXTURE_INFO" ]]; then
  echo "test/$fixture_label: the API did not start within 60 s" >&2
  cat "$fixture_work/api.log" >&2
  exit 1
fi
