#!/usr/bin/env bash
# netns-links.sh - two "hosts" on this machine joined by rate-limited "NICs": network namespaces and veth pairs.
#
#   scripts/netns-links.sh up RATE [RATE ...]      # e.g. up 2gbit 1gbit: namespaces hcl-0, hcl-1, one veth pair per RATE;
#                                                  # RATE/BURST (e.g. 8mbit/1600) sets the token bucket too (bytes);
#                                                  # MTU=9000 in the environment: jumbo frames (default 1500)
#   scripts/netns-links.sh rate NIC RATE           # change NIC's rate both ways mid-run (tc qdisc change ... tbf)
#   scripts/netns-links.sh down NIC | up-nic NIC   # take NIC down (a failed link) or bring it back
#   scripts/netns-links.sh run HOST CMD [ARGS...]  # CMD as rank HOST (0 or 1) of a 2-rank job, one rank per namespace
#   scripts/netns-links.sh job PER CMD [ARGS...]   # CMD as all 2*PER ranks (PER in each namespace); waits; rank 0's
#                                                  # output on stdout, every rank's in $OUT/rank<r>.log
#   scripts/netns-links.sh show | teardown
#
# NIC i is interface nic<i> in both namespaces: 10.79.<i>.1/24 in hcl-0, 10.79.<i>.2/24 in hcl-1, each end shaped
# with `tbf rate RATE burst 256kb latency 50ms` (tbf is what this machine has; no netem). `run` sets RANK, WORLD_SIZE=2,
# LOCAL_RANK=0, LOCAL_WORLD_SIZE=1, NODE_RANK, MASTER_ADDR=10.79.0.1 (the store on nic0 of hcl-0), MASTER_PORT
# ($MASTER_PORT or 29600) and HCOMM_SECRET ($HCOMM_SECRET or a fixed test secret); other HCOMM_* variables pass
# through. Nothing is added to the root namespace. Needs root and iproute2.
set -euo pipefail
NS=(hcl-0 hcl-1)
usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
[ "$(id -u)" = 0 ] || { echo "netns-links.sh: needs root (ip netns)" >&2; exit 1; }
command -v ip >/dev/null && command -v tc >/dev/null || { echo "netns-links.sh: needs ip and tc (iproute2)" >&2; exit 1; }

shape() { # NS NIC RATE[/BURST] add|change
  local rate=${3%%/*} burst=256kb
  [ "$rate" = "$3" ] || burst=${3#*/}
  ip netns exec "$1" tc qdisc "$4" dev "$2" root tbf rate "$rate" burst "$burst" latency 50ms
}

case $1 in
up)
  shift
  [ $# -ge 1 ] || usage
  for n in "${NS[@]}"; do ip netns add "$n"; ip -n "$n" link set lo up; done
  i=0
  for rate in "$@"; do
    ip link add "nic$i" netns "${NS[0]}" type veth peer name "nic$i" netns "${NS[1]}"
    for h in 0 1; do
      ip -n "${NS[$h]}" addr add "10.79.$i.$((h + 1))/24" dev "nic$i"
      [ -z "${MTU:-}" ] || ip -n "${NS[$h]}" link set "nic$i" mtu "$MTU"
      ip -n "${NS[$h]}" link set "nic$i" up
      shape "${NS[$h]}" "nic$i" "$rate" add
    done
    i=$((i + 1))
  done ;;
rate) [ $# -eq 3 ] || usage; for h in 0 1; do shape "${NS[$h]}" "nic$2" "$3" change; done ;;
down) [ $# -eq 2 ] || usage; for h in 0 1; do ip -n "${NS[$h]}" link set "nic$2" down; done ;;
up-nic) [ $# -eq 2 ] || usage; for h in 0 1; do ip -n "${NS[$h]}" link set "nic$2" up; done ;;
run)
  [ $# -ge 3 ] || usage
  h=$2; shift 2
  exec ip netns exec "${NS[$h]}" env RANK="$h" WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 NODE_RANK="$h" \
    MASTER_ADDR=10.79.0.1 MASTER_PORT="${MASTER_PORT:-29600}" HCOMM_SECRET="${HCOMM_SECRET:-netns-links-test-secret}" "$@" ;;
job)
  [ $# -ge 3 ] || usage
  per=$2; shift 2
  out=${OUT:-$(mktemp -d)}
  mkdir -p "$out"
  pids=()
  for r in $(seq 0 $((2 * per - 1))); do
    h=$((r / per))
    ip netns exec "${NS[$h]}" env RANK="$r" WORLD_SIZE=$((2 * per)) LOCAL_RANK=$((r % per)) LOCAL_WORLD_SIZE="$per" \
      NODE_RANK="$h" MASTER_ADDR=10.79.0.1 MASTER_PORT="${MASTER_PORT:-29600}" \
      HCOMM_SECRET="${HCOMM_SECRET:-netns-links-test-secret}" "$@" > "$out/rank$r.log" 2>&1 &
    pids+=($!)
  done
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  cat "$out/rank0.log"
  exit $rc ;;
show) for n in "${NS[@]}"; do echo "== $n"; ip -n "$n" -br addr; ip netns exec "$n" tc qdisc show | grep tbf || true; done ;;
teardown) for n in "${NS[@]}"; do ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null || true; ip netns del "$n" 2>/dev/null || true; done ;;
*) usage ;;
esac
