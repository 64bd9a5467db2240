#!/usr/bin/env bash
# run.sh - the raw loopback TCP round trip of Java on this machine, no library (issue 12's TCP latency bars).
#
#   scripts/tcp-floor/run.sh [ITERS]     default 200000 round trips per round, 3 rounds per mode
#
# Two JVMs ping-pong 56 bytes over 127.0.0.1 with TCP_NODELAY, spinning on non-blocking channels, then blocked in
# read. Compare with `HCOMM_TRANSPORT=tcp ./hcomm perf get -b 8 -e 8` and Open MPI in the same minutes.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
JAVA_HOME=${JAVA_HOME:-$(ls -d /usr/lib/jvm/temurin-2[5-9]* /usr/lib/jvm/*-2[5-9]* 2>/dev/null | head -1)}
[ -x "$JAVA_HOME/bin/java" ] || { echo "run.sh: no JDK >= 25 found (set JAVA_HOME)" >&2; exit 1; }
PORT=${PORT:-40111}
for mode in spin block; do
  "$JAVA_HOME/bin/java" "$HERE/TcpPing.java" server "$mode" "$PORT" "${1:-200000}" &
  sleep 1.5
  "$JAVA_HOME/bin/java" "$HERE/TcpPing.java" client "$mode" "$PORT" "${1:-200000}"
  wait
done
