#!/usr/bin/env bash
# chainsift backing services without Docker: Kafka, Elasticsearch, schema registry, Redis.
#
# Usage (from anywhere; `npm run stack -- <command>` inside the repo):
#   scripts/stack.sh up     [service...]          download (once), start, wait until ready
#   scripts/stack.sh down   [--wipe] [service...] stop (TERM, KILL after 30 s); --wipe deletes state
#   scripts/stack.sh status [service...]          one line each; exit 0 if all up, 3 otherwise
#   scripts/stack.sh logs   [-f] [service...]     tail -n 100 of the service log(s)
#   scripts/stack.sh env                          export lines for chainsift: eval "$(... env)"
#   scripts/stack.sh kafka <tool> [args...]       Kafka's own CLI against the stack's broker; tools:
#                                                 consumer-groups, topics, get-offsets (docs/stack.md)
# Services: redis, kafka, elasticsearch (alias es), registry (aliases apicurio, schema-registry).
# Without service arguments a command applies to all four.
#
# Where each service comes from (nothing but Maven Central and Debian apt is needed):
#   redis          Debian package `redis-server` (7.0.x), installed with apt-get if missing;
#                  we start our own process, never the system service.
#   kafka          Apache Kafka 3.9.1, KRaft single node (broker+controller): the jars of
#                  org.apache.kafka:kafka_2.13:3.9.1 (+ reload4j logging), resolved with Maven from
#                  scripts/stack/kafka-pom.xml, started as `java kafka.Kafka server.properties`.
#                  Its command-line tools (`kafka` command): org.apache.kafka:kafka-tools:3.9.1 from
#                  scripts/stack/kafka-tools-pom.xml, in a folder of their own (dist/kafka-tools-3.9.1).
#                  CHAINSIFT_KAFKA_VERSION=4.x.y: Kafka 4 instead (kafka4-pom.xml, kafka4-tools-pom.xml;
#                  log4j 2), its own dist/ folders; data of the other major is refused (down --wipe kafka).
#   elasticsearch  Elasticsearch 8.19.4, Maven Central artifact
#                  org.elasticsearch.distribution.integ-test-zip:elasticsearch:8.19.4:zip
#                  (minimal distribution, no bundled JDK: runs on the system Java 17; security off).
#                  Elasticsearch refuses to run as root, so as root it runs as system user chainsift-es.
#   registry       Apicurio Registry 3.0.9 (io.apicurio:apicurio-registry-app:3.0.9:tar.gz:all),
#                  storage in an H2 database file under run/registry/data/ (Apicurio's default is
#                  in memory: after a restart the schema ids would start again at 1 while Kafka
#                  keeps records that carry the old ids, which then decode with the wrong schema
#                  or not at all); chainsift talks to its Confluent-compatible API at
#                  /apis/ccompat/v7. Global compatibility is set to BACKWARD after every start.
# Requirements: java 17+ and mvn on PATH; curl/unzip/redis-server are apt-installed when missing
# (needs root). Everything binds to 127.0.0.1 only.
#
# Environment (defaults in brackets):
#   CHAINSIFT_STACK_HOME [$HOME/.cache/chainsift/stack]  dist/ = downloads, run/<service>/ = state
#   CHAINSIFT_KAFKA_VERSION [3.9.1]  or 4.<minor>.<patch> (Kafka 4, e.g. 4.1.2)
#   KAFKA_PORT [9092]  KAFKA_CONTROLLER_PORT [9093]  ES_PORT [9200]  ES_TRANSPORT_PORT [9300]
#   REGISTRY_PORT [8081]  REDIS_PORT [6379]  STACK_TIMEOUT [180] seconds to wait for readiness
#   KAFKA_HEAP_OPTS [-Xms512m -Xmx512m]  ES_JAVA_OPTS [-Xms1g -Xmx1g]  REGISTRY_HEAP_OPTS [-Xmx512m]
# See docs/stack.md.

set -euo pipefail
set +m # no job control: background launches must not be process-group leaders (see setsid below)
umask 022

# Kafka 3.9.1 by default; CHAINSIFT_KAFKA_VERSION=4.<minor>.<patch> selects a Kafka 4 broker from Maven
# Central instead (issue 37: tried with 4.1.2; see docs/stack.md).
readonly KAFKA_DEFAULT_VERSION=3.9.1
KAFKA_VERSION=${CHAINSIFT_KAFKA_VERSION:-$KAFKA_DEFAULT_VERSION}
[[ $KAFKA_VERSION == "$KAFKA_DEFAULT_VERSION" || $KAFKA_VERSION =~ ^4\.[0-9]+\.[0-9]+$ ]] || {
  printf 'stack.sh: CHAINSIFT_KAFKA_VERSION must be %s or 4.<minor>.<patch> (e.g. 4.1.2), not %s\n' "$KAFKA_DEFAULT_VERSION" "$KAFKA_VERSION" >&2
  exit 2
}
readonly KAFKA_VERSION
# Kafka 4 logs through log4j 2, 3.9 through log4j 1 (reload4j): which configuration flag and file.
if [[ $KAFKA_VERSION == 4.* ]]; then readonly KAFKA_MAJOR=4; else readonly KAFKA_MAJOR=3; fi
readonly ES_VERSION=8.19.4
readonly APICURIO_VERSION=3.0.9
readonly ES_USER=chainsift-es
readonly ALL_SERVICES=(redis kafka elasticsearch registry)

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
readonly SCRIPT_DIR
if ((KAFKA_MAJOR == 4)); then
  readonly KAFKA_POM="$SCRIPT_DIR/stack/kafka4-pom.xml" KAFKA_TOOLS_POM="$SCRIPT_DIR/stack/kafka4-tools-pom.xml"
