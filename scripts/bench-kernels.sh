#!/usr/bin/env bash
# bench-kernels.sh - builds hcomm-bench and runs ReduceKernelBench (JMH), then prints GB/s of input bytes:
# accumulate(acc, in) with the vector kernel, the scalar kernel, a plain Java loop, and memcpy of the same bytes.
#
#   scripts/bench-kernels.sh                                              every type, SUM and MAX, 4KiB/1MiB/64MiB (~45 min)
#   scripts/bench-kernels.sh -p type=FLOAT32,INT32,BFLOAT16 -p op=SUM -p size=1MiB,64MiB
#   scripts/bench-kernels.sh -p type=FLOAT32 -p op=SUM ReduceKernelBench.vector    (one method: any JMH regexp)
#
# Arguments go to JMH after the defaults in $JMH_OPTS (-f 1 -wi 3 -w 1s -i 5 -r 1s); set JMH_OPTS to change those.
# The forked JVMs get --add-modules jdk.incubator.vector from the benchmark's @Fork. Results are also kept as CSV
# in hcomm-bench/target/kernels.csv. These machines are shared: run twice and compare before trusting a number.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=scripts/common.sh
. "$ROOT/scripts/common.sh"
hcomm_build_env || exit 1

JMH_OPTS=${JMH_OPTS:--f 1 -wi 3 -w 1s -i 5 -r 1s}
JAR=$ROOT/hcomm-bench/target/benchmarks.jar
CSV=$ROOT/hcomm-bench/target/kernels.csv

echo "bench-kernels: building hcomm-bench ..." >&2
(cd "$ROOT" && mvn -q -B -ntp -DskipTests -pl hcomm-bench -am package) 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >&2

has_pattern=0
for a in "$@"; do
  case $a in -*|*=*) ;; *) has_pattern=1 ;; esac
done
pattern=()
[ "$has_pattern" = 1 ] || pattern=(ReduceKernelBench)

# shellcheck disable=SC2086
"$JAVA" --sun-misc-unsafe-memory-access=allow -jar "$JAR" $JMH_OPTS -rf csv -rff "$CSV" "$@" "${pattern[@]}"

echo
echo "GB/s of input bytes (1 GB = 10^9 B); acc += in reads 2x and writes 1x these bytes, memcpy reads 1x and writes 1x."
echo "Measured on $(nproc) cores of $(hostname) at $(date -u '+%Y-%m-%d %H:%M UTC'); JMH: $JMH_OPTS"
# CSV: "Benchmark","Mode","Threads","Samples","Score","Score Error (99.9%)","Unit","Param: op","Param: size","Param: type"
awk -F, '
  { sub(/\r$/, "") }
  NR == 1 { for (i = 1; i <= NF; i++) { h = $i; gsub(/"/, "", h); col[h] = i }; next }
  {
    b = $col["Benchmark"]; gsub(/"/, "", b)
    if (b !~ /:bytes$/) next
    sub(/:bytes$/, "", b); sub(/.*\./, "", b)
    key = $col["Param: type"] " " $col["Param: op"] " " $col["Param: size"]; gsub(/"/, "", key)
    if (!(key in seen)) { seen[key] = 1; keys[++n] = key }
    gbs[key, b] = sprintf("%.2f", $col["Score"] / 1e9)
  }
  END {
    printf "| %-8s | %-3s | %-5s | %7s | %7s | %7s | %7s | %13s |\n", "type", "op", "size", "vector", "scalar", "loop", "memcpy", "vector / loop"
    printf "|----------|-----|-------|--------:|--------:|--------:|--------:|--------------:|\n"
    for (k = 1; k <= n; k++) {
      split(keys[k], p, " ")
      v = gbs[keys[k], "vector"]; l = gbs[keys[k], "loop"]
      ratio = (v != "" && l != "" && l > 0) ? sprintf("%.1fx", v / l) : "-"
      printf "| %-8s | %-3s | %-5s | %7s | %7s | %7s | %7s | %13s |\n", p[1], p[2], p[3],
        (v == "" ? "-" : v), ((keys[k], "scalar") in gbs ? gbs[keys[k], "scalar"] : "-"),
        (l == "" ? "-" : l), ((keys[k], "memcpy") in gbs ? gbs[keys[k], "memcpy"] : "-"), ratio
    }
  }' "$CSV"
