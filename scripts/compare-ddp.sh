#!/usr/bin/env bash
# compare-ddp.sh - what gradient communication costs a data-parallel training step: HComm4J (hcomm-ddp) against
# PyTorch DDP on Gloo, on the same model shapes, in one sitting, on one host and across two "hosts" (issue 14's bars).
#
#   scripts/compare-ddp.sh [--rounds 3] [--shape gpt|mlp|both] [--hosts one|two|both] [--steps S] [--warmup-steps W]
#                          [--rate 2gbit] [--only hcomm4j|torch] [--timeout 1800] [--gpt-args ARGS] [--mlp-args ARGS]
#   (as root when --hosts is two or both: ip netns and tc, package iproute2)
#
# Shapes, the same arguments to both programs (--gpt-args / --mlp-args replace them, e.g. a small one for a quick try):
#   gpt  --model gpt --layers 4 --dim 256 --heads 4 --context 128 --batch 8
#   mlp  --model mlp --widths 2048,4096,4096,2048 --batch 16
# Alternates, ROUNDS times, per shape (2 ranks each; PEERS defaults to ../shared/peers):
#   one host:
#     onehost-shm  HCOMM_TRANSPORT=shm scripts/example.sh gpt-bench -n 2 SHAPE --overlap both --hook none,bf16 --naive yes
#     onehost-tcp  HCOMM_TRANSPORT=tcp scripts/example.sh gpt-bench -n 2 SHAPE --overlap both --hook none
#     onehost      $PEERS/torch_ddp_bench.py --nproc 2 SHAPE --both                   (Gloo over lo)
#   two hosts: namespaces hcd-PID-0 and hcd-PID-1 joined by one veth pair (eth0, 10.78.0.1/24 and 10.78.0.2/24) with
#   tc tbf rate RATE on both ends, rank r in namespace r, rank 0 serving the rendezvous on 10.78.0.1:
#     twohosts     scripts/example.sh gpt-bench SHAPE --overlap both --hook none,bf16  (HCOMM_TRANSPORT unset: TCP)
#     twohosts     $PEERS/torch_ddp_bench.py SHAPE --both                             (GLOO_SOCKET_IFNAME=eth0)
# --steps / --warmup-steps go to both programs (without them, their defaults: 20 steps; 10 warm-up steps for
# gpt-bench, whose kernels the JIT compiles meanwhile, 3 for torch). --only runs one side alone.
# A run that takes longer than --timeout seconds is stopped and counts as failed; the sitting goes on.
#
# Prints its output directory OUT first. OUT/results.csv gets every CSV row of every run with round,setting,shape in
# front (torch rows get transport gloo, hook none and mode overlap|blocking appended), OUT/logs/ each run's output.
# At the end, per shape and setting, the medians over the rounds of: exposed_comm_ms (step - compute) of HComm4J's
# overlapped rows per hook and of torch's DDP row, the ratio HComm4J / torch (bar: <= 0.5), HComm4J's hiding ratio
# exposed(overlap) / exposed(blocking) per hook (bar: <= 0.2, i.e. overlap hides >= 80 %), step_ms and samples/s
# (ranks * batch * 1000 / step_ms) of every row, the naive row's included; then the ratios round by round.
# onehost-shm and onehost-tcp are both compared with torch's onehost rows.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PEERS=${PEERS:-$ROOT/../shared/peers}
TORCH_BENCH=$PEERS/torch_ddp_bench.py
PY=${PYTHON:-/usr/bin/python3}
ME=compare-ddp.sh

usage() {
  awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0" >&2
  exit 2
}
die() { echo "$ME: $*" >&2; exit 1; }

