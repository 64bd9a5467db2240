# shellcheck shell=bash
# Sourced by ./hcomm, ./test and .ci/run: finds a JDK >= 25 and makes sure Maven is there.
#
#   hcomm_find_jdk      sets and exports JAVA_HOME and JAVA (the java binary), or prints how to get a
#                       JDK 25 and returns 1. Looks at $JAVA_HOME, then the newest /usr/lib/jvm/*,
#                       then the java on PATH.
#   hcomm_ensure_maven  returns 0 when `mvn` is on PATH; installs it with apt-get when running as root;
#                       otherwise says how to install it and returns 1.
#   hcomm_maven_opts    exports MAVEN_OPTS that keep Maven quiet on JDK 25.

HCOMM_MIN_JAVA=25

# Major version of the java binary $1 (17, 21, 25 ...), or nothing if it does not run.
hcomm_java_major() {
  local line v
  line=$("$1" -version 2>&1 | grep -m1 -E 'version "[^"]+"') || return 1
  v=${line#*version \"}
  v=${v%%\"*}
  case $v in
    1.*) v=${v#1.} ;;
  esac
  v=${v%%[!0-9]*}
  [ -n "$v" ] || return 1
  printf '%s\n' "$v"
}

# Succeeds when $1 is a java binary of version >= HCOMM_MIN_JAVA; prints its major version.
hcomm_java_ok() {
  local major
  [ -x "$1" ] || return 1
  major=$(hcomm_java_major "$1") || return 1
  [ "$major" -ge "$HCOMM_MIN_JAVA" ] || return 1
  printf '%s\n' "$major"
}

hcomm_find_jdk() {
  local candidate best="" best_major=0 major
  if [ -n "${JAVA_HOME:-}" ] && hcomm_java_ok "$JAVA_HOME/bin/java" >/dev/null; then
    best="$JAVA_HOME/bin/java"
  else
    for candidate in /usr/lib/jvm/*/bin/java; do
      major=$(hcomm_java_ok "$candidate") || continue
      if [ "$major" -gt "$best_major" ]; then
        best=$candidate
        best_major=$major
      fi
    done
    if [ -z "$best" ] && candidate=$(command -v java) && hcomm_java_ok "$candidate" >/dev/null; then
      best=$(readlink -f "$candidate")
    fi
  fi
  if [ -z "$best" ]; then
    cat >&2 <<MSG
HComm4J needs a JDK ${HCOMM_MIN_JAVA} or newer, and none was found
(looked at \$JAVA_HOME${JAVA_HOME:+=$JAVA_HOME}, /usr/lib/jvm/*, and the java on PATH).
Install a JDK ${HCOMM_MIN_JAVA}, for example Temurin ${HCOMM_MIN_JAVA}:
  apt-get install temurin-${HCOMM_MIN_JAVA}-jdk   (from Adoptium's repository: https://adoptium.net/installation/linux/)
or point JAVA_HOME at one:
  export JAVA_HOME=/path/to/jdk-${HCOMM_MIN_JAVA}
MSG
    return 1
  fi
  JAVA=$best
  JAVA_HOME=$(cd "$(dirname "$best")/.." && pwd -P)
  export JAVA JAVA_HOME
}

hcomm_ensure_maven() {
  command -v mvn >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Maven (mvn) is missing: installing it with apt-get ..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null && apt-get install -y -q maven >/dev/null || {
      echo "apt-get install maven failed" >&2
      return 1
    }
    command -v mvn >/dev/null 2>&1 && return 0
  fi
  echo "Maven (mvn) is needed to build HComm4J and is not on PATH: install it (e.g. sudo apt-get install maven)." >&2
  return 1
}

hcomm_maven_opts() {
  # Maven's own libraries call sun.misc.Unsafe, which JDK 25 warns about on every run.
  case " ${MAVEN_OPTS:-} " in
    *sun-misc-unsafe-memory-access*) ;;
    *) MAVEN_OPTS="${MAVEN_OPTS:+$MAVEN_OPTS }--sun-misc-unsafe-memory-access=allow" ;;
  esac
  export MAVEN_OPTS
}

# What every script that runs Maven needs first: a JDK >= 25 (JAVA, JAVA_HOME), mvn, and MAVEN_OPTS.
hcomm_build_env() {
  hcomm_find_jdk && hcomm_ensure_maven && hcomm_maven_opts
}
