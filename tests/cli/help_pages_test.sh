#!/usr/bin/env bash
# help_pages_test.sh IBT DIR: every command's --help has the one layout print_help gives
# (cli/cli.hpp): "usage: ... ibt CMD ...", a blank line, a one-paragraph description, a
# blank line, "options:" and the option groups, optional "notes:", then "examples:" with
# commands that run ibt CMD; defaults print as typed (no 0.0030000000000000001); `ibt help
# CMD` prints the same page. The checker is first shown to reject a page that breaks it.
set -u
ibt=$1 dir=$2
mkdir -p "$dir"
fail() { echo "help_pages_test: FAIL: $*" >&2; exit 1; }

# check_page CMD FILE: prints what is wrong, returns 1 if anything is.
check_page() {
  awk -v cmd="$1" '
    function bad(why) { print cmd ": " why; wrong = 1 }
    { line[NR] = $0 }
    END {
      if (line[1] !~ ("^usage: (mpiexec -n N )?ibt " cmd "( |$)")) bad("line 1 is not the usage line: " line[1])
      i = 2
      while (i <= NR && line[i] ~ /^       /) i++           # continuation lines of the usage
      if (line[i] != "") bad("no blank line after the usage")
      i++
      if (line[i] == "") bad("no description")
      while (i <= NR && line[i] != "") i++                   # the one paragraph
      i++
      if (line[i] != "options:") bad("the description is not one paragraph followed by options: (" line[i] ")")
      options = 0; notes = 0; examples = 0
      for (j = 1; j <= NR; j++) {
        if (line[j] == "options:" && !options) options = j
        if (line[j] == "notes:") notes = j
        if (line[j] == "examples:") examples = j
        if (line[j] ~ /[0-9]\.[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]/) bad("a float printed with a long tail: " line[j])
        if (length(line[j]) > 120) bad("a line of " length(line[j]) " columns (limit 120): " substr(line[j], 1, 60))
      }
      if (!examples) bad("no examples: section")
      if (notes && (notes < options || notes > examples)) bad("notes: is not between the options and the examples")
      if (!options || examples < options) bad("no options: section, or examples: comes before options:")
      n = 0
      for (j = examples + 1; j <= NR; j++) {
        if (line[j] == "") continue
        if (line[j] !~ /^  /) bad("an example line is not indented: " line[j])
        if (line[j] ~ ("ibt " cmd "( |$)")) n++
        # A long example continues on lines indented 6, after a line ending in " \\".
        if (line[j] ~ /^      / && line[j - 1] !~ / \\$/) bad("an example continues without a backslash: " line[j])
      }
      if (n == 0) bad("no example runs ibt " cmd)
      exit wrong
    }' "$2"
}

# The checker must be able to fail: a page with its examples before the options, a
# two-paragraph description, a long float default, a line past 120 columns and an example
# continued without a backslash.
printf 'usage: ibt demo [options]\n\nOne.\n\nTwo.\n\nexamples:\n  ibt demo\n      --y 1\n\noptions:\n  --x arg (=0.0030000000000000001)\n  --z %0130d\n' 0 \
  > "$dir/broken.txt"
if check_page demo "$dir/broken.txt" > "$dir/broken.log"; then fail "the checker passed a broken page"; fi
for why in "not one paragraph" "long tail" "examples: comes before options:" "columns (limit 120)" "without a backslash"; do
  grep -q "$why" "$dir/broken.log" || fail "the checker did not say '$why' of the broken page"
done

commands=$("$ibt" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
[[ $(wc -w <<<"$commands") -ge 15 ]] || fail "ibt --help lists only: $commands"
status=0
for cmd in $commands; do
  "$ibt" "$cmd" --help > "$dir/$cmd.txt" 2>&1 || { echo "ibt $cmd --help: exit $?"; status=1; continue; }
  check_page "$cmd" "$dir/$cmd.txt" || status=1
  "$ibt" help "$cmd" > "$dir/$cmd.help.txt" 2>&1 || { echo "ibt help $cmd: exit $?"; status=1; }
  cmp -s "$dir/$cmd.txt" "$dir/$cmd.help.txt" || { echo "ibt help $cmd differs from ibt $cmd --help"; status=1; }
done
[[ $status -eq 0 ]] || fail "help pages above"
grep -q "^usage: mpiexec -n N ibt collectives" "$dir/collectives.help.txt" || fail "ibt help collectives is not the collectives help"
echo "help_pages_test: ok ($(wc -w <<<"$commands") commands)"
