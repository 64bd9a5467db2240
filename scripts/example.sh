#!/usr/bin/env bash
# example.sh - runs one of the HComm4J examples (module hcomm-examples), from a fresh checkout.
#
#   scripts/example.sh training [-n N] [OPTIONS]              data-parallel training (a small perceptron)
#   scripts/example.sh gpt [-n N] [OPTIONS]                   distributed GPT training on hcomm-ddp
#   scripts/example.sh gpt-bench [-n N] [OPTIONS]             what gradient communication costs a step (vs PyTorch DDP)
#   scripts/example.sh parameter-server [-n N] [OPTIONS]      sharded parameter server (messages)
#   scripts/example.sh rma-parameter-server [-n N] [OPTIONS]  the same on one-sided windows (RMA)
#   scripts/example.sh inference [-n N] [OPTIONS]             inference fan-out
#   scripts/example.sh elastic [-n N] [OPTIONS]               training that loses a rank, shrinks, and grows back
#   scripts/example.sh kv-cache [-n N] [OPTIONS]              KV-cache hand-off: rank 0 decode, the others prefill engines
#   scripts/example.sh seed [-n N] [OPTIONS]                  the seed's C++ CommunicationManager in Java, 4 KiB and 64 MiB
#
# Each starts a job of N ranks on this machine (default 4) with `hcomm launch`; each rank prints one result line and
# the job exits non-zero if a rank's check failed.
#
# Started as a rank of a job (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK or HCOMM_RANK is set), it runs
# that one rank instead, so it is also the command to give any launcher:
#
#   ./hcomm launch -n 4 -- scripts/example.sh training
#   mpirun -np 2 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 -x HCOMM_SECRET scripts/example.sh inference
#   srun scripts/example.sh parameter-server                 (with MASTER_ADDR/MASTER_PORT exported, docs/deploy.md)
#
# OPTIONS go to the example: training --steps --batch --lr --loss-bound; gpt --steps --layers --dim --heads --context
# --batch --lr --optim --loss-bound --hook --bucket-cap-mb (--model mlp --widths ...); gpt-bench the same shape options
# and --bucket-cap-mb 25[,5] --overlap yes|no|both --hook none,bf16,fp16 --naive yes --steps --warmup-steps --trace yes;
# parameter-server --servers --rounds --lr;
# rma-parameter-server --servers --colocated --mode sync|ssp --staleness --steps --lr --jitter-ms; inference --batches;
# elastic --steps --batch --lr --kill-rank --kill-step --grow-step --loss-bound; kv-cache --requests --blocks
# --region-mib --kill-prefill --kill-after; seed --size (default: a job at 4K, then one at 64M) --pattern
# ordered,exchange (literal: the order that deadlocks, ended by --timeout 3s) --seed. JAVA_OPTS adds JVM flags.
# Builds the project first when a source is newer than the jar.
#
# For elastic, the launcher replaces the rank that dies (`hcomm launch --max-restarts 1`): the new JVM gets
# HCOMM_JOIN=1, so Hcomm.init() joins the running job and takes the dead rank's place when the others grow back.
# For kv-cache, a prefill engine whose JVM was killed (--kill-prefill) ends its rank with 0, so the launcher lets the
# decode engine and the other prefill engines go on (their result lines say whether the hand-off survived it).
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
SELF=$ROOT/scripts/example.sh
# shellcheck source=scripts/common.sh
. "$ROOT/scripts/common.sh"

usage() {
  sed -n '2,37p' "$SELF" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[ $# -ge 1 ] || usage
case $1 in
  training) CLASS=io.hcomm4j.examples.DataParallelTraining ;;
  gpt) CLASS=io.hcomm4j.examples.GptTraining ;;
  gpt-bench) CLASS=io.hcomm4j.examples.GptBench ;;
  parameter-server | ps) CLASS=io.hcomm4j.examples.ParameterServer ;;
  rma-parameter-server | rma-ps) CLASS=io.hcomm4j.examples.RmaParameterServer ;;
  inference) CLASS=io.hcomm4j.examples.InferenceFanOut ;;
  elastic) CLASS=io.hcomm4j.examples.ElasticTraining ;;
  kv-cache | kv) CLASS=io.hcomm4j.examples.KvCacheHandoff ;;
  seed) CLASS=io.hcomm4j.examples.CommunicationManager ;;
  -h | --help) usage ;;
  *) echo "example.sh: no example '$1' (choose training, gpt, gpt-bench, parameter-server, rma-parameter-server, inference, elastic, kv-cache or seed)" >&2; exit 2 ;;
