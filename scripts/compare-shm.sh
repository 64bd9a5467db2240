#!/usr/bin/env bash
# compare-shm.sh - one host, shared memory: HComm4J against Open MPI, in one sitting (issue 4's bars).
#
#   scripts/compare-shm.sh [ROUNDS]        default 3
#
# Alternates, ROUNDS times:
#   ../shared/peers/run-mpi.sh sm 2 4      (Open MPI's default shared memory; ping-pong and all-reduce)
#   HCOMM_TRANSPORT=shm ./hcomm perf allreduce -n N --mem M -b 4K -e 256M -f 4 --timing median --check
#       for N in 2 4 and M in pool (registered buffers: zero copy), pool with --in-place, and heap (Java arrays: staged)
#   HCOMM_TRANSPORT=shm ./hcomm perf p2p --algo pingpong -b 8 -e 4K -f 512 --iters 200000 --jit-warmup on --check
#       (--jit-warmup on: with --iters the JIT warm-up is off by default, and this latency wants it, as it always had)
# then prints the medians over the rounds and the ratios: all-reduce busbw HComm4J / Open MPI (higher is better),
# all-reduce time and ping-pong latency HComm4J / Open MPI (lower is better), and memcpy_bench's 2-thread rate M,
# from which the memory-bandwidth limit of a 2-rank all-reduce is M / 2 (see docs/performance.md).
# Both sides time alike: a barrier before each call, the slowest rank's time per call, the median over calls.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PEERS=${PEERS:-$ROOT/../shared/peers}
ROUNDS=${1:-3}
OUT=$(mktemp -d)
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS: Open MPI" >&2
  "$PEERS/run-mpi.sh" sm 2 4 > "$OUT/mpi$r.txt" 2>&1
  for np in 2 4; do
    for mem in pool inplace heap; do
      echo "round $r/$ROUNDS: HComm4J $np ranks, $mem" >&2
      if [ "$mem" = inplace ]; then args=(--mem pool --in-place); else args=(--mem "$mem"); fi
      HCOMM_TRANSPORT=shm "$ROOT/hcomm" perf allreduce -n "$np" "${args[@]}" -b 4K -e 256M -f 4 --timing median \
        --format csv --check > "$OUT/hcomm$r-$np-$mem.txt" 2>/dev/null
    done
  done
  echo "round $r/$ROUNDS: HComm4J ping-pong" >&2
  HCOMM_TRANSPORT=shm "$ROOT/hcomm" perf p2p --algo pingpong -b 8 -e 4K -f 512 --iters 200000 --jit-warmup on --format csv --check \
    > "$OUT/hcommp2p$r.txt" 2>/dev/null
done
# one line per sample: who what ranks bytes value
for f in "$OUT"/mpi*.txt; do
  awk -F, '$1=="allreduce" && $2=="openmpi-sm" {print "mpi", "t", $3, $4, $9; print "mpi", "bw", $3, $4, $11}' "$f"
  awk '/^### openmpi-sm p2p/{on=1;next} /^###/{on=0}
       on && /^pingpong/ {u=$3; n=$2*((u=="KiB")?1024:1); for(i=1;i<=NF;i++) if($i=="=") {print "mpi", "lat", 2, n, $(i+1); break}}
       /^memcpy +threads=2/ {for(i=1;i<=NF;i++) if($i=="median") print "mpi", "memcpy2", 0, 0, $(i+1)}' "$f"
done > "$OUT/samples.txt"
for f in "$OUT"/hcomm[0-9]*.txt; do
  mem=${f##*-}; mem=${mem%.txt}
  awk -F, -v m="$mem" '$1=="allreduce" {print "hcomm-" m, "t", $3, $4, $9; print "hcomm-" m, "bw", $3, $4, $11}
                       $1=="allreduce" && $12 > 0 {print "WRONG", $3, $4, $12 > "/dev/stderr"}' "$f"
done >> "$OUT/samples.txt"
for f in "$OUT"/hcommp2p*.txt; do
  awk -F, '$1=="p2p" && $2=="pingpong" {print "hcomm-pool", "lat", 2, $4, $9}
           $1=="p2p" && $12 > 0 {print "WRONG", $4, $12 > "/dev/stderr"}' "$f"
done >> "$OUT/samples.txt"
med() { # who what ranks bytes
  awk -v w="$1" -v k="$2" -v n="$3" -v b="$4" '$1==w && $2==k && $3==n && $4==b {print $5}' "$OUT/samples.txt" | sort -g |
    awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a=="-"||b=="-"||b==0) print "-"; else printf "%.2f", a/b }'; }
m2=$(med mpi memcpy2 0 0)
echo "memcpy, 2 threads (median of $ROUNDS): $m2 GB/s; limit of a 2-rank all-reduce: $(awk -v m="$m2" 'BEGIN{printf "%.1f", m/2}') GB/s busbw"
echo
echo "| ranks | size | Open MPI time (us) | Open MPI busbw | pool time (us) | pool busbw | pool/MPI busbw | pool/MPI time | pool in place busbw | in place/MPI busbw | heap time (us) | heap busbw | heap/MPI busbw |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for np in 2 4; do
  for b in 4096 1048576 16777216 67108864 268435456; do
    mt=$(med mpi t $np $b); mb=$(med mpi bw $np $b)
    pt=$(med hcomm-pool t $np $b); pb=$(med hcomm-pool bw $np $b)
    ht=$(med hcomm-heap t $np $b); hb=$(med hcomm-heap bw $np $b)
    ib=$(med hcomm-inplace bw $np $b)
    size=$(awk -v b=$b 'BEGIN{ if (b>=1048576) printf "%d MiB", b/1048576; else printf "%d KiB", b/1024 }')
    echo "| $np | $size | $mt | $mb | $pt | $pb | $(ratio "$pb" "$mb")x | $(ratio "$pt" "$mt") | $ib | $(ratio "$ib" "$mb")x | $ht | $hb | $(ratio "$hb" "$mb")x |"
  done
done
echo
echo "| ping-pong, 2 ranks | Open MPI one-way (us) | HComm4J one-way (us) | HComm4J / Open MPI |"
echo "|---|---|---|---|"
for b in 8 4096; do
  m=$(med mpi lat 2 $b); h=$(med hcomm-pool lat 2 $b)
  echo "| $b B | $m | $h | $(ratio "$h" "$m") |"
done
echo
echo "Per round (memory bandwidth moves between rounds on a shared machine): memcpy on 2 threads M, the 2-rank limit M / 2,"
echo "and the 2-rank busbw as a share of that round's limit"
echo
echo "| round | memcpy 2 threads (GB/s) | limit (GB/s) | pool 64 MiB | pool 256 MiB | in place 64 MiB | in place 256 MiB |"
echo "|---|---|---|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
  m=$(awk '/^memcpy +threads=2/ {for(i=1;i<=NF;i++) if($i=="median") print $(i+1)}' "$OUT/mpi$r.txt")
  share() { awk -F, -v b="$2" -v m="$m" '$1=="allreduce" && $4==b && m>0 {printf "%.1f (%.0f %%)", $11, 100*$11/(m/2)}' "$1"; }
  echo "| $r | $m | $(awk -v m="$m" 'BEGIN{printf "%.1f", m/2}') | $(share "$OUT/hcomm$r-2-pool.txt" 67108864) |" \
    "$(share "$OUT/hcomm$r-2-pool.txt" 268435456) | $(share "$OUT/hcomm$r-2-inplace.txt" 67108864) |" \
    "$(share "$OUT/hcomm$r-2-inplace.txt" 268435456) |"
done
echo
echo "raw output: $OUT" >&2