else
  readonly KAFKA_POM="$SCRIPT_DIR/stack/kafka-pom.xml" KAFKA_TOOLS_POM="$SCRIPT_DIR/stack/kafka-tools-pom.xml"
fi

# kafka_log_flag FILE_WITHOUT_EXTENSION: the JVM flag that makes Kafka log with FILE.properties (log4j 1)
# or FILE.log4j2.properties (log4j 2, Kafka 4).
kafka_log_flag() {
  if ((KAFKA_MAJOR == 4)); then echo "-Dlog4j2.configurationFile=file:$1.log4j2.properties"; else echo "-Dlog4j.configuration=file:$1.properties"; fi
}

STACK_HOME=${CHAINSIFT_STACK_HOME:-${HOME:?HOME is not set}/.cache/chainsift/stack}
KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
ES_PORT=${ES_PORT:-9200}
ES_TRANSPORT_PORT=${ES_TRANSPORT_PORT:-9300}
REGISTRY_PORT=${REGISTRY_PORT:-8081}
REDIS_PORT=${REDIS_PORT:-6379}
STACK_TIMEOUT=${STACK_TIMEOUT:-180}
KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xms512m -Xmx512m}
ES_JAVA_OPTS=${ES_JAVA_OPTS:--Xms1g -Xmx1g}
REGISTRY_HEAP_OPTS=${REGISTRY_HEAP_OPTS:--Xmx512m}

# ----------------------------------------------------------------------------- helpers

say() { printf '%s\n' "$*"; }
die() {
  printf 'stack: error: %s\n' "$*" >&2
  exit 1
}