esac
NAME=$1
shift
# The GPT's kernels: C2 hoists checks out of their vector loops on the strength of profiles that other loops share
# (profiled loop predicates); when such a check fails, the loop is deoptimized, runs in C1 with its vectors boxed
# (AdamW's step: 60 ms instead of 1.5) and is compiled again, over and over. Without them the step is steady.
case $NAME in gpt | gpt-bench) JAVA_OPTS="-XX:-UseProfiledLoopPredicate ${JAVA_OPTS:-}" ;; esac
RANKS=4
if [ "${1:-}" = -n ]; then
  [ $# -ge 2 ] || usage
  RANKS=$2
  shift 2
fi
[ "${1:-}" = -- ] && shift

hcomm_find_jdk || exit 1
JAR=$ROOT/hcomm-examples/target/hcomm-examples.jar

needs_build() {
  [ -f "$JAR" ] || return 0
  [ -n "$(find "$ROOT" \( -name target -o -name .git -o -name .hcomm \) -prune -o \
             -type f \( -name pom.xml -o -path '*/src/*' \) -newer "$JAR" -print -quit)" ]
}

if needs_build; then
  hcomm_ensure_maven || exit 1
  hcomm_maven_opts
  # The same lock as ./hcomm: the ranks of a job, or ./hcomm and this script, must not build over each other.
  mkdir -p "$ROOT/hcomm-cli/target"
  exec 9>"$ROOT/hcomm-cli/target/.build.lock"
  flock 9 2>/dev/null || true
  if needs_build; then
    echo "example.sh: building HComm4J (mvn package, tests skipped) ..." >&2
    (cd "$ROOT" && mvn -q -B -ntp -DskipTests -pl hcomm-cli,hcomm-examples -am package) 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >&2 || {
      echo "example.sh: the build failed (see above)" >&2
      exit 1
    }
  fi
  exec 9>&-
fi

in_job() {
  local v
  for v in RANK SLURM_PROCID OMPI_COMM_WORLD_RANK PMI_RANK HCOMM_RANK; do
    [ -n "${!v:-}" ] && return 0
  done
  return 1
}

if ! in_job; then
  # Not a rank yet: start a job of RANKS ranks on this machine, each running this script again.
  RESTARTS=()
  [ "$NAME" != elastic ] || RESTARTS=(--max-restarts 1)
  if [ "$NAME" = seed ] && [[ " $* " != *" --size "* ]]; then
    # The seed example runs one size per process, as the seed did: a job at 4 KiB, then one at 64 MiB, which shows
    # the difference the eager limit makes. --size picks one.
    for size in 4K 64M; do
      "$ROOT/hcomm" launch -n "$RANKS" -- "$SELF" "$NAME" --size "$size" "$@"
    done
    exit 0
  fi
  exec "$ROOT/hcomm" launch -n "$RANKS" "${RESTARTS[@]}" -- "$SELF" "$NAME" "$@"
fi

# One rank. The JVM prints "WARNING: Using incubator modules: jdk.incubator.vector" on every start: drop that line
# (as ./hcomm does), pass the rest of stderr through.
if [ "$NAME" = kv-cache ] || [ "$NAME" = kv ]; then
  # A prefill engine killed on purpose (SIGKILL: exit code 137) must not make the launcher stop the job: this rank ends
  # with 0 and the decode engine reports what it saw.
  # The JVM's stderr goes to fd 3; the shell's own "Killed" report goes nowhere (the example said what it does).
  exec 3>&2
  run_engine() {
    # shellcheck disable=SC2086
    "$JAVA" --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -XX:+UseParallelGC ${JAVA_OPTS:-} \
      -cp "$JAR" "$CLASS" "$@" \
      2> >(trap '' INT TERM; exec grep -v --line-buffered -x 'WARNING: Using incubator modules: jdk.incubator.vector' >&3)
  }
  code=0
  run_engine "$@" 2>/dev/null || code=$?
  if [ "$code" -eq 137 ]; then
    echo "example.sh: the JVM of rank ${RANK:-${SLURM_PROCID:-?}} was killed; the decode engine goes on without it" >&2
    code=0
  fi
  exit "$code"
fi

# shellcheck disable=SC2086
exec "$JAVA" --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -XX:+UseParallelGC ${JAVA_OPTS:-} \
  -cp "$JAR" "$CLASS" "$@" \
  2> >(trap '' INT TERM; exec grep -v --line-buffered -x 'WARNING: Using incubator modules: jdk.incubator.vector' >&2)
