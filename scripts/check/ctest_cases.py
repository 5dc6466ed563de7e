"""The CTest cases of a build as the margin scripts walk them (check_margins.sh,
reseeded_margins.sh): one definition of which cases are meant to pass."""
import json
import re
import subprocess


def passing_cases(build, regex):
    """(name, command, properties) of every case whose name matches `regex` and that is
    meant to pass (no PASS_REGULAR_EXPRESSION, not WILL_FAIL: an invalid split, a detected
    mismatch), in CTest's order."""
    info = json.loads(subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], check=True,
                                     capture_output=True, text=True).stdout)
    for t in info["tests"]:
        if not re.search(regex, t["name"]):
            continue
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        if "PASS_REGULAR_EXPRESSION" in props or props.get("WILL_FAIL"):
            continue
        yield t["name"], t["command"], props