usage() {
  sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

for _var in KAFKA_PORT KAFKA_CONTROLLER_PORT ES_PORT ES_TRANSPORT_PORT REGISTRY_PORT REDIS_PORT STACK_TIMEOUT; do
  [[ ${!_var} =~ ^[0-9]+$ ]] || die "$_var must be a number (got '${!_var}')"
done
unset _var

[[ $STACK_HOME == /* ]] || STACK_HOME="$PWD/$STACK_HOME" # absolute: the generated configs need it
readonly STACK_HOME
readonly DIST="$STACK_HOME/dist" RUN="$STACK_HOME/run"
readonly KAFKA_HOME="$DIST/kafka-$KAFKA_VERSION"
readonly KAFKA_TOOLS_HOME="$DIST/kafka-tools-$KAFKA_VERSION"
readonly ES_HOME="$DIST/elasticsearch-$ES_VERSION"
readonly REGISTRY_HOME="$DIST/apicurio-registry-$APICURIO_VERSION"
readonly REGISTRY_JAR="$REGISTRY_HOME/apicurio-registry-app-$APICURIO_VERSION-runner.jar"
readonly CCOMPAT_URL="http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7"

is_root() { [[ $EUID -eq 0 ]]; }

canonical_service() {
  case $1 in
    redis) echo redis ;;
    kafka) echo kafka ;;
    elasticsearch | es) echo elasticsearch ;;
    registry | apicurio | schema-registry) echo registry ;;
    *) die "unknown service '$1' (expected: ${ALL_SERVICES[*]})" ;;
  esac
}

# Fills the global array SERVICES from arguments (all services when none given), deduplicated,
# in the canonical order.
SERVICES=()
select_services() {
  local wanted=() s c
  if (($# == 0)); then
    wanted=("${ALL_SERVICES[@]}")
  else
    for s in "$@"; do wanted+=("$(canonical_service "$s")"); done
  fi
  SERVICES=()
  for c in "${ALL_SERVICES[@]}"; do
    for s in "${wanted[@]}"; do
      if [[ $s == "$c" ]]; then
        SERVICES+=("$c")
        break
      fi
    done
  done
}

svc_dir() { echo "$RUN/$1"; }
pid_file() { echo "$RUN/$1/pid/$1.pid"; }
ports_file() { echo "$RUN/$1/pid/ports"; } # the ports the running process was started with

log_file() {
  case $1 in
    redis) echo "$RUN/redis/logs/redis.log" ;;
    kafka) echo "$RUN/kafka/logs/kafka.log" ;;
    elasticsearch) echo "$RUN/elasticsearch/logs/chainsift.log" ;; # <cluster.name>.log
    registry) echo "$RUN/registry/logs/registry.log" ;;
  esac
}

svc_ports() {
  case $1 in
    redis) echo "$REDIS_PORT" ;;
    kafka) echo "$KAFKA_PORT $KAFKA_CONTROLLER_PORT" ;;
    elasticsearch) echo "$ES_PORT $ES_TRANSPORT_PORT" ;;
    registry) echo "$REGISTRY_PORT" ;;
  esac
}

svc_url() {
  case $1 in
    redis) echo "redis://127.0.0.1:$REDIS_PORT" ;;
    kafka) echo "127.0.0.1:$KAFKA_PORT" ;;
    elasticsearch) echo "http://127.0.0.1:$ES_PORT" ;;
    registry) echo "$CCOMPAT_URL" ;;
  esac
}

redis_version() {
  if command -v redis-server >/dev/null 2>&1; then
    redis-server --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p'
  else
    echo "?"
  fi
}

svc_version() {
  case $1 in
    redis) redis_version ;;
    kafka) echo "$KAFKA_VERSION" ;;
    elasticsearch) echo "$ES_VERSION" ;;
    registry) echo "$APICURIO_VERSION" ;;
  esac
}

# A string that must appear in the command line of the service's process, so a recycled pid
# (or someone else's process) is never mistaken for ours.
svc_signature() {
  case $1 in
    redis) echo "redis-server 127.0.0.1:$REDIS_PORT" ;;
    kafka) echo "$RUN/kafka/config/server.properties" ;;
    elasticsearch) echo "-Des.path.home=$ES_HOME" ;;
    registry) echo "$REGISTRY_JAR" ;;
  esac
}

# Prints the pid of our running process for the service, or fails.
running_pid() {
  local svc=$1 pf pid cmdline
  pf=$(pid_file "$svc")
  [[ -f $pf ]] || return 1
  pid=$(tr -dc '0-9' <"$pf" 2>/dev/null || true)
  [[ -n $pid ]] || return 1
  [[ -r /proc/$pid/cmdline ]] || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
  [[ $cmdline == *"$(svc_signature "$svc")"* ]] || return 1
  echo "$pid"
}

# Fails (printing the recorded ports) when our running process was started with other ports
# than the ones this invocation uses.
ports_mismatch() {
  local recorded
  recorded=$(cat "$(ports_file "$1")" 2>/dev/null || true)
  if [[ -n $recorded && $recorded != "$(svc_ports "$1")" ]]; then
    echo "$recorded"
    return 0
  fi
  return 1
}

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Redis: PING over a raw socket (works without redis-cli).
redis_ping() {
  local reply
  # shellcheck disable=SC2016 # $1 is expanded by the inner bash
  reply=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf "PING\r\n" >&3
    IFS= read -r line <&3 && printf "%s" "$line"' _ "$REDIS_PORT" 2>/dev/null) || return 1
  [[ $reply == +PONG* ]]
}

# Kafka: send an ApiVersions v0 request and expect correlation id 1 and error code 0 back.
# The broker only accepts requests once it has fully started, so this is a real liveness check.
kafka_api_versions() {
  local hex
  # shellcheck disable=SC2016 # $1 is expanded by the inner bash
  hex=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf "\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\x00\x00" >&3
    head -c 10 <&3 | od -An -tx1' _ "$KAFKA_PORT" 2>/dev/null) || return 1
  hex=${hex//[$' \n']/}
  [[ ${#hex} -eq 20 && ${hex:8} == 000000010000 ]]
}

# Kafka: a real client round trip with the admin tool bundled in kafka_2.13 (TopicCommand and
# ClusterTool live in the separate kafka-tools jar): it fetches the cluster metadata and then
# queries every broker it lists; node 1 must be among them.
# Kafka 4 moved the command to the kafka-tools jar.
kafka_admin_ok() {
  local cp="$KAFKA_HOME/libs/*" class=kafka.admin.BrokerApiVersionsCommand
  if ((KAFKA_MAJOR == 4)); then cp="$KAFKA_TOOLS_HOME/libs/*" class=org.apache.kafka.tools.BrokerApiVersionsCommand; fi
  timeout 60 "$JAVA" -cp "$cp" "$(kafka_log_flag "$SCRIPT_DIR/stack/kafka-tools-log4j")" \
    "$class" --bootstrap-server "127.0.0.1:$KAFKA_PORT" \
    --command-config "$RUN/kafka/config/admin.properties" 2>/dev/null | grep -q '(id: 1 '
}

es_healthy() {
  curl -s --max-time 5 "http://127.0.0.1:$ES_PORT/_cluster/health?wait_for_status=yellow&timeout=1s" 2>/dev/null |
    grep -Eq '"status":"(green|yellow)"'
}

registry_healthy() {
  curl -sf --max-time 5 -o /dev/null "$CCOMPAT_URL/config" 2>/dev/null
}

# Cheap health check used by `status` and by `up` to decide whether a service is already fine.
svc_healthy() {
  case $1 in
    redis) redis_ping ;;
    kafka) kafka_api_versions ;;
    elasticsearch) es_healthy ;;
    registry) registry_healthy ;;
  esac
}

# --------------------------------------------------------------------------- prerequisites

APT_UPDATED=0
apt_install() {
  is_root || die "'$*' is not installed and installing it needs root: sudo apt-get install -y $*"
  command -v apt-get >/dev/null 2>&1 || die "'$*' is not installed and apt-get is not available"
  say "installing Debian package(s): $* (apt-get)"
  if ((APT_UPDATED == 0)); then
    apt-get update -qq >/dev/null || die "apt-get update failed"
    APT_UPDATED=1
  fi
  # Do not let the package start its system service (we run our own processes on our own
  # ports); only when no policy is in place already.
  local policy=/usr/sbin/policy-rc.d created_policy=0 rc=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    created_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null || rc=$?
  if ((created_policy)); then rm -f "$policy"; fi
  ((rc == 0)) || die "apt-get install $* failed (exit $rc)"
}

need_cmd() { # need_cmd <command> <debian package>
  command -v "$1" >/dev/null 2>&1 || apt_install "$2"
}

JAVA="" JAVA_HOME_DETECTED=""
find_java() {
  [[ -n $JAVA ]] && return 0
  local j major
  j=$(command -v java) || die "java not found on PATH (install Java 17: apt-get install -y openjdk-17-jre-headless)"
  JAVA=$(readlink -f "$j")
  JAVA_HOME_DETECTED=${JAVA%/bin/java}
  major=$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
  [[ $major =~ ^[0-9]+$ ]] || die "cannot determine the Java version of $JAVA"
  ((major >= 17)) || die "Java 17 or newer is required, $JAVA is Java $major"
}

need_mvn() {
  command -v mvn >/dev/null 2>&1 || die "mvn not found on PATH (install Maven: apt-get install -y maven)"
}

# Runs maven quietly in directory $1 with the remaining arguments; on failure shows its output.
run_mvn() {
  local dir=$1 logf
  shift
  logf="$dir/mvn.log"
  if ! (cd "$dir" && mvn -q -B "$@") >"$logf" 2>&1; then
    tail -n 30 "$logf" >&2
    die "maven failed: mvn $* (full log: $logf)"
  fi
}

# ------------------------------------------------------------------------------ downloads
# Each distribution is built in a temporary directory and moved into place; the marker file
# .chainsift-complete is written last, so an interrupted download is redone from scratch.

readonly MARKER=.chainsift-complete

# fetch_maven_libs <name> <pom> <home> <jar that must be there>: the runtime dependencies of the
# pom into <home>/libs; redone when the pom changes (its checksum is in the marker).
fetch_maven_libs() {
  local name=$1 pom=$2 home=$3 jar=$4 want tmp
  want="$name $KAFKA_VERSION $(cksum <"$pom")"
  if [[ -f $home/$MARKER && $(cat "$home/$MARKER") == "$want" ]]; then return 0; fi
  need_mvn
  say "downloading $name $KAFKA_VERSION jars from Maven Central -> $home"
  tmp="$DIST/.tmp-$name"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  cp "$pom" "$tmp/pom.xml"
  run_mvn "$tmp" -f pom.xml -Dkafka.version="$KAFKA_VERSION" dependency:copy-dependencies -DoutputDirectory="$tmp/libs" -DincludeScope=runtime
  [[ -f $tmp/libs/$jar ]] || die "$jar missing after download"
  rm -rf "$home"
  mv "$tmp" "$home"
  echo "$want" >"$home/$MARKER"
}

# The broker's jars, then the command-line tools' (their own folder: fetching them never touches
# the jars of a running broker).
fetch_kafka() {
  fetch_maven_libs kafka "$KAFKA_POM" "$KAFKA_HOME" "kafka_2.13-$KAFKA_VERSION.jar"
  fetch_kafka_tools
}

fetch_kafka_tools() {
  fetch_maven_libs kafka-tools "$KAFKA_TOOLS_POM" "$KAFKA_TOOLS_HOME" "kafka-tools-$KAFKA_VERSION.jar"
}

# mvn_download DIR ARTIFACT: a fresh DIR (with an empty DIR/x to unpack into) holding the Maven
# artifact (groupId:artifactId:version:type[:classifier]) copied by `mvn dependency:copy`.
mvn_download() {
  local tmp=$1 artifact=$2
  rm -rf "$tmp"
  mkdir -p "$tmp/x"
  run_mvn "$tmp" dependency:copy -Dartifact="$artifact" -DoutputDirectory="$tmp"
}

# install_unpacked FROM HOME TMP MARKER_LINE: replaces HOME by the unpacked FROM, removes the
# download folder TMP and writes MARKER_LINE to HOME/$MARKER (the "already fetched" mark).
install_unpacked() {
  local from=$1 home=$2 tmp=$3 line=$4
  rm -rf "$home"
  mv "$from" "$home"
  rm -rf "$tmp"
  echo "$line" >"$home/$MARKER"
}

fetch_elasticsearch() {
  [[ -f $ES_HOME/$MARKER ]] && return 0
  need_mvn
  need_cmd unzip unzip
  say "downloading Elasticsearch $ES_VERSION (integ-test-zip) from Maven Central -> $ES_HOME"
  local tmp="$DIST/.tmp-elasticsearch"
  mvn_download "$tmp" "org.elasticsearch.distribution.integ-test-zip:elasticsearch:$ES_VERSION:zip"
  unzip -q "$tmp/elasticsearch-$ES_VERSION.zip" -d "$tmp/x"
  [[ -x $tmp/x/elasticsearch-$ES_VERSION/bin/elasticsearch ]] || die "unexpected layout of elasticsearch-$ES_VERSION.zip"
  install_unpacked "$tmp/x/elasticsearch-$ES_VERSION" "$ES_HOME" "$tmp" "elasticsearch $ES_VERSION"
}

fetch_registry() {
  [[ -f $REGISTRY_HOME/$MARKER ]] && return 0
  need_mvn
  say "downloading Apicurio Registry $APICURIO_VERSION from Maven Central -> $REGISTRY_HOME"
  local tmp="$DIST/.tmp-registry"
  mvn_download "$tmp" "io.apicurio:apicurio-registry-app:$APICURIO_VERSION:tar.gz:all"
  tar xzf "$tmp/apicurio-registry-app-$APICURIO_VERSION-all.tar.gz" -C "$tmp/x"
  [[ -f $tmp/x/apicurio-registry-app-$APICURIO_VERSION-runner.jar ]] || die "unexpected layout of the Apicurio archive"
  install_unpacked "$tmp/x" "$REGISTRY_HOME" "$tmp" "apicurio-registry $APICURIO_VERSION"
}

fetch_redis() {
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
}

# ------------------------------------------------------------------------ start (launch)
# launch_<svc> starts the process in the background and returns at once; the pid file is
# written by the service (redis, elasticsearch) or by us (kafka, registry).
# Fd 9 (the stack lock) is closed for every daemon so it does not keep the lock held.

launch_redis() {
  local d
  d=$(svc_dir redis)
  mkdir -p "$d/data" "$d/logs" "$d/pid"
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes \
    --dir "$d/data" --pidfile "$(pid_file redis)" --logfile "$(log_file redis)" \
    --save '' --appendonly yes </dev/null >"$d/logs/startup.log" 2>&1 9>&-
}

# Kafka needs a cluster id of 22 base64url characters (16 random bytes); ids starting with
# '-' would be parsed as options, like Kafka's own Uuid.randomUuid() avoids.
kafka_cluster_id() {
  local id
  while :; do
    id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
    [[ $id == -* ]] || break
  done
  echo "$id"
}

write_kafka_config() {
  local d=$1
  cat >"$d/config/server.properties" <<EOF
# Generated by scripts/stack.sh at every start; edits are overwritten.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$d/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
EOF
  cat >"$d/config/log4j.properties" <<'EOF'
# Generated by scripts/stack.sh. Everything goes to stdout, which is redirected to logs/kafka.log.
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka=WARN
log4j.logger.org.apache.kafka=WARN
log4j.logger.kafka.server.KafkaRaftServer=INFO
EOF
  cat >"$d/config/log4j.log4j2.properties" <<'EOF'
# Generated by scripts/stack.sh (Kafka 4, log4j 2). Everything goes to stdout, which is redirected to logs/kafka.log.
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = warn
logger.apache.name = org.apache.kafka
logger.apache.level = warn
logger.raftserver.name = kafka.server.KafkaRaftServer
logger.raftserver.level = info
EOF
  cat >"$d/config/admin.properties" <<'EOF'
request.timeout.ms=5000
default.api.timeout.ms=10000
EOF
}

launch_kafka() {
  local d log
  d=$(svc_dir kafka)
  log=$(log_file kafka)
  mkdir -p "$d/data" "$d/logs" "$d/pid" "$d/config"
  write_kafka_config "$d"
  printf '\n==== %s stack.sh: starting Kafka %s\n' "$(date -Is)" "$KAFKA_VERSION" >>"$log"
  # Data written by another Kafka major is not started on: 3.9 cannot read what 4 wrote, and an
  # upgrade in place is not what a switch of CHAINSIFT_KAFKA_VERSION should do silently.
  local made="$d/data/.chainsift-kafka-major"
  if [[ -f $d/data/meta.properties ]]; then
    [[ $(cat "$made" 2>/dev/null || echo 3) == "$KAFKA_MAJOR" ]] ||
      die "the Kafka data in $d/data was written by Kafka $(cat "$made" 2>/dev/null || echo 3).x, not $KAFKA_VERSION: 'stack.sh down --wipe kafka' first, or use another CHAINSIFT_STACK_HOME"
  fi
  if [[ ! -f $d/data/meta.properties ]]; then
    # Fresh (or wiped) data dir: format it for KRaft. --ignore-formatted makes this a no-op
    # for a directory that is already formatted.
    "$JAVA" -cp "$KAFKA_HOME/libs/*" "$(kafka_log_flag "$SCRIPT_DIR/stack/kafka-tools-log4j")" \
      kafka.tools.StorageTool format -t "$(kafka_cluster_id)" -c "$d/config/server.properties" \
      --ignore-formatted >>"$log" 2>&1 9>&- || {
      tail -n 20 "$log" >&2
      die "formatting the Kafka storage directory failed"
    }
    echo "$KAFKA_MAJOR" >"$made"
  fi
  # setsid (new session: immune to the terminal's Ctrl-C/hangup) execs in place because the
  # subshell is not a process-group leader, so $! is the JVM's pid.
  # shellcheck disable=SC2086 # KAFKA_HEAP_OPTS holds several JVM options
  (cd "$d" && exec setsid nohup "$JAVA" $KAFKA_HEAP_OPTS -cp "$KAFKA_HOME/libs/*" \
    "$(kafka_log_flag "$d/config/log4j")" \
    kafka.Kafka "$d/config/server.properties") </dev/null >>"$log" 2>&1 9>&- &
  echo $! >"$(pid_file kafka)"
}

# Elasticsearch refuses to run as root: as root it runs as the system user chainsift-es,
# which needs to own its home, config, data, logs and pid directories and to be able to
# traverse every parent directory of CHAINSIFT_STACK_HOME.
es_prepare_user() {
  is_root || return 0
  if ! id -u "$ES_USER" >/dev/null 2>&1; then
    say "creating system user $ES_USER (Elasticsearch does not run as root)"
    useradd -r -M -s /usr/sbin/nologin "$ES_USER"
  fi
  # Every directory from / down to $STACK_HOME must be searchable (x) by the ES user.
  # With the default location under /root (mode 700) that is not the case: grant the ES user
  # search-only access with an ACL entry (it cannot list those directories).
  local path="" part parts
  IFS=/ read -r -a parts <<<"${STACK_HOME#/}"
  for part in "${parts[@]}"; do
    [[ -n $part ]] || continue
    path="$path/$part"
    if ! runuser -u "$ES_USER" -- test -x "$path" 2>/dev/null; then
      need_cmd setfacl acl
      say "granting $ES_USER search (x) permission on $path (ACL) so Elasticsearch can reach $STACK_HOME"
      setfacl -m "u:$ES_USER:x" "$path" ||
        die "could not grant $ES_USER access to $path; set CHAINSIFT_STACK_HOME to a directory outside it (e.g. /var/lib/chainsift/stack)"
    fi
  done
}

es_chown() { # chown -R only when needed (data can be large)
  is_root || return 0
  local p
  for p in "$@"; do
    if [[ -n $(find "$p" ! -user "$ES_USER" -print -quit 2>/dev/null) ]]; then
      chown -R "$ES_USER:" "$p"
    fi
  done
}

ES_LAUNCHER_PID=""
launch_elasticsearch() {
  local d conf
  d=$(svc_dir elasticsearch)
  conf="$d/config"
  mkdir -p "$d/data" "$d/logs" "$d/pid" "$d/tmp" "$conf"
  # Our own config directory (ES_PATH_CONF), seeded from the distribution's defaults
  # (jvm.options, log4j2.properties, ...); elasticsearch.yml is rewritten at every start.
  if [[ ! -f $conf/jvm.options ]]; then
    cp -R "$ES_HOME/config/." "$conf/"
    rm -f "$conf/elasticsearch.keystore"
  fi
  # Not set: ingest.geoip.downloader.enabled -- this distribution has no ingest-geoip module and
  # refuses to start with it ("unknown setting").
  cat >"$conf/elasticsearch.yml" <<EOF
# Generated by scripts/stack.sh at every start; edits are overwritten.
cluster.name: chainsift
node.name: node-1
network.host: 127.0.0.1
http.port: $ES_PORT
transport.port: $ES_TRANSPORT_PORT
discovery.type: single-node
xpack.security.enabled: false
path.data: $d/data
path.logs: $d/logs
action.destructive_requires_name: false
EOF
  es_chown "$ES_HOME" "$d"
  local -a cmd=(env "ES_JAVA_HOME=${ES_JAVA_HOME:-$JAVA_HOME_DETECTED}" "ES_PATH_CONF=$conf"
    "ES_TMPDIR=$d/tmp" "ES_JAVA_OPTS=$ES_JAVA_OPTS"
    "$ES_HOME/bin/elasticsearch" -d -p "$(pid_file elasticsearch)")
  if is_root; then cmd=(runuser -u "$ES_USER" -- "${cmd[@]}"); fi
  # With -d the launcher detaches once the node has started (or exits non-zero on failure).
  # Raise the open-files limit towards the 65535 ES asks for (as far as the hard limit allows).
  (cd "$d" && { ulimit -n 65535 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true; } &&
    exec setsid "${cmd[@]}") </dev/null >"$d/logs/startup.log" 2>&1 9>&- &
  ES_LAUNCHER_PID=$!
}

launch_registry() {
  local d log
  d=$(svc_dir registry)
  log=$(log_file registry)
  mkdir -p "$d/data/tmp" "$d/logs" "$d/pid"
  # A new schema database next to Kafka data written before (e.g. by a stack.sh that kept the
  # registry in memory): records of that data carry schema ids this registry does not know, or
  # reuses for other schemas.
  if [[ ! -f $d/data/registry-db.mv.db ]] && compgen -G "$(svc_dir kafka)/data/*-0" >/dev/null; then
    say "warning: the schema registry starts with an empty database while Kafka already holds records;" \
      "records written before may not decode (dead letters). For a clean state: scripts/stack.sh down --wipe" >&2
  fi
  printf '\n==== %s stack.sh: starting Apicurio Registry %s\n' "$(date -Is)" "$APICURIO_VERSION" >>"$log"
  # shellcheck disable=SC2086 # REGISTRY_HEAP_OPTS holds several JVM options
  (cd "$d/data" && exec setsid nohup "$JAVA" $REGISTRY_HEAP_OPTS \
    -Djava.io.tmpdir="$d/data/tmp" \
    -Dquarkus.http.port="$REGISTRY_PORT" -Dquarkus.http.host=127.0.0.1 \
    -Dquarkus.management.enabled=false \
    -Dapicurio.datasource.url="jdbc:h2:file:$d/data/registry-db" \
    -jar "$REGISTRY_JAR") </dev/null >>"$log" 2>&1 9>&- &
  echo $! >"$(pid_file registry)"
}

# Global compatibility BACKWARD (the Confluent client's register() relies on it).
registry_set_compat() {
  local cfg
  curl -sf --max-time 10 -X PUT -H 'Content-Type: application/json' \
    -d '{"compatibility":"BACKWARD"}' "$CCOMPAT_URL/config" >/dev/null || return 1
  cfg=$(curl -sf --max-time 10 "$CCOMPAT_URL/config") || return 1
  [[ $cfg == *'"compatibilityLevel":"BACKWARD"'* ]]
}

# ----------------------------------------------------------------------------- up / down

print_line() { # service state detail
  printf '%-14s %-11s %-7s %-40s %s\n' "$1" "$2" "$(svc_version "$1")" "$(svc_url "$1")" "$3"
}

# Prints the end of the launcher output (startup.log, rewritten at every start) and of the
# service log, from the last "==== ... starting" separator on for the logs we append to.
show_failure_logs() {
  local svc=$1 f
  for f in "$RUN/$svc/logs/startup.log" "$(log_file "$svc")"; do
    [[ -s $f ]] || continue
    # Elasticsearch echoes its log to the launcher's output until it detaches, so startup.log
    # alone is the relevant part (its main log also holds earlier runs).
    [[ $svc == elasticsearch && $f != */startup.log && -s $RUN/$svc/logs/startup.log ]] && continue
    printf -- '--- end of %s\n' "$f"
    awk '/^==== .* stack\.sh: starting / { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$f" |
      tail -n 30
  done
}