ROUNDS=3
SHAPE=both
HOSTS=both
RATE=2gbit
ONLY=both
TIMEOUT=1800
STEP_ARGS=()
GPT_ARGS="--model gpt --layers 4 --dim 256 --heads 4 --context 128 --batch 8"
MLP_ARGS="--model mlp --widths 2048,4096,4096,2048 --batch 16"
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage ;;
  esac
  [ $# -ge 2 ] || { echo "$ME: $1 needs a value (or is not an option)" >&2; usage; }
  case $1 in
    --rounds) ROUNDS=$2 ;;
    --shape) SHAPE=$2 ;;
    --hosts) HOSTS=$2 ;;
    --steps | --warmup-steps) STEP_ARGS+=("$1" "$2") ;;
    --rate) RATE=$2 ;;
    --only) ONLY=$2 ;;
    --timeout) TIMEOUT=$2 ;;
    --gpt-args) GPT_ARGS=$2 ;;
    --mlp-args) MLP_ARGS=$2 ;;
    *) echo "$ME: unknown option $1" >&2; usage ;;
  esac
  shift 2
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number, was '$ROUNDS'"
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds, was '$TIMEOUT'"
case $SHAPE in gpt | mlp) SHAPES=("$SHAPE") ;; both) SHAPES=(gpt mlp) ;; *) die "--shape must be gpt, mlp or both" ;; esac
case $HOSTS in one | two | both) ;; *) die "--hosts must be one, two or both" ;; esac
case $ONLY in hcomm4j | torch | both) ;; *) die "--only must be hcomm4j or torch" ;; esac
ONE_HOST=0; TWO_HOSTS=0; HCOMM=0; TORCH=0
[ "$HOSTS" = two ] || ONE_HOST=1
[ "$HOSTS" = one ] || TWO_HOSTS=1
[ "$ONLY" = torch ] || HCOMM=1
[ "$ONLY" = hcomm4j ] || TORCH=1

shape_args() { # SHAPE: the arguments both programs get for it
  case $1 in gpt) printf '%s\n' "$GPT_ARGS" ;; mlp) printf '%s\n' "$MLP_ARGS" ;; esac
}
shape_batch() { # SHAPE: its per-rank batch (both programs default to 8)
  local a b=8 i
  read -ra a <<<"$(shape_args "$1")"
  for i in "${!a[@]}"; do
    if [ "${a[$i]}" = --batch ]; then b=${a[$((i + 1))]:-8}; fi
  done
  printf '%s\n' "$b"
}

# --- what is needed ----------------------------------------------------------------------------------------------
command -v timeout >/dev/null || die "needs timeout (coreutils)"
command -v setsid >/dev/null || die "needs setsid (util-linux)"
[ -x "$PY" ] || die "needs $PY (set PYTHON to another python3)"
if [ "$TWO_HOSTS" = 1 ]; then
  [ "$(id -u)" = 0 ] || die "--hosts $HOSTS needs root (ip netns, tc): run it as root, or with --hosts one"
  command -v ip >/dev/null || die "needs ip (apt-get install iproute2), or run with --hosts one"
  command -v tc >/dev/null || die "needs tc (apt-get install iproute2), or run with --hosts one"
fi
if [ "$TORCH" = 1 ]; then
  [ -f "$TORCH_BENCH" ] || die "no $TORCH_BENCH (set PEERS to the directory of torch_ddp_bench.py)"
  "$PY" -c 'import torch' 2>/dev/null || die "$PY cannot import torch (apt-get install python3-torch)"
fi
if [ "$HCOMM" = 1 ]; then
  # shellcheck source=scripts/common.sh
  . "$ROOT/scripts/common.sh"
  hcomm_find_jdk || exit 1
  # Build once, here, outside the namespaces and before anything is timed: ./hcomm builds the project (every module)
  # when a pom.xml or source is newer than its jar; then the examples jar, by example.sh's own test and lock.
  "$ROOT/hcomm" --version >/dev/null || die "building HComm4J failed"
  JAR=$ROOT/hcomm-examples/target/hcomm-examples.jar
  needs_build() {
    [ -f "$JAR" ] || return 0
    [ -n "$(find "$ROOT" \( -name target -o -name .git -o -name .hcomm \) -prune -o \
               -type f \( -name pom.xml -o -path '*/src/*' \) -newer "$JAR" -print -quit)" ]
  }
  if needs_build; then
    hcomm_ensure_maven || exit 1
    hcomm_maven_opts
    mkdir -p "$ROOT/hcomm-cli/target"
    exec 9>"$ROOT/hcomm-cli/target/.build.lock"
    flock 9 2>/dev/null || true
    if needs_build; then
      echo "$ME: building HComm4J (mvn package, tests skipped) ..." >&2
      (cd "$ROOT" && mvn -q -B -ntp -DskipTests package) 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >&2 ||
        die "the build failed (see above)"
    fi
    exec 9>&-
  fi
  [ -f "$JAR" ] || die "no $JAR after the build"
  if needs_build; then
    echo "$ME: warning: $JAR is still older than a source after the build: example.sh will run mvn at every start" >&2
  fi
fi

