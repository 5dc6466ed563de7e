#!/usr/bin/env bash
# clang_format_test.sh SOURCE: every tracked C, C++ and CUDA file is formatted as the
# root .clang-format says (clang-format --dry-run --Werror); fails naming each file that
# is not, with the command that fixes it. scripts/setup.sh installs clang-format.
set -uo pipefail
cd "$1" || exit 2
command -v clang-format >/dev/null || { echo "FAIL: clang-format is not installed (scripts/setup.sh installs it)"; exit 1; }
# The tracked sources; outside a git checkout (a copied tree), every such file but build/'s.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.c' '*.cu' '*.cuh')
else
  mapfile -t files < <(find . -path ./build -prune -o -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \
    -o -name '*.c' -o -name '*.cu' -o -name '*.cuh' \) -print | sed 's|^\./||' | sort)
fi
((${#files[@]})) || { echo "FAIL: no tracked sources found under $1 (not a git checkout?)"; exit 1; }
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'not formatted: %s\n' "${bad[@]}"
  echo "FAIL: ${#bad[@]} of ${#files[@]} files differ from .clang-format; fix with: clang-format -i ${bad[*]}"
  exit 1
fi
echo "PASS: ${#files[@]} files formatted as .clang-format says ($(clang-format --version))"