# Waits until the service is ready. Fails early when its process died.
wait_ready() {
  local svc=$1 deadline=$((SECONDS + STACK_TIMEOUT)) started=$SECONDS launcher_rc
  while ((SECONDS < deadline)); do
    case $svc in
      kafka) if kafka_api_versions && kafka_admin_ok; then return 0; fi ;;
      *) if svc_healthy "$svc"; then return 0; fi ;;
    esac
    if [[ $svc == elasticsearch && -n $ES_LAUNCHER_PID ]] && ! kill -0 "$ES_LAUNCHER_PID" 2>/dev/null; then
      launcher_rc=0
      wait "$ES_LAUNCHER_PID" || launcher_rc=$?
      ES_LAUNCHER_PID=""
      if ((launcher_rc != 0)); then
        say "elasticsearch launcher exited with status $launcher_rc"
        return 1
      fi
    fi
    if ! running_pid "$svc" >/dev/null; then
      # redis and elasticsearch write their pid file themselves, a little after launch
      if [[ $svc == elasticsearch && -n $ES_LAUNCHER_PID ]]; then
        : # launcher still running
      elif [[ $svc == redis ]] && ((SECONDS - started < 10)); then
        :
      else
        say "$svc process is not running"
        return 1
      fi
    fi
    sleep 1
  done
  say "$svc did not become ready within ${STACK_TIMEOUT}s"
  return 1
}