# --- processes and namespaces, cleaned up on exit, Ctrl-C or failure ------------------------------------------------
NS=("hcd-$$-0" "hcd-$$-1")
NETNS_UP=0
PIDS=()
stop_runs() { # every started run: its whole process group (it runs under setsid), TERM first, then KILL
  local p
  [ ${#PIDS[@]} -gt 0 ] || return 0
  for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
  sleep 1
  for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  PIDS=()
}
cleanup() {
  local ns p
  stop_runs
  if [ "$NETNS_UP" = 1 ]; then
    for ns in "${NS[@]}"; do
      for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
      ip netns del "$ns" 2>/dev/null || true
    done
    NETNS_UP=0
  fi
}
trap cleanup EXIT
trap 'echo "$ME: interrupted" >&2; cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

OUT=$(mktemp -d /tmp/compare-ddp.XXXX)
mkdir -p "$OUT/logs"
RESULTS=$OUT/results.csv
echo "round,setting,shape,framework,model,params,grad_bytes,ranks,bucket_mb,overlap,step_ms,compute_ms,exposed_comm_ms,exposed_share,allreduce_ms,allreduce_busbw_gbs,loss_first,loss_last,transport,hook,mode" >"$RESULTS"
echo "$ME: results in $OUT (results.csv, logs/)"

if [ "$TWO_HOSTS" = 1 ]; then
  ip netns add "${NS[0]}"
  NETNS_UP=1
  ip netns add "${NS[1]}"
  ip link add eth0 netns "${NS[0]}" type veth peer name eth0 netns "${NS[1]}"
  for i in 0 1; do
    ip -n "${NS[$i]}" addr add "10.78.0.$((i + 1))/24" dev eth0
    ip -n "${NS[$i]}" link set lo up
    ip -n "${NS[$i]}" link set eth0 up
    ip netns exec "${NS[$i]}" tc qdisc add dev eth0 root tbf rate "$RATE" burst 256kb latency 50ms ||
      die "tc could not limit eth0 to '$RATE'"
  done
  echo "$ME: namespaces ${NS[0]} (10.78.0.1) and ${NS[1]} (10.78.0.2), veth eth0, tbf rate $RATE on both ends"
fi

# start LOG CMD...: CMD in the background, in a session and process group of its own (stop_runs kills all of it),
# under timeout, output to LOG.
start() {
  local log=$1
  shift
  setsid timeout -k 10 "$TIMEOUT" "$@" >"$log" 2>&1 </dev/null &
  PIDS+=($!)
}
# finish: waits for the started runs; once one fails the others get 30 s (they may wait for it forever), then are
# stopped. Returns the first failure's status (124: timed out).
finish() {
  local st=0 s id p t alive left=("${PIDS[@]}") rest
  while [ ${#left[@]} -gt 0 ]; do
    s=0
    wait -n -p id "${left[@]}" || s=$?
    rest=()
    for p in "${left[@]}"; do [ "$p" = "$id" ] || rest+=("$p"); done
    left=("${rest[@]}")
    if [ "$s" != 0 ]; then
      st=$s
      for t in $(seq 30); do
        alive=0
        for p in "${left[@]}"; do if kill -0 "$p" 2>/dev/null; then alive=1; fi; done
        [ "$alive" = 1 ] || break
        sleep 1
      done
      break
    fi
  done
  stop_runs
  return "$st"
}
FAILED=()
# collect LOG ROUND SETTING SHAPE: appends LOG's CSV rows to results.csv; fails when it has none
collect() {
  awk -F, -v r="$2" -v s="$3" -v sh="$4" '
    {sub(/^\[rank [0-9]+\] /, "")}   # hcomm launch prefixes each line with its rank
    /^framework,model,params,/ {on = 1; next}
    on && ($1 == "hcomm4j" || $1 == "torch-gloo") && NF >= 15 {
      line = $0
      if ($1 == "torch-gloo") line = line ",gloo,none," ($7 == "yes" ? "overlap" : "blocking")
      print r "," s "," sh "," line
      n++
    }
    END {exit n ? 0 : 1}' "$1" >>"$RESULTS"
}
# run ROUND SETTING SHAPE FRAMEWORK LOG CMD...: one run on this host
run() {
  local round=$1 setting=$2 shape=$3 fw=$4 log=$5 st=0
  shift 5
  echo "round $round/$ROUNDS, $shape, $setting: $fw" >&2
  start "$log" "$@"
  finish || st=$?
  check "$st" "$log" "$round" "$setting" "$shape" "$fw"
}
check() { # STATUS LOG ROUND SETTING SHAPE FRAMEWORK
  local st=$1 log=$2
  if [ "$st" != 0 ]; then
    echo "$ME: round $3, $5, $4, $6 failed (status $st$([ "$st" = 124 ] && echo ": timed out after $TIMEOUT s")); last lines of $log:" >&2
    tail -15 "$log" | sed 's/^/    /' >&2
    FAILED+=("round $3 $5 $4 $6")
  fi
  grep -q '^params identical on all ranks: no' "$log" && echo "$ME: round $3, $5, $4, $6: parameters differ between ranks!" >&2
  if ! collect "$log" "$3" "$4" "$5"; then
    [ "$st" != 0 ] || { echo "$ME: round $3, $5, $4, $6: no CSV rows in $log" >&2; FAILED+=("round $3 $5 $4 $6 (no rows)"); }
  fi
  return 0
}
free_port() { # a port free on 10.78.0.1 in the first namespace
  ip netns exec "${NS[0]}" "$PY" -c \
    'import socket; s = socket.socket(); s.bind(("10.78.0.1", 0)); print(s.getsockname()[1])'
}
# run2 ROUND SHAPE FRAMEWORK ARGS...: one rank in each namespace; rank 0's output is the run's
run2() {
  local round=$1 shape=$2 fw=$3 port secret log r st=0
  shift 3
  echo "round $round/$ROUNDS, $shape, twohosts: $fw" >&2
  port=$(free_port)
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  log=$OUT/logs/r$round-$shape-twohosts-$fw
  for r in 0 1; do
    if [ "$fw" = hcomm4j ]; then
      start "$log.rank$r.log" ip netns exec "${NS[$r]}" env -u HCOMM_TRANSPORT -u HCOMM_HOST_ID \
        RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 NODE_RANK=$r \
        MASTER_ADDR=10.78.0.1 MASTER_PORT="$port" HCOMM_SECRET="$secret" \
        "$ROOT/scripts/example.sh" gpt-bench "$@"
    else
      start "$log.rank$r.log" ip netns exec "${NS[$r]}" env RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 \
        MASTER_ADDR=10.78.0.1 MASTER_PORT="$port" GLOO_SOCKET_IFNAME=eth0 \
        "$PY" "$TORCH_BENCH" "$@"
    fi
  done
  finish || st=$?
  if [ "$st" != 0 ]; then
    echo "$ME: last lines of $log.rank1.log:" >&2
    tail -15 "$log.rank1.log" | sed 's/^/    /' >&2
  fi
  check "$st" "$log.rank0.log" "$round" twohosts "$shape" "$fw"
}

echo "$ME: $ROUNDS round(s), shapes ${SHAPES[*]}, hosts $HOSTS${STEP_ARGS[*]:+, ${STEP_ARGS[*]}}"
for shape in "${SHAPES[@]}"; do echo "  $shape: $(shape_args "$shape")"; done
START=$SECONDS
for round in $(seq 1 "$ROUNDS"); do
  for shape in "${SHAPES[@]}"; do
    read -ra SA <<<"$(shape_args "$shape")"
    L=$OUT/logs/r$round-$shape
    if [ "$ONE_HOST" = 1 ]; then
      if [ "$HCOMM" = 1 ]; then
        run "$round" onehost-shm "$shape" hcomm4j "$L-onehost-shm-hcomm4j.log" env -u RANK HCOMM_TRANSPORT=shm \
          "$ROOT/scripts/example.sh" gpt-bench -n 2 "${SA[@]}" "${STEP_ARGS[@]}" --overlap both --hook none,bf16 --naive yes
        run "$round" onehost-tcp "$shape" hcomm4j "$L-onehost-tcp-hcomm4j.log" env -u RANK HCOMM_TRANSPORT=tcp \
          "$ROOT/scripts/example.sh" gpt-bench -n 2 "${SA[@]}" "${STEP_ARGS[@]}" --overlap both --hook none
      fi
      if [ "$TORCH" = 1 ]; then
        run "$round" onehost "$shape" torch "$L-onehost-torch.log" env -u RANK -u WORLD_SIZE -u GLOO_SOCKET_IFNAME \
          "$PY" "$TORCH_BENCH" --nproc 2 "${SA[@]}" "${STEP_ARGS[@]}" --both
      fi
    fi
    if [ "$TWO_HOSTS" = 1 ]; then
      [ "$HCOMM" = 0 ] || run2 "$round" "$shape" hcomm4j "${SA[@]}" "${STEP_ARGS[@]}" --overlap both --hook none,bf16
      [ "$TORCH" = 0 ] || run2 "$round" "$shape" torch "${SA[@]}" "${STEP_ARGS[@]}" --both
    fi
  done
done
cleanup
echo "$ME: all runs took $((SECONDS - START)) s" >&2

# --- the summary -------------------------------------------------------------------------------------------------
BATCH_ARGS=()
for shape in "${SHAPES[@]}"; do BATCH_ARGS+=("$shape=$(shape_batch "$shape")"); done
"$PY" - "$RESULTS" "$ROUNDS" "${BATCH_ARGS[@]}" <<'PY' || true
import csv, statistics, sys

path, rounds, batch = sys.argv[1], int(sys.argv[2]), dict(a.split("=", 1) for a in sys.argv[3:])
rows = list(csv.DictReader(open(path)))
REF = {"onehost-shm": "onehost", "onehost-tcp": "onehost", "twohosts": "twohosts"}  # torch's rows to compare with
SHAPE_ORDER = {"gpt": 0, "mlp": 1}
SETTING_ORDER = {"onehost-shm": 0, "onehost-tcp": 1, "onehost": 2, "twohosts": 3}


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def kind(r):
    """(order, label) of a row within its run: which configuration it is."""
    if r["framework"] == "torch-gloo":
        return ((10, 0), "DDP" + ("" if r["bucket_mb"] in ("25", "25.0") else f" {r['bucket_mb']} MB")) \
            if r["overlap"] == "yes" else ((11, 0), "no-overlap")
    mode, hook = r["mode"], r["hook"]
    order = ({"overlap": 0, "blocking": 1, "naive": 3}.get(mode, 4), {"none": 0, "bf16": 1, "fp16": 2}.get(hook, 3))
    label = f"{mode} {hook}" if mode != "naive" else "naive"
    if mode == "overlap" and r["bucket_mb"] not in ("25", "25.0"):
        label += f" {r['bucket_mb']} MB"
    return (order, label)


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def ratio(a, b):
    return None if a is None or b is None or b <= 0 else a / b


def bar(v, limit):
    return "-" if v is None else f"{v:.2f} ({'ok' if v <= limit else 'missed'})"


def pick(shape, setting, fw, pred, rnd=None):
    return [r for r in rows if r["shape"] == shape and r["setting"] == setting and r["framework"] == fw and pred(r)
            and (rnd is None or r["round"] == rnd)]


def med_of(rs, col):
    return med([num(r[col]) for r in rs])


if not rows:
    print("\nno results (every run failed?)")
    sys.exit(1)
shapes = sorted({r["shape"] for r in rows}, key=lambda s: SHAPE_ORDER.get(s, 9))
settings = sorted({r["setting"] for r in rows}, key=lambda s: SETTING_ORDER.get(s, 9))
# the settings of table 1: HComm4J's (each against torch's rows of REF[setting]), or torch's own when it ran alone
hc_settings = [s for s in settings if s in REF and any(r["framework"] == "hcomm4j" for r in rows)]
if not hc_settings:
    hc_settings = [s for s in settings if s in ("onehost", "twohosts")]
    REF.update(onehost="onehost", twohosts="twohosts")
models = {}
for r in rows:
    models.setdefault(r["shape"], {})[r["framework"]] = (r["model"], r["params"], r["grad_bytes"])
print()
for shape in shapes:
    for fw, (m, p, g) in sorted(models[shape].items()):
        print(f"{shape}: {fw} model {m}, {p} params, {int(g) / 2**20:.1f} MiB of gradients per step")

print(f"\n## Exposed communication (step_ms - compute_ms, ms): medians over {rounds} round(s)\n")
print("| shape | setting | HComm4J row | HComm4J overlap | HComm4J blocking | hiding overlap/blocking (bar <= 0.2) "
      "| torch DDP | torch no-overlap | torch's hiding | HComm4J / torch DDP (bar <= 0.5) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for shape in shapes:
    for setting in hc_settings:
        overlaps = pick(shape, setting, "hcomm4j", lambda r: r["mode"] == "overlap")
        t_ddp = pick(shape, REF[setting], "torch-gloo", lambda r: r["overlap"] == "yes")
        t_blk = pick(shape, REF[setting], "torch-gloo", lambda r: r["overlap"] == "no")
        tx, tb = med_of(t_ddp, "exposed_comm_ms"), med_of(t_blk, "exposed_comm_ms")
        labels = sorted({(kind(r), r["hook"]) for r in overlaps})
        if not labels and not t_ddp:
            continue
        for (k, hook) in labels or [(((0, 0), "-"), None)]:
            ov = [r for r in overlaps if kind(r) == k]
            bl = pick(shape, setting, "hcomm4j", lambda r: r["mode"] == "blocking" and r["hook"] == hook)
            hx, hb = med_of(ov, "exposed_comm_ms"), med_of(bl, "exposed_comm_ms")
            print(f"| {shape} | {setting} | {k[1]} | {fmt(hx)} | {fmt(hb)} | {bar(ratio(hx, hb), 0.2)} | {fmt(tx)} "
                  f"| {fmt(tb)} | {fmt(ratio(tx, tb))} | {bar(ratio(hx, tx), 0.5)} |")

print(f"\n## Steps: medians over the rounds (samples/s = ranks * batch * 1000 / step_ms; n = rounds with this row)\n")
print("| shape | setting | framework | row | step_ms | compute_ms | exposed_comm_ms | exposed share | samples/s "
      "| all-reduce alone (ms) | busbw (GB/s) | n |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for shape in shapes:
    b = int(batch.get(shape, 8))
    for setting in settings:
        for fw in ("hcomm4j", "torch-gloo"):
            rs = pick(shape, setting, fw, lambda r: True)
            for k in sorted({kind(r) for r in rs}):
                these = [r for r in rs if kind(r) == k]
                step = med_of(these, "step_ms")
                ranks = int(these[0]["ranks"])
                sps = None if not step else ranks * b * 1000 / step
                exp = med_of(these, "exposed_comm_ms")
                print(f"| {shape} | {setting} | {fw} | {k[1]} | {fmt(step)} | {fmt(med_of(these, 'compute_ms'))} "
                      f"| {fmt(exp)} | {fmt(ratio(exp, step))} | {fmt(sps, 1)} | {fmt(med_of(these, 'allreduce_ms'))} "
                      f"| {fmt(med_of(these, 'allreduce_busbw_gbs'), 3)} | {len(these)} |")

if any(r["framework"] == "hcomm4j" for r in rows):
    print("\n## Round by round: HComm4J / torch DDP exposed comm, and HComm4J's hiding ratio\n")
    print("| round | shape | setting | HComm4J row | HComm4J exposed | torch DDP exposed | HComm4J / torch "
          "| hiding overlap/blocking |")
    print("|---|---|---|---|---|---|---|---|")
for rnd in sorted({r["round"] for r in rows if r["framework"] == "hcomm4j"}, key=int):
    for shape in shapes:
        for setting in hc_settings:
            t = pick(shape, REF[setting], "torch-gloo", lambda r: r["overlap"] == "yes", rnd)
            tx = num(t[0]["exposed_comm_ms"]) if t else None
            for r in pick(shape, setting, "hcomm4j", lambda r: r["mode"] == "overlap", rnd):
                bl = pick(shape, setting, "hcomm4j", lambda x: x["mode"] == "blocking" and x["hook"] == r["hook"], rnd)
                hx = num(r["exposed_comm_ms"])
                hb = num(bl[0]["exposed_comm_ms"]) if bl else None
                print(f"| {rnd} | {shape} | {setting} | {kind(r)[1]} | {fmt(hx)} | {fmt(tx)} | {fmt(ratio(hx, tx))} "
                      f"| {fmt(ratio(hx, hb))} |")
bad = [r for r in rows if r["setting"] == "twohosts" and r["framework"] == "hcomm4j" and r["transport"] != "tcp"] + \
      [r for r in rows if r["setting"] in ("onehost-shm", "onehost-tcp") and r["framework"] == "hcomm4j"
       and r["transport"] != r["setting"].split("-")[1]]
if bad:
    print(f"\nwarning: {len(bad)} HComm4J row(s) ran on another transport than their setting says "
          f"(e.g. round {bad[0]['round']} {bad[0]['setting']}: {bad[0]['transport']})")
PY
if [ ${#FAILED[@]} -gt 0 ]; then
  echo
  echo "failed runs (${#FAILED[@]}): ${FAILED[*]}"
fi
echo
echo "results: $RESULTS, logs: $OUT/logs/"
[ ${#FAILED[@]} -eq 0 ]
