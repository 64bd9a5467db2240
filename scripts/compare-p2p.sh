#!/usr/bin/env bash
# compare-p2p.sh - point-to-point over TCP, HComm4J against Open MPI, in one sitting.
#
#   scripts/compare-p2p.sh [ROUNDS]        default 3
#
# Alternates ../shared/peers/run-mpi.sh tcp 2 and `./hcomm perf p2p --format csv --check` ROUNDS times
# (these machines are shared and noisy: only ratios measured side by side mean anything), then prints a
# Markdown table of the medians over the rounds and the ratio HComm4J / Open MPI for each row:
# latency rows (time, lower is better) and bandwidth rows (GB/s, higher is better).
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PEERS=${PEERS:-$ROOT/../shared/peers}
ROUNDS=${1:-3}
OUT=$(mktemp -d)
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS: Open MPI" >&2
  "$PEERS/run-mpi.sh" tcp 2 > "$OUT/mpi$r.txt" 2>&1
  echo "round $r/$ROUNDS: HComm4J" >&2
  "$ROOT/hcomm" perf p2p --format csv --check > "$OUT/hcomm$r.txt" 2>/dev/null
done
# one line per sample: kind size value   (kind: lat in us, bw in GB/s)
for r in $(seq 1 "$ROUNDS"); do
  awk '/^### openmpi-tcp p2p/{on=1;next} /^###/{on=0}
       on && /^pingpong/ {u=$3; n=$2*((u=="KiB")?1024:(u=="MiB")?1048576:1); for(i=1;i<=NF;i++) if($i=="=") {print "mpi lat", n, $(i+1); break}}
       on && /^bandwidth/ {u=$3; n=$2*((u=="KiB")?1024:(u=="MiB")?1048576:1); for(i=1;i<=NF;i++) if($i=="=") {print "mpi bw", n, $(i+1); break}}' "$OUT/mpi$r.txt"
  awk -F, '$1=="p2p" && $2=="pingpong" {print "hcomm lat", $4, $9}
           $1=="p2p" && $2=="stream"   {print "hcomm bw", $4, $11}
           $1=="p2p" && $12 > 0 {print "WRONG", $4, $12 > "/dev/stderr"}' "$OUT/hcomm$r.txt"
done > "$OUT/samples.txt"
echo "| metric | size | Open MPI (median of $ROUNDS) | HComm4J (median of $ROUNDS) | HComm4J / Open MPI |"
echo "|---|---|---|---|---|"
for kind in lat bw; do
  for size in $(awk -v k=$kind '$2==k {print $3}' "$OUT/samples.txt" | sort -n -u); do
    med() { awk -v w="$1" -v k=$kind -v s="$size" '$1==w && $2==k && $3==s {print $4}' "$OUT/samples.txt" | sort -g |
            awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
    m=$(med mpi); h=$(med hcomm)
    if [ $kind = lat ]; then label="one-way latency (us)"; else label="bandwidth (GB/s)"; fi
    ratio=$(awk -v a="$h" -v b="$m" 'BEGIN{ if (a=="-"||b=="-"||b==0) print "-"; else printf "%.2f", a/b }')
    echo "| $label | $size | $m | $h | $ratio |"
  done
done
echo
echo "raw output: $OUT" >&2