# Brings one service up; prints a single result line (plus the log tail on failure).
up_one() {
  local svc=$1 pid t0=$SECONDS p other
  if pid=$(running_pid "$svc"); then
    if other=$(ports_mismatch "$svc"); then
      print_line "$svc" FAILED "pid $pid is running with port(s) $other; stop it first: stack.sh down $svc"
      return 1
    fi
    if svc_healthy "$svc"; then
      if [[ $svc == registry ]] && ! registry_set_compat; then
        print_line "$svc" FAILED "could not set global compatibility to BACKWARD at $CCOMPAT_URL/config"
        return 1
      fi
      print_line "$svc" "already up" "pid $pid"
      return 0
    fi
    # Our process exists but does not answer yet: probably still starting.
  else
    rm -f "$(pid_file "$svc")" "$(ports_file "$svc")"
    for p in $(svc_ports "$svc"); do
      if port_open "$p"; then
        print_line "$svc" FAILED "port $p is already in use by a process not started by this script (see: ss -ltnp | grep :$p)"
        return 1
      fi
    done
    "launch_$svc"
    svc_ports "$svc" >"$(ports_file "$svc")"
  fi
  if ! wait_ready "$svc"; then
    print_line "$svc" FAILED "not ready; log: $(log_file "$svc")"
    show_failure_logs "$svc"
    if pid=$(running_pid "$svc"); then say "($svc is still running as pid $pid; stop it with: stack.sh down $svc)"; fi
    return 1
  fi
  if [[ $svc == registry ]] && ! registry_set_compat; then
    print_line "$svc" FAILED "could not set global compatibility to BACKWARD at $CCOMPAT_URL/config"
    return 1
  fi
  pid=$(running_pid "$svc" || echo "?")
  print_line "$svc" up "pid $pid, ready in $((SECONDS - t0))s"
}

