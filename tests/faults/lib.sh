# Shared by the fault-injection tests: arguments, failure, waiting for progress,
# finding a rank's pid, reading run attributes independently of ibt (h5dump).
set -u
set -m  # job control: background jobs keep SIGINT (a script would ignore it in them), as a terminal's Ctrl-C
ibt=$1
read -r -a mpirun <<<"$2"
dir=$3
rm -rf "$dir" && mkdir -p "$dir"
name=$(basename "$0" .sh)
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
ok() { echo "$name: ok: $*"; }

# wait_for PATTERN FILE SECONDS: until FILE holds a line matching PATTERN.
wait_for() {
  local deadline=$(($(date +%s) + $3))
  until grep -q -- "$1" "$2" 2>/dev/null; do
    (($(date +%s) < deadline)) || return 1
    sleep 0.2
  done
}

# rank_pid RANK MARKER: the pid of the MPI rank whose command line holds MARKER.
rank_pid() {
  local p
  for p in $(pgrep -f -- "$2"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "PMI_RANK=$1" && { echo "$p"; return 0; }
  done
  return 1
}

# attr FILE RUN NAME: a run attribute's value, read by h5dump (not ibt).
attr() { h5dump -a "/runs/$2/$3" "$1" 2>/dev/null | sed -n 's/.*(0): "\(.*\)".*/\1/p'; }
# rows FILE RUN TABLE: the number of rows of a run's table, by h5dump.
rows() { h5dump -H -d "/runs/$2/$3" "$1" 2>/dev/null | grep -o 'SIMPLE { ( [0-9]* )' | grep -o '[0-9]*'; }

# Ends every process of a test job that is still there (stopped ones included).
cleanup_marker() {
  local p
  for p in $(pgrep -f -- "$1"); do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  return 0
}
