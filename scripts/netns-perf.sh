#!/usr/bin/env bash
# netns-perf.sh - `hcomm perf` as a job over network namespaces: several "hosts" on this machine.
#
#   scripts/netns-perf.sh HOSTS RANKS_PER_HOST <hcomm perf arguments...>      (as root)
#   e.g. scripts/netns-perf.sh 2 2 allreduce -b 4K -e 16M -f 16 --algo hierarchical
#
# Creates HOSTS network namespaces joined by veth pairs to a bridge in a private 10.77.x.0/24 (the bridge
# 10.77.x.1, namespace i 10.77.x.(10+i)), starts RANKS_PER_HOST rank processes of `hcomm perf` in each
# (ranks numbered host by host; rank 0 serves the store on its namespace's address), prints rank 0's
# output, and removes processes, namespaces, veths and bridge on exit (also on Ctrl-C or failure).
# Ranks of one namespace share a host id (shared memory between them), ranks of different ones do not
# (TCP over the veths). Extra environment (HCOMM_ALGO, HCOMM_TRANSPORT ...) passes through to the ranks.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
if [ $# -lt 3 ]; then sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; fi
HOSTS=$1
PER=$2
shift 2
[ "$(id -u)" = 0 ] || { echo "netns-perf.sh: needs root (ip netns)" >&2; exit 1; }
command -v ip >/dev/null || { echo "netns-perf.sh: needs ip (iproute2)" >&2; exit 1; }

"$ROOT/hcomm" --version >/dev/null # builds the jar first, outside the namespaces

TAG=$$
BR=hcpb$TAG
SUBNET=""
for i in $(seq 0 249); do
  s=$(( (TAG + i) % 250 + 1 ))
  if ! ip -4 -o addr show | grep -q "10\.77\.$s\."; then SUBNET=$s; break; fi
done
[ -n "$SUBNET" ] || { echo "netns-perf.sh: no free 10.77.x.0/24" >&2; exit 1; }
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for h in $(seq 0 $((HOSTS - 1))); do
    for p in $(ip netns pids "hcp-$TAG-$h" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "hcp-$TAG-$h" 2>/dev/null || true
    ip link del "hcp${TAG}v$h" 2>/dev/null || true
  done
  ip link del "$BR" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

ip link add "$BR" type bridge
ip addr add "10.77.$SUBNET.1/24" dev "$BR"
ip link set "$BR" up
for h in $(seq 0 $((HOSTS - 1))); do
  ns=hcp-$TAG-$h
  ip netns add "$ns"
  ip link add "hcp${TAG}v$h" type veth peer name "hcq${TAG}v$h"
  ip link set "hcq${TAG}v$h" netns "$ns"
  ip link set "hcp${TAG}v$h" master "$BR"
  ip link set "hcp${TAG}v$h" up
  ip -n "$ns" addr add "10.77.$SUBNET.$((10 + h))/24" dev "hcq${TAG}v$h"
  ip -n "$ns" link set "hcq${TAG}v$h" up
  ip -n "$ns" link set lo up
done

N=$((HOSTS * PER))
PORT=$((20000 + TAG % 20000))
OUT=$(mktemp -d)
SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
for r in $(seq 0 $((N - 1))); do
  h=$((r / PER))
  ip netns exec "hcp-$TAG-$h" env RANK=$r WORLD_SIZE=$N LOCAL_RANK=$((r % PER)) LOCAL_WORLD_SIZE=$PER NODE_RANK=$h \
    MASTER_ADDR=10.77.$SUBNET.10 MASTER_PORT=$PORT HCOMM_SECRET=$SECRET \
    "$ROOT/hcomm" perf "$@" > "$OUT/rank$r.txt" 2>&1 &
  PIDS+=($!)
done
status=0
for i in "${!PIDS[@]}"; do
  wait "${PIDS[$i]}" || { status=$?; echo "netns-perf.sh: rank $i exited with $status:" >&2; tail -20 "$OUT/rank$i.txt" >&2; }
done
PIDS=()
echo "# $HOSTS namespaces x $PER ranks, HCOMM_ALGO=${HCOMM_ALGO:-}, hcomm perf $*"
cat "$OUT/rank0.txt"
rm -rf "$OUT"
exit $status