down_one() {
  local svc=$1 pid i p
  if ! pid=$(running_pid "$svc"); then
    rm -f "$(pid_file "$svc")" "$(ports_file "$svc")"
    local note=""
    for p in $(svc_ports "$svc"); do
      if port_open "$p"; then note=" (port $p is in use by a process not started by this script; left alone)"; fi
    done
    print_line "$svc" down "was not running$note"
    return 0
  fi
  local t0=$SECONDS
  if ! kill -TERM "$pid" 2>/dev/null; then
    print_line "$svc" FAILED "cannot signal pid $pid (started by another user? run as root)"
    return 1
  fi
  while [[ -e /proc/$pid ]] && ((SECONDS - t0 < 30)); do sleep 0.5; done
  if [[ -e /proc/$pid ]]; then
    say "$svc (pid $pid) did not stop within 30s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 20; i++)); do
      [[ -e /proc/$pid ]] || break
      sleep 0.5
    done
  fi
  if [[ -e /proc/$pid ]]; then
    print_line "$svc" FAILED "pid $pid is still running"
    return 1
  fi
  rm -f "$(pid_file "$svc")" "$(ports_file "$svc")"
  print_line "$svc" stopped "was pid $pid, stopped in $((SECONDS - t0))s"
}

# Runs "<fn> <service>" for every selected service in parallel and prints each result as soon
# as it is available. Returns non-zero if any of them failed.
run_parallel() {
  local fn=$1 tmp s pid failed=0 rc
  local -A svc_of=()
  tmp=$(mktemp -d)
  for s in "${SERVICES[@]}"; do
    "$fn" "$s" >"$tmp/$s.out" 2>&1 &
    svc_of[$!]=$s
  done
  while ((${#svc_of[@]} > 0)); do
    rc=0
    wait -n -p pid "${!svc_of[@]}" || rc=$?
    s=${svc_of[$pid]}
    unset "svc_of[$pid]"
    cat "$tmp/$s.out"
    ((rc == 0)) || failed=1
  done
  rm -rf "$tmp"
  return "$failed"
}

take_lock() {
  mkdir -p "$STACK_HOME"
  exec 9>"$STACK_HOME/.lock"
  if ! flock -n 9; then
    say "another 'stack.sh up/down' is running for $STACK_HOME; waiting for it..."
    flock -w 600 9 || die "timed out waiting for the lock on $STACK_HOME/.lock"
  fi
}

cmd_up() {
  select_services "$@"
  take_lock
  local s
  for s in "${SERVICES[@]}"; do
    case $s in kafka | elasticsearch | registry) find_java ;; esac
  done
  need_cmd curl curl
  mkdir -p "$DIST" "$RUN"
  for s in "${SERVICES[@]}"; do "fetch_$s"; done # sequential: they share ~/.m2
  for s in "${SERVICES[@]}"; do
    if [[ $s == elasticsearch ]]; then es_prepare_user; fi
  done
  say "starting ${SERVICES[*]} (state in $RUN, timeout ${STACK_TIMEOUT}s)..."
  if ! run_parallel up_one; then
    die "not all services are up (see above; logs: stack.sh logs <service>)"
  fi
}

cmd_down() {
  local wipe=0 args=() a s
  for a in "$@"; do
    case $a in
      --wipe) wipe=1 ;;
      *) args+=("$a") ;;
    esac
  done
  select_services "${args[@]+"${args[@]}"}"
  take_lock
  if ! run_parallel down_one; then
    if ((wipe)); then die "not all services could be stopped; nothing was wiped"; fi
    die "not all services could be stopped"
  fi
  if ((wipe)); then
    for s in "${SERVICES[@]}"; do
      if [[ -d $RUN/$s ]]; then
        rm -rf "${RUN:?}/$s"
        say "wiped $RUN/$s"
      fi
    done
  fi
}

