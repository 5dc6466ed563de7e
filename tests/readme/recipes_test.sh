#!/usr/bin/env bash
# Runs the recipes of README.md verbatim, so the front page never shows a command that
# does not work.
#   tests/readme/recipes_test.sh BUILD_DIR SOURCE_DIR
# A recipe is the ```sh block directly under a "### Recipe: NAME" heading (blank lines
# between them allowed, nothing else). Each runs in a fresh temporary folder where build,
# scripts, models, topologies and tests (its format samples) are symlinks to BUILD_DIR and
# SOURCE_DIR's folders, as if typed in the repository root after the two commands, under bash with
# `set -eEo pipefail`: the first command that fails ends the recipe, and the test names
# the recipe, the line and the command. RECIPE_TIMEOUT (seconds, default 300) bounds each
# recipe. Prints one line per recipe with its wall time, then "N passed, M failed";
# exit 1 when any failed or none was found, 2 on bad arguments.
set -uo pipefail

if [ $# -ne 2 ] || [ ! -d "$1" ] || [ ! -d "$2" ]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
readme="$src/README.md"
limit=${RECIPE_TIMEOUT:-300}
[ -x "$build/ibt" ] || { echo "recipes_test: $build/ibt is not built" >&2; exit 2; }
[ -r "$readme" ] || { echo "recipes_test: cannot read $readme" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ibt-recipes.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Extract: recipe NN's name to $work/NN.name, its block to $work/NN.sh. A heading not
# followed by a ```sh block is an error (a recipe the test would silently skip).
if ! awk -v out="$work" '
  function fail(msg) { printf "recipes_test: README.md line %d: %s\n", NR, msg > "/dev/stderr"; bad = 1; exit 1 }
  state == "block" {
    if ($0 ~ /^```[[:space:]]*$/) { close(file); state = ""; next }
    print > file; next
  }
  state == "heading" {
    if ($0 ~ /^[[:space:]]*$/) next
    if ($0 ~ /^```sh[[:space:]]*$/) { state = "block"; next }
    fail("recipe \"" name "\" has no ```sh block directly under its heading")
  }
  /^### Recipe:/ {
    n++; name = $0; sub(/^### Recipe:[[:space:]]*/, "", name)
    file = sprintf("%s/%02d.sh", out, n)
    printf "%s\n", name > sprintf("%s/%02d.name", out, n)
    printf "" > file
    state = "heading"; next
  }
  END {
    if (bad) exit 1
    if (state != "") { printf "recipes_test: README.md ends inside recipe \"%s\"\n", name > "/dev/stderr"; exit 1 }
  }' "$readme"; then
  echo "0 passed, 1 failed (README.md could not be read as recipes)"
  exit 1
fi

passed=0 failed=0
shopt -s nullglob
recipes=("$work"/*.sh)
if [ ${#recipes[@]} -eq 0 ]; then
  echo "recipes_test: no \"### Recipe:\" heading with a \`\`\`sh block in $readme" >&2
  echo "0 passed, 0 failed"
  exit 1
fi

for script in "${recipes[@]}"; do
  id=$(basename "$script" .sh)
  name=$(cat "$work/$id.name")
  dir="$work/run-$id"
  mkdir -p "$dir"
  ln -s "$build" "$dir/build"
  for d in scripts models topologies tests; do ln -s "$src/$d" "$dir/$d"; done
  # The runner reports the failing command through files the ERR trap writes.
  cat > "$dir/.runner.sh" <<'RUNNER'
set -eEo pipefail
trap 'rc=$?; printf "%s\n" "$LINENO" > .failed_line; printf "%s\n" "$BASH_COMMAND" > .failed_command; printf "%s\n" "$rc" > .failed_rc' ERR
. ./.recipe.sh
RUNNER
  cp "$script" "$dir/.recipe.sh"
  start=$(date +%s.%N)
  (cd "$dir" && timeout --kill-after=10 "$limit" bash --noprofile --norc .runner.sh) > "$dir/.log" 2>&1
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    printf 'PASS  %-50s %6s s\n' "$name" "$secs"
    continue
  fi
  failed=$((failed + 1))
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    printf 'FAIL  %-50s %6s s: ran past %s s (RECIPE_TIMEOUT)\n' "$name" "$secs" "$limit"
  elif [ -f "$dir/.failed_command" ]; then
    printf 'FAIL  %-50s %6s s: line %s of its block, exit %s: %s\n' "$name" "$secs" \
      "$(cat "$dir/.failed_line")" "$(cat "$dir/.failed_rc")" "$(cat "$dir/.failed_command")"
  else
    printf 'FAIL  %-50s %6s s: exit %s\n' "$name" "$secs" "$rc"
  fi
  echo "----- last 30 lines of its output -----"
  tail -n 30 "$dir/.log"
  echo "---------------------------------------"
done

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
