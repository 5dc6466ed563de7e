#!/usr/bin/env bash
# A rank that stops (SIGSTOP: a hung node) ends the job within --timeout plus a few
# seconds with exit 3 and a message naming the op, the group and the rank that
# noticed; the run is failed in the file. A rank killed with SIGKILL ends the job (never
# a hang), and a writer killed with SIGKILL leaves a run that readers show as
# `interrupted` with its rows.
source "$(dirname "$0")/lib.sh"

# Starts a 2-rank training into $dir/NAME.h5 with -T SECONDS in the background and waits
# for its third step: sets file, log and job.
start_training() {  # NAME SECONDS
  file=$dir/$1.h5 log=$dir/$1.log
  "${mpirun[@]}" -n 2 "$ibt" train --model tiny-dense --dp 2 --steps 100000 -T "$2" --out "$file" >"$log" 2>&1 &
  job=$!
  wait_for '^ *3 ' "$log" 60 || { cleanup_marker "$file"; fail "$1: no progress"; }
}

# Sends SIGNAL to rank RANK of that job and waits for the job to end: sets pid, status
# and elapsed (seconds from the signal).
signal_rank_and_wait() {  # NAME RANK SIGNAL
  pid=$(rank_pid "$2" "$file") || fail "$1: no rank $2"
  local start
  start=$(date +%s)
  kill "-$3" "$pid"
  status=0
  wait "$job" || status=$?
  elapsed=$(($(date +%s) - start))
  cleanup_marker "$file"
}

# 1. rank 1 stopped mid-training, --timeout 3.
start_training stopped 3
signal_rank_and_wait stopped 1 STOP
cat "$log" | grep -v '^ *[0-9]' | tail -5
((elapsed <= 20)) || fail "stopped: took ${elapsed}s with -T 3"
[[ $status -eq 3 ]] || fail "stopped: exit status $status (expected 3, timeout)"
# Either the step's watchdog (op and group named when the stall is inside one) or the
# next step's arrival gate (the missing rank named) ends it.
grep -Eq "timed out after 3 s in train step [0-9]+(, inside MPI_[A-Za-z_]+ on the [a-z-]+ group \(world ranks 0, 1\))?:" "$log" ||
  grep -q "rank 1 did not arrive" "$log" || fail "stopped: the message names neither the step nor the missing rank"
grep -q "noticed by rank 0" "$log" || grep -q "rank 1 did not arrive" "$log" || fail "stopped: the noticing rank is not named"
[[ $(attr "$file" 000001 status) == failed ]] || fail "stopped: run not failed in the file"
error=$(attr "$file" 000001 error)
ok "stopped rank: exit 3 after ${elapsed}s, $(rows "$file" 000001 steps) steps kept, error: $error"

# 2. rank 1 killed: the job ends, not hangs.
start_training killed1 5
signal_rank_and_wait killed1 1 KILL
((elapsed <= 20)) || fail "killed1: took ${elapsed}s"
[[ $status -ne 0 && $status -ne 2 ]] || fail "killed1: exit status $status"
"$ibt" show "$file" | grep -Eq "000001 .*(interrupted|failed|partial)" || fail "killed1: run not closed: $("$ibt" show "$file")"
ok "killed rank 1: job ended after ${elapsed}s (exit $status), run $("$ibt" show "$file" | awk '/000001/{print $3}')"

# 3. the writer (rank 0) killed: readers show the run interrupted, rows kept.
start_training killed0 5
signal_rank_and_wait killed0 0 KILL
[[ $(attr "$file" 000001 status) == running ]] || fail "killed0: a killed writer cannot have changed its status"
shown=$("$ibt" show "$file" --run 1)
grep -q "status  *interrupted" <<<"$shown" || fail "killed0: ibt show does not say interrupted: $shown"
grep -q "is gone without recording an end" <<<"$shown" || fail "killed0: no reason shown"
"$ibt" export "$file" --csv >/dev/null || fail "killed0: export cannot read the file"
n=$(rows "$file" 000001 steps)
((n >= 3)) || fail "killed0: only '$n' steps kept"
ok "killed writer: exit $status, ibt show says interrupted, $n steps kept"
# The Python readers (the HTML report) tell the same: interrupted, with the reason.
html_dir=$(dirname "$0")/../../reports/html
read_status=$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import ibt_h5
r = ibt_h5.load_runs(sys.argv[2])[0]; print(r.status + "|" + r.attrs.get("error", ""))' "$html_dir" "$file") ||
  fail "killed0: the Python reader failed"
[[ $read_status == "interrupted|interrupted: its writer (pid $pid on host "*"is gone without recording an end"* ]] ||
  fail "killed0: the Python reader says '$read_status'"
"$ibt" report "$file" --out "$dir/killed0-report" >/dev/null 2>&1 || fail "killed0: ibt report failed"
grep -q "<td class='status-interrupted'>interrupted</td>" "$dir/killed0-report/index.html" ||
  fail "killed0: the HTML report does not show the run interrupted"
grep -q ">running<" "$dir/killed0-report/index.html" && fail "killed0: the HTML report still says running"
# A writer on another host is judged by its heartbeat: stale (older than 120 s) means interrupted.
/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import writer_liveness as w
old = {"status": "running", "writer_host": "elsewhere-host", "writer_pid": "1", "heartbeat": "2020-01-01T00:00:00Z"}
assert w.dead_writer_reason(old).startswith("interrupted: no heartbeat from its writer"), w.dead_writer_reason(old)
import time; fresh = dict(old, heartbeat=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
assert w.dead_writer_reason(fresh) == "", w.dead_writer_reason(fresh)
assert w.dead_writer_reason(dict(old, status="complete")) == ""' "$html_dir" || fail "the heartbeat rule of the Python reader"
ok "killed writer: the Python reader and the HTML report show it interrupted, as ibt show does"
