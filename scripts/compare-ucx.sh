#!/usr/bin/env bash
# compare-ucx.sh - HComm4J's UCX transport against UCX's own ucx_perftest, HComm4J's TCP transport and Open MPI over
# UCX (--mca pml ucx), in one sitting.
#
#   scripts/compare-ucx.sh [ROUNDS]        default 3;  UCX_TLS=tcp by default (UCX_TLS=posix,cma ... to change)
#
# Each round runs, one after the other (these machines are shared and noisy: only ratios measured side by side mean
# anything):
#   ucx_perftest tag_lat, tag_bw and ucp_put_bw (2 processes on loopback) at the p2p sizes below, with UCX's defaults,
#   and tag_lat and tag_bw again with the settings HComm4J's UCX transport gives UCX (UcxEngine.settings: TCP reads of
#   256 KiB; over TCP alone no rendezvous), so that like is compared with like as well;
#   ./hcomm perf p2p -n 2 with HCOMM_TRANSPORT=ucx, then tcp, then shm (pingpong: one-way latency, stream);
#   ./hcomm perf allreduce -n 2 with HCOMM_TRANSPORT=ucx, then tcp, then shm (the default on one host);
#   ../shared/peers' mpi_bench p2p and allreduce under mpirun --mca pml ucx (if mpirun is installed; Open MPI 4.1 takes
#   UCX's TCP only with pml_ucx_tls/pml_ucx_devices any).
# Then prints a Markdown table of the medians over the rounds, with the ratios the issue asks for.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PEERS=${PEERS:-$ROOT/../shared/peers}
ROUNDS=${1:-3}
export UCX_TLS=${UCX_TLS:-tcp}
SIZES="8 64 512 4096 32768 262144 2097152"
OUT=$(mktemp -d)
# what HComm4J's UCX transport sets unless the user does (UcxEngine.settings)
TUNED="UCX_TCP_RX_SEG_SIZE=256K"
if [ -z "$(echo "$UCX_TLS" | tr ',' '\n' | tr -d ' ' | grep -v -x -e tcp -e self)" ]; then TUNED="$TUNED UCX_RNDV_THRESH=inf"; fi
command -v ucx_perftest >/dev/null || { echo "compare-ucx: ucx_perftest missing (apt-get install ucx-utils)" >&2; exit 1; }
perftest() { # test size iterations -> "size latency_us MB/s" (the Final line: average latency, average bandwidth)
  local port=$((20000 + RANDOM % 10000))
  ucx_perftest -t "$1" -s "$2" -n "$3" -p $port >/dev/null 2>&1 &
  local server=$!
  sleep 0.5
  { ucx_perftest 127.0.0.1 -t "$1" -s "$2" -n "$3" -p $port 2>/dev/null || true; } | awk -v s="$2" '$1=="Final:" {print s, $4, $6}'
  wait $server || true
}
MPI=""
if command -v mpirun >/dev/null && command -v mpicc >/dev/null; then
  MPI=${TMPDIR:-/tmp}/hcomm-peers-build/mpi_bench
  mkdir -p "$(dirname "$MPI")"
  mpicc -O2 -o "$MPI" "$PEERS/mpi_bench.c"
