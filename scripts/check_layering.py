#!/usr/bin/env python3
"""check_layering.py SOURCE_DIR: the layering of docs/architecture.md, enforced.

The ```layering block of docs/architecture.md names, for each folder, the folders it may
include directly; what those may include it may include too (the rule is transitive). This
script reads that block and fails (exit 1) on:
  - a source file that includes a header of a folder it may not reach (file, line, include);
  - a library defined in a folder's CMakeLists.txt that links a library of a folder it may
    not reach (file, line, library);
  - a folder holding sources or libraries that the block does not name.
A test under tests/<folder>/ may include what <folder> may, and <folder> itself, unless the
block gives the test folder a line of its own. `*` means any folder.

Why a script and not CMake: the rule is about includes as much as links, and an include
that the link graph happens to satisfy (a header-only reach into a library above) is the
defect that creeps in first. Plain text parsing is enough: ibt's includes are all
"folder/.../file.hpp" relative to the source root.
"""
import re
import sys
from pathlib import Path

SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".c", ".cu", ".cuh", ".in"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
ADD_LIBRARY = re.compile(r"add_library\(\s*(ibt_[A-Za-z0-9_]+)")
LINK = re.compile(r"target_link_libraries\(\s*(ibt_[A-Za-z0-9_]+)([^)]*)\)", re.S)
LIBRARY_NAME = re.compile(r"\bibt_[A-Za-z0-9_]+\b")
SKIPPED_TOP = {"build", "results", "docs", ".git", ".ci"}


def read_block(architecture: Path):
    """The layering block as {folder: [folders named]}, in the order written."""
    text = architecture.read_text()
    m = re.search(r"```layering\n(.*?)```", text, re.S)
    if not m:
        sys.exit(f"check_layering: no ```layering block in {architecture}")
    rules = {}
    for number, raw in enumerate(m.group(1).splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if ":" not in line:
            sys.exit(f"check_layering: {architecture}: layering line {number} has no ':': {raw!r}")
        folder, named = line.split(":", 1)
        rules[folder.strip()] = named.split()
    return rules


def reach(rules, folder, seen=None):
    """Every folder `folder` may include: itself, what it names, and their reach."""
    seen = set() if seen is None else seen
    if folder in seen:
        return seen
    seen.add(folder)
    for named in rules.get(folder, []):
        if named == "*":
            seen.add("*")
        elif named not in rules:
            sys.exit(f"check_layering: '{folder}' names '{named}', which has no line of its own")
        else:
            reach(rules, named, seen)
    return seen


def owner(rules, path: str):
    """The folder of the block that holds `path` (the longest that is a prefix), or None."""
    parts = path.split("/")
    for n in range(len(parts) - 1, 0, -1):
        candidate = "/".join(parts[:n])
        if candidate in rules:
            return candidate
    return None


def rule_folder(rules, path: str):
    """The folder whose rule a file obeys: its own, or for tests/<folder>/ that folder's."""
    own = owner(rules, path)
    if own is None and path.startswith("tests/"):
        own = owner(rules, path[len("tests/"):])
    return own


def check(source: Path):
    rules = read_block(source / "docs" / "architecture.md")
    reaches = {folder: reach(rules, folder) for folder in rules}
    faults = []

    def allowed(rule, target):
        r = reaches[rule]
        return "*" in r or target in r

    files = sorted(p for p in source.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())
    for path in files:
        rel = path.relative_to(source).as_posix()
        if rel.split("/", 1)[0] in SKIPPED_TOP:
            continue
        rule = rule_folder(rules, rel)
        if rule is None:
            faults.append(f"{rel}: in no folder of the layering block of docs/architecture.md")
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m or "/" not in m.group(1):
                continue  # a header beside the file, or a system header
            target = owner(rules, m.group(1))
            if target is None or allowed(rule, target):
                continue
            faults.append(f'{rel}:{number}: includes "{m.group(1)}" of {target}/, which {rule}/ may not reach')

    library_folder = {}
    cmake_files = sorted(source.rglob("CMakeLists.txt"))
    for cmake in cmake_files:
        rel = cmake.relative_to(source).parent.as_posix()
        if rel.split("/", 1)[0] in SKIPPED_TOP:
            continue
        for name in ADD_LIBRARY.findall(cmake.read_text()):
            library_folder[name] = rel
    for cmake in cmake_files:
        rel_dir = cmake.relative_to(source).parent.as_posix()
        if rel_dir.split("/", 1)[0] in SKIPPED_TOP:
            continue
        text = cmake.read_text()
        for m in LINK.finditer(text):
            library = m.group(1)
            folder = library_folder.get(library)
            if folder is None or folder.startswith("tests") or folder == ".":
                continue
            if folder not in rules:
                faults.append(f"{cmake.relative_to(source)}: library {library} is in {folder}/, which the layering block does not name")
                continue
            line_number = text.count("\n", 0, m.start()) + 1
            for linked in LIBRARY_NAME.findall(m.group(2)):
                target = library_folder.get(linked)
                if target is None or target == folder or allowed(folder, target):
                    continue
                faults.append(
                    f"{cmake.relative_to(source)}:{line_number}: {library} links {linked} of {target}/, which {folder}/ may not reach")
    return faults


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_layering.py SOURCE_DIR")
    faults = check(Path(sys.argv[1]).resolve())
    for fault in faults:
        print(fault)
    if faults:
        print(f"check_layering: {len(faults)} fault(s); the rule is the ```layering block of docs/architecture.md")
        return 1
    print("check_layering: every include and link keeps to the layering of docs/architecture.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
