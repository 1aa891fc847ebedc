#!/usr/bin/env bash
# The Java suite: the official elasticsearch-java 8.19 client (RestClientTransport, Jackson;
# test/java/pom.xml) against the API over the real stack (which must be up: `npm run stack -- up`,
# as `npm test` leaves it in .ci/run).
# - builds with Maven in its own directory, test/java/target (gitignored); dependencies are
#   downloaded once into ~/.m2;
# - starts the API with indexed fixtures (test/support/fixture-api.sh), then compiles and runs the
#   tests in one Maven run (`mvn test`: Surefire's summary closes the output), exiting with Maven's
#   code (a compilation failure or a failing test fails the run).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$PATH"
command -v mvn >/dev/null || { echo "test/java: mvn is not installed" >&2; exit 1; }
mvn_args=(-B -ntp -Dstyle.color=never -f test/java/pom.xml)

source test/support/fixture-api.sh java

status=0
mvn "${mvn_args[@]}" test -Dsurefire.useFile=false -DtrimStackTrace=true || status=$?
exit "$status"
