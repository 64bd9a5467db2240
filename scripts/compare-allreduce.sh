#!/usr/bin/env bash
# compare-allreduce.sh - all-reduce over TCP, HComm4J against Open MPI, in one sitting.
#
#   scripts/compare-allreduce.sh [ROUNDS] [NP...]       default: 3 rounds, 2 and 4 ranks
#
# Alternates ../shared/peers/run-mpi.sh tcp NP and
#   HCOMM_TRANSPORT=tcp ./hcomm perf allreduce -n NP -b 4K -e 256M -f 4 --timing median --format csv --check
# ROUNDS times. Both sides time alike: a barrier before each call, the slowest rank's time per call, the
# median over calls (mpi_bench.c's way), float32 sum, out of place, each rank bound to CPUs of its own
# (mpirun binds to cores for 2 ranks; hcomm perf --cpu-bind auto). Whole runs on these machines come out
# in a fast or a slow mode (kernel TCP copy cost differs per run for both libraries), so one run of each
# says little: this prints the median over the rounds of each side and the ratio of busbw
# HComm4J / Open MPI, for the sizes both measure (4 KiB, 1, 16, 64, 256 MiB).
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PEERS=${PEERS:-$ROOT/../shared/peers}
ROUNDS=${1:-3}
shift || true
NPS=("$@")
[ ${#NPS[@]} -eq 0 ] && NPS=(2 4)
OUT=$(mktemp -d)
for r in $(seq 1 "$ROUNDS"); do
  for np in "${NPS[@]}"; do
    echo "round $r/$ROUNDS, $np ranks: Open MPI" >&2
    "$PEERS/run-mpi.sh" tcp "$np" > "$OUT/mpi$r-$np.txt" 2>&1
    echo "round $r/$ROUNDS, $np ranks: HComm4J" >&2
    HCOMM_TRANSPORT=tcp "$ROOT/hcomm" perf allreduce -n "$np" -b 4K -e 256M -f 4 --timing median --format csv --check \
      > "$OUT/hcomm$r-$np.txt" 2>/dev/null
  done
done
# one line per sample: who ranks bytes time_us busbw
for f in "$OUT"/mpi*.txt; do
  awk -F, '$1=="allreduce" && $2=="openmpi-tcp" {print "mpi", $3, $4, $9, $11}' "$f"
done > "$OUT/samples.txt"
for f in "$OUT"/hcomm*.txt; do
  awk -F, '$1=="allreduce" {print "hcomm", $3, $4, $9, $11} $1=="allreduce" && $12 > 0 {print "WRONG", $3, $4, $12 > "/dev/stderr"}' "$f"
done >> "$OUT/samples.txt"
med() { # who ranks bytes column(4=time 5=busbw)
  awk -v w="$1" -v n="$2" -v b="$3" -v c="$4" '$1==w && $2==n && $3==b {print $c}' "$OUT/samples.txt" | sort -g |
    awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}
echo "| ranks | size | Open MPI time (us) | Open MPI busbw (GB/s) | HComm4J time (us) | HComm4J busbw (GB/s) | busbw HComm4J / Open MPI |"
echo "|---|---|---|---|---|---|---|"
for np in "${NPS[@]}"; do
  for b in 4096 1048576 16777216 67108864 268435456; do
    mt=$(med mpi "$np" $b 4); mb=$(med mpi "$np" $b 5); ht=$(med hcomm "$np" $b 4); hb=$(med hcomm "$np" $b 5)
    ratio=$(awk -v a="$hb" -v c="$mb" 'BEGIN{ if (a=="-"||c=="-"||c==0) print "-"; else printf "%.2f", a/c }')
    size=$(awk -v b=$b 'BEGIN{ if (b>=1048576) printf "%d MiB", b/1048576; else printf "%d KiB", b/1024 }')
    echo "| $np | $size | $mt | $mb | $ht | $hb | $ratio |"
  done
done
echo
echo "raw output: $OUT" >&2
