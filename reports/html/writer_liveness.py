"""Telling a live run from a dead one, as `ibt show` does (reports/store/writer_liveness.cpp):
a run whose status is "running" is shown as "interrupted" when its writer is provably
gone (same host and boot, and the recorded pid is not that process any more: its start
time in clock ticks differs), when the host rebooted since, or, from another host, when
its heartbeat is older than STALE_HEARTBEAT_SECONDS. The file is never changed."""
import calendar
import socket
import time

HEARTBEAT_SECONDS = 10  # kHeartbeatSeconds in reports/store/writer_liveness.hpp
STALE_HEARTBEAT_SECONDS = 120  # kStaleHeartbeatSeconds


def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.readline().strip()
    except OSError:
        return ""


def _start_ticks(pid):
    """Field 22 of /proc/PID/stat (after the command name's last ')'), -1 with no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return -1
    fields = text[text.rfind(")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else -1


def _age_seconds(iso):
    try:
        return time.time() - calendar.timegm(time.strptime(iso, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return None


def dead_writer_reason(attrs):
    """Why the run's writer is known to be dead; "" when it may be alive or the run is not running."""
    if attrs.get("status") != "running":
        return ""
    host, pid = str(attrs.get("writer_host", "")), str(attrs.get("writer_pid", ""))
    if not host or not pid:
        return ""  # written before ibt recorded its writers
    who = f"its writer (pid {pid} on host {host})"
    heartbeat = str(attrs.get("heartbeat", ""))
    if host == socket.gethostname() and str(attrs.get("writer_boot_id", "")) == _boot_id():
        try:
            recorded = int(attrs.get("writer_start_ticks", -2))
            alive = _start_ticks(int(pid)) == recorded
        except ValueError:
            alive = False
        if alive:
            return ""
        return (f"interrupted: {who} is gone without recording an end (killed, e.g. by SIGKILL or the OOM "
                f"killer); last heartbeat {heartbeat}")
    if host == socket.gethostname():
        return f"interrupted: the machine rebooted since {who} started"
    age = _age_seconds(heartbeat)
    if age is not None and age > STALE_HEARTBEAT_SECONDS:
        return f"interrupted: no heartbeat from {who} since {heartbeat} (it refreshes every {HEARTBEAT_SECONDS} s)"
    return ""


def mark_if_interrupted(attrs):
    """Status "interrupted" and the reason in "error" (unless one is stored) for a run whose writer is dead."""
    reason = dead_writer_reason(attrs)
    if reason:
        attrs["status"] = "interrupted"
        attrs.setdefault("error", reason)
