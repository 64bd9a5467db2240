#!/usr/bin/env bash
# compare-rma.sh - one-sided ops (issue 12): HComm4J's windows against Open MPI's, in one sitting.
#
#   scripts/compare-rma.sh [NP...]        default: 2 4
#
# Runs, in this order (Open MPI twice: its figures swing under load, the two runs show by how much):
#   ../shared/peers/run-rma.sh all NP...                       Open MPI sm and tcp, every op, for each NP
#   HCOMM_TRANSPORT=shm|tcp ./hcomm perf OP -n 2 --check       OP = put get accumulate fetch_and_op
#   HCOMM_TRANSPORT=shm|tcp ./hcomm perf counter -n NP --check for each NP
#   ../shared/peers/run-rma.sh all NP...
# and prints every row (CSV: algo openmpi-rma-sm|tcp, window-shm|tcp), then a table per (op, path, ranks, bytes):
# HComm4J's time and Open MPI's two, and the ratios HComm4J / Open MPI (time: lower is better). Both sides time the
# same unit: passive target (lock_all once), the op followed by a flush of the target, median over calls; the
# counter: the slowest rank's loop time / 20000. The rows keep the files they came from in $OUT (printed).
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PEERS=${PEERS:-$ROOT/../shared/peers}
NPS=("$@"); [ ${#NPS[@]} -eq 0 ] && NPS=(2 4)
OUT=${OUT:-$(mktemp -d)}
mpi() {
  echo "Open MPI run $1: run-rma.sh all ${NPS[*]} (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "$PEERS/run-rma.sh" all "${NPS[@]}" > "$OUT/mpi$1.csv" 2> "$OUT/mpi$1.err" || echo "run-rma.sh failed (see $OUT/mpi$1.err)" >&2
}
ours() { # transport op ranks
  echo "HComm4J: HCOMM_TRANSPORT=$1 ./hcomm perf $2 -n $3 --check (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  HCOMM_TRANSPORT=$1 "$ROOT/hcomm" perf "$2" -n "$3" --check --format csv > "$OUT/hcomm-$1-$2-$3.csv" 2> "$OUT/hcomm-$1-$2-$3.err" \
    || echo "hcomm perf $2 failed or found wrong data (see $OUT/hcomm-$1-$2-$3.err)" >&2
}
mpi 1
for t in shm tcp; do
  for op in put get accumulate fetch_and_op; do ours "$t" "$op" 2; done
  for np in "${NPS[@]}"; do ours "$t" counter "$np"; done
done
mpi 2
echo "# rows in $OUT" >&2
cat "$OUT"/mpi1.csv "$OUT"/mpi2.csv "$OUT"/hcomm-*.csv | grep -v '^op,' | grep -v '^\[' | sort -t, -k1,1 -k2,2 -k3,3n -k4,4n
echo
# the table: key = op, path (sm = shm), ranks, bytes; values = time_us (and algbw_gbs)
{
  awk -F, -v src=mpi1 'FNR>0 && $2 ~ /^openmpi-rma-/ {print src, $0}' "$OUT/mpi1.csv"
  awk -F, -v src=mpi2 'FNR>0 && $2 ~ /^openmpi-rma-/ {print src, $0}' "$OUT/mpi2.csv"
  cat "$OUT"/hcomm-*.csv | awk -F, '$2 ~ /^window-/ {print "hcomm", $0}'
} | awk '
  { split($2, f, ","); path = f[2]; sub(/^openmpi-rma-/, "", path); sub(/^window-/, "", path); if (path == "sm") path = "shm"
    key = f[1] " " path " " f[3] " " f[4]; if (!(key in seen)) { seen[key] = 1; keys[++n] = key }
    t[$1, key] = f[9]; bw[$1, key] = f[10]; if ($1 == "hcomm") wrong[key] = f[12] }
  END {
    printf "%-13s %-4s %5s %10s %12s %12s %12s %8s %8s %9s %9s %6s\n", "op", "path", "ranks", "bytes", "hcomm_us",
      "ompi1_us", "ompi2_us", "ratio1", "ratio2", "hcomm_GBs", "ompi1_GBs", "wrong"
    for (i = 1; i <= n; i++) {
      k = keys[i]; split(k, p, " ")
      h = ((("hcomm", k) in t)) ? t["hcomm", k] : ""; a = ((("mpi1", k) in t)) ? t["mpi1", k] : ""; b = ((("mpi2", k) in t)) ? t["mpi2", k] : ""
      r1 = (h != "" && a > 0) ? sprintf("%.2f", h / a) : "-"; r2 = (h != "" && b > 0) ? sprintf("%.2f", h / b) : "-"
      printf "%-13s %-4s %5s %10s %12s %12s %12s %8s %8s %9s %9s %6s\n", p[1], p[2], p[3], p[4], h == "" ? "-" : h,
        a == "" ? "-" : a, b == "" ? "-" : b, r1, r2, ((("hcomm", k) in bw)) ? bw["hcomm", k] : "-",
        ((("mpi1", k) in bw)) ? bw["mpi1", k] : "-", (k in wrong) ? wrong[k] : "-"
    }
  }'