cmd_status() {
  select_services "$@"
  local s pid all=0 p note other
  for s in "${SERVICES[@]}"; do
    if pid=$(running_pid "$s"); then
      if other=$(ports_mismatch "$s"); then
        print_line "$s" "other ports" "pid $pid is running with port(s) $other"
        all=3
      elif svc_healthy "$s"; then
        print_line "$s" up "pid $pid"
      else
        print_line "$s" unhealthy "pid $pid (running but not answering; starting?)"
        all=3
      fi
    else
      note=""
      for p in $(svc_ports "$s"); do
        if port_open "$p"; then note="port $p is in use by a process not started by this script"; fi
      done
      print_line "$s" down "$note"
      all=3
    fi
  done
  return "$all"
}

cmd_logs() {
  local follow=0 args=() a s f files=()
  for a in "$@"; do
    case $a in
      -f | --follow) follow=1 ;;
      *) args+=("$a") ;;
    esac
  done
  select_services "${args[@]+"${args[@]}"}"
  for s in "${SERVICES[@]}"; do
    f=$(log_file "$s")
    if [[ -f $f ]]; then files+=("$f"); else say "($s: no log yet at $f)"; fi
  done
  ((${#files[@]} > 0)) || return 0
  if ((follow)); then
    tail -n 100 -F "${files[@]}"
  else
    tail -n 100 "${files[@]}"
  fi
}

# `kafka <tool> [args...]`: one of Kafka's command-line tools (the classes the official tarball's
# bin/kafka-<tool>.sh scripts run in 3.9) against the stack's broker: --bootstrap-server is added
# unless given. Fetches the tools' jars first when missing (without touching running services).
cmd_kafka() {
  local tool=${1:-} class
  (($# > 0)) && shift
  case ${tool#kafka-} in
    consumer-groups) class=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
    topics) class=org.apache.kafka.tools.TopicCommand ;;
    get-offsets) class=org.apache.kafka.tools.GetOffsetShell ;;
    *)
      printf 'usage: stack.sh kafka <consumer-groups|topics|get-offsets> [args...]\n' >&2
      printf '  e.g. stack.sh kafka consumer-groups --describe --all-groups\n       stack.sh kafka topics --list\n' >&2
      exit 2
      ;;
  esac
  find_java
  if [[ ! -f $KAFKA_TOOLS_HOME/$MARKER ]]; then
    take_lock
    mkdir -p "$DIST"
    fetch_kafka_tools >&2
    exec 9>&- # release the lock: the tool may run for long (e.g. --describe in a loop)
  fi
  local a bootstrap=(--bootstrap-server "127.0.0.1:$KAFKA_PORT")
  for a in "$@"; do
    if [[ $a == --bootstrap-server || $a == --bootstrap-server=* ]]; then bootstrap=(); fi
  done
  # The tools log WARN and above to stderr (their log4j default would be INFO on stdout).
  exec "$JAVA" -Xmx256m -cp "$KAFKA_TOOLS_HOME/libs/*" \
    "$(kafka_log_flag "$SCRIPT_DIR/stack/kafka-tools-log4j")" \
    "$class" "${bootstrap[@]}" "$@"
}

cmd_env() {
  cat <<EOF
export KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT
export ELASTICSEARCH_URL=http://127.0.0.1:$ES_PORT
export SCHEMA_REGISTRY_URL=$CCOMPAT_URL
export REDIS_URL=redis://127.0.0.1:$REDIS_PORT
EOF
}

main() {
  local command=${1:-}
  (($# > 0)) && shift
  case $command in
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    status) cmd_status "$@" ;;
    logs) cmd_logs "$@" ;;
    env) cmd_env ;;
    kafka) cmd_kafka "$@" ;;
    help | -h | --help) usage ;;
    "")
      usage >&2
      exit 2
      ;;
    *)
      printf 'stack: unknown command %s\n\n' "$command" >&2
      usage >&2
      exit 2
      ;;
  esac
}

main "$@"
