#!/usr/bin/env bash
# run.sh - the raw same-host ping-pong floor of Java on this machine, no library (issue 11, item 5).
#
#   scripts/shm-floor/run.sh [ITERS]     default 2000000 round trips per round, 5 rounds
#
# Two JVMs ping-pong 8 bytes through a mapping in /dev/shm, in two layouts: "two" (the data, then a release store of a
# tail index on its own cache line: ShmRing's layout) and "one" (a sequence stamp in the data's own line, stored last).
# Prints the one-way latency of each round (rank 0). Compare with Open MPI's and `hcomm perf p2p` in the same minute:
# this VM's cross-vCPU latency changes by 3x between runs.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
JAVA_HOME=${JAVA_HOME:-$(ls -d /usr/lib/jvm/temurin-2[5-9]* /usr/lib/jvm/*-2[5-9]* 2>/dev/null | head -1)}
[ -x "$JAVA_HOME/bin/java" ] || { echo "run.sh: no JDK >= 25 found (set JAVA_HOME)" >&2; exit 1; }
OUT=$(mktemp -d)
"$JAVA_HOME/bin/javac" -d "$OUT" "$HERE/PingPong.java"
for mode in two one; do
  rm -f "/dev/shm/pp-$mode"
  "$JAVA_HOME/bin/java" -cp "$OUT" PingPong "$mode" 1 "${1:-2000000}" &
  sleep 0.3
  "$JAVA_HOME/bin/java" -cp "$OUT" PingPong "$mode" 0 "${1:-2000000}"
  wait
  rm -f "/dev/shm/pp-$mode"
done
