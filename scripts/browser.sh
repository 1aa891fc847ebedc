#!/usr/bin/env bash
# Makes sure a Chromium for the console's browser tests (test/e2e/console.test.ts, bench/console.ts)
# is installed: Debian's `chromium` package, apt-installed when missing (needs root), the way
# scripts/stack.sh installs redis-server. Idempotent and quick when present; prints the binary's path.
# Playwright (the `playwright-core` npm package, no browser download) drives it.
set -euo pipefail

find_chromium() {
  command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null || true
}

bin="$(find_chromium)"
if [[ -z "$bin" ]]; then
  if [[ "$(id -u)" != "0" ]]; then
    echo "chromium is not installed and this is not root: apt-get install -y chromium" >&2
    exit 1
  fi
  echo "installing Debian's chromium (apt-get)..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 || {
    apt-get update >/dev/null
    apt-get install -y --no-install-recommends chromium >/dev/null
  }
  bin="$(find_chromium)"
fi
[[ -n "$bin" ]] || { echo "chromium not found after install" >&2; exit 1; }
echo "$bin"
