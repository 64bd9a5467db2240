#!/usr/bin/env bash
# minimal-app.sh - checks that HComm4J works as a dependency: installs hcomm-core (and the parent pom) into the local
# Maven repository, builds minimal-app/ (a user's project with its own pom, outside this build) against it, and runs
# the application as a 2-rank job of two plain JVMs (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, HCOMM_SECRET: what
# torchrun or `hcomm launch` would set). Each rank checks every element of an all-reduce; exits non-zero on any failure.
#
#   scripts/minimal-app.sh                    install, build, run
#   SKIP_INSTALL=1 scripts/minimal-app.sh     use what `mvn install` put in the local repository already
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=common.sh
. "$ROOT/scripts/common.sh"
hcomm_build_env || exit 1

if [ -z "${SKIP_INSTALL:-}" ]; then
  echo "minimal-app: mvn install of hcomm-core and the parent pom (tests skipped)" >&2
  # (Maven 3.8 prints terminal reset codes even in batch mode: strip them)
  (cd "$ROOT" && mvn -B -q -ntp install -DskipTests -Dhcomm.skipDocJars=true -pl hcomm-core -am) 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >&2
fi
APP=$ROOT/minimal-app
echo "minimal-app: building $APP against the installed artifact" >&2
(cd "$APP" && mvn -B -q -ntp package) 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >&2

# a port nothing listens on (a refused connection), for rank 0's store
for _ in $(seq 50); do
  port=$((20000 + RANDOM % 40000))
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
done
secret=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')  # 48 hex digits: secrets under 16 bytes are refused
out=$(mktemp -d)
pids=()
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port HCOMM_SECRET=$secret \
    timeout 120 "$JAVA" --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector \
    -cp "$APP/target/classes:$APP/target/lib/*" com.example.Main >"$out/rank$r.log" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
for r in 0 1; do sed "s/^/[rank $r] /" "$out/rank$r.log"; done
for r in 0 1; do
  grep -q "^rank $r of 2: all-reduce of 65536 floats, 0 wrong$" "$out/rank$r.log" || { echo "minimal-app: rank $r did not report a correct all-reduce" >&2; rc=1; }
done
rm -rf "$out"
[ "$rc" = 0 ] && echo "minimal-app: OK (2 ranks, every element checked)" >&2
exit "$rc"