fi
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS: ucx_perftest (UCX_TLS=$UCX_TLS)" >&2
  for s in $SIZES; do
    n=$(( s >= 262144 ? 1000 : 10000 ))
    perftest tag_lat "$s" $n | awk '{print "perftest lat", $1, $2}'
    perftest tag_bw "$s" $n | awk '{print "perftest bw", $1, $3 * 1048576 / 1e9}'
    perftest ucp_put_bw "$s" $n | awk '{print "perftest put", $1, $3 * 1048576 / 1e9}'
    # the settings HComm4J's UCX transport gives UCX (UcxEngine.settings), for perftest too: like against like
    (export $TUNED; perftest tag_lat "$s" $n) | awk '{print "tuned lat", $1, $2}'
    (export $TUNED; perftest tag_bw "$s" $n) | awk '{print "tuned bw", $1, $3 * 1048576 / 1e9}'
  done >> "$OUT/samples.txt"
  for t in ucx tcp shm; do
    echo "round $r/$ROUNDS: hcomm perf p2p, HCOMM_TRANSPORT=$t" >&2
    HCOMM_TRANSPORT=$t "$ROOT/hcomm" perf p2p -n 2 -b 8 -e 2M -f 8 --format csv --check 2>/dev/null |
      awk -F, -v t=$t '$1=="p2p" && $2=="pingpong" {print t " lat", $4, $9} $1=="p2p" && $2=="stream" {print t " bw", $4, $11}
                       $1=="p2p" && $12 > 0 {print "WRONG", $4, $12 > "/dev/stderr"}' >> "$OUT/samples.txt"
    echo "round $r/$ROUNDS: hcomm perf allreduce, HCOMM_TRANSPORT=$t" >&2
    HCOMM_TRANSPORT=$t "$ROOT/hcomm" perf allreduce -n 2 -b 4K -e 16M -f 16 --format csv --check 2>/dev/null |
      awk -F, -v t=$t '$1=="allreduce" {print t " allreduce", $4, $9} $1=="allreduce" && $12 > 0 {print "WRONG", $4, $12 > "/dev/stderr"}' >> "$OUT/samples.txt"
  done
  if [ -n "$MPI" ]; then
    echo "round $r/$ROUNDS: Open MPI, --mca pml ucx" >&2
    mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS "$MPI" p2p 1.5 2>/dev/null |
      awk '/^pingpong/ {u=$3; n=$2*((u=="KiB")?1024:(u=="MiB")?1048576:1); for(i=1;i<=NF;i++) if($i=="=") {print "mpi lat", n, $(i+1); break}}
           /^bandwidth/ {u=$3; n=$2*((u=="KiB")?1024:(u=="MiB")?1048576:1); for(i=1;i<=NF;i++) if($i=="=") {print "mpi bw", n, $(i+1); break}}' >> "$OUT/samples.txt" || true
    mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS "$MPI" allreduce 1.5 2>/dev/null |
      awk '/^allreduce np=/ {v=$3; u=$4; b=(u=="MiB")?v*1048576:(u=="KiB")?v*1024:v;
           for(i=1;i<=NF;i++){ if($i ~ /^time_med=/){t=$i; sub("time_med=","",t); if(t=="") t=$(i+1)} } print "mpi allreduce", b, t}' >> "$OUT/samples.txt" || true
  fi
done
med() { # who kind size
  awk -v w="$1" -v k="$2" -v s="$3" '$1==w && $2==k && $3==s {print $4}' "$OUT/samples.txt" | sort -g |
    awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a=="-"||b=="-"||b==0) print "-"; else printf "%.2f", a/b }'; }
echo "UCX_TLS=$UCX_TLS, medians of $ROUNDS rounds ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "perftest: UCX's defaults; perftest tuned: with $TUNED (what HComm4J's UCX transport sets)."
echo
echo "| size | ucx_perftest tag_lat (us) | perftest tuned (us) | hcomm ucx pingpong (us) | hcomm tcp pingpong (us) | hcomm shm pingpong (us) | ucx / perftest | ucx / tuned | Open MPI pml ucx (us) |"
echo "|---|---|---|---|---|---|---|---|---|"
for s in $SIZES; do
  p=$(med perftest lat $s); q=$(med tuned lat $s); u=$(med ucx lat $s); t=$(med tcp lat $s)
  echo "| $s | $p | $q | $u | $t | $(med shm lat $s) | $(ratio "$u" "$p") | $(ratio "$u" "$q") | $(med mpi lat $s) |"
done
echo
echo "| size | ucx_perftest tag_bw (GB/s) | perftest tuned (GB/s) | ucp_put_bw (GB/s) | hcomm ucx stream (GB/s) | hcomm tcp stream (GB/s) | hcomm shm stream (GB/s) | perftest / ucx | tuned / ucx |"
echo "|---|---|---|---|---|---|---|---|---|"
for s in $SIZES; do
  p=$(med perftest bw $s); q=$(med tuned bw $s); u=$(med ucx bw $s)
  echo "| $s | $p | $q | $(med perftest put $s) | $u | $(med tcp bw $s) | $(med shm bw $s) | $(ratio "$p" "$u") | $(ratio "$q" "$u") |"
done
echo
echo "| size | hcomm allreduce ucx (us) | hcomm allreduce tcp (us) | hcomm allreduce shm (us) | ucx / tcp | Open MPI pml ucx (us) |"
echo "|---|---|---|---|---|---|"
for s in $(awk '$1=="ucx" && $2=="allreduce" {print $3}' "$OUT/samples.txt" | sort -n -u); do
  u=$(med ucx allreduce $s); t=$(med tcp allreduce $s)
  echo "| $s | $u | $t | $(med shm allreduce $s) | $(ratio "$u" "$t") | $(med mpi allreduce $s) |"
done
echo
echo "Open MPI --mca pml ucx, its own sizes (medians): $(for k in lat bw allreduce; do
  for s in $(awk -v k=$k '$1=="mpi" && $2==k {print $3}' "$OUT/samples.txt" | sort -n -u); do printf '%s %s B: %s; ' $k $s "$(med mpi $k $s)"; done; done)"
rm -rf "$OUT"
