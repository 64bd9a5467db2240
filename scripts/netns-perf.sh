#!/usr/bin/env bash
# netns-perf.sh - `hcomm perf` as a job over network namespaces: several "hosts" on this machine.
#
#   scripts/netns-perf.sh HOSTS RANKS_PER_HOST <hcomm perf arguments...>      (as root)
#   e.g. scripts/netns-perf.sh 2 2 allreduce -b 4K -e 16M -f 16 --algo hierarchical
#
# Creates HOSTS network namespaces, namespace i with eth0 at 10.77.1.(10+i)/24, joined by veth pairs to a
# bridge in one more namespace (nothing is added to the root namespace, so its interfaces and firewall stay
# out of it), starts RANKS_PER_HOST rank processes of `hcomm perf` in each (ranks numbered host by host;
# rank 0 serves the store on its namespace's address), prints rank 0's output, and removes processes and
# namespaces (with their veths and the bridge) on exit, also on Ctrl-C or failure.
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
SW=hcp-$TAG-s
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for h in $(seq 0 $((HOSTS - 1))); do
    for p in $(ip netns pids "hcp-$TAG-$h" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "hcp-$TAG-$h" 2>/dev/null || true
  done
  ip netns del "$SW" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

ip netns add "$SW"
ip -n "$SW" link add br0 type bridge
ip -n "$SW" link set br0 up
for h in $(seq 0 $((HOSTS - 1))); do
  ns=hcp-$TAG-$h
  ip netns add "$ns"
  ip -n "$SW" link add "v$h" type veth peer name eth0 netns "$ns"
  ip -n "$SW" link set "v$h" master br0
  ip -n "$SW" link set "v$h" up
  ip -n "$ns" addr add "10.77.1.$((10 + h))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
done

N=$((HOSTS * PER))
PORT=29500
OUT=$(mktemp -d)
SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
for r in $(seq 0 $((N - 1))); do
  h=$((r / PER))
  ip netns exec "hcp-$TAG-$h" env RANK=$r WORLD_SIZE=$N LOCAL_RANK=$((r % PER)) LOCAL_WORLD_SIZE=$PER NODE_RANK=$h \
    MASTER_ADDR=10.77.1.10 MASTER_PORT=$PORT HCOMM_SECRET=$SECRET \
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
