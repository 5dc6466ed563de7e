#!/usr/bin/env bash
# browser_check.sh PAGE.html SCREENSHOT.png MIN_FIGURES: loads the page in headless Chromium
# (a fresh profile, no network services) and passes when every figure decoded, the page's
# own script ran and counted them (#ibt-render-status), the console logged nothing, and
# a screenshot was written. Exit 77 (CTest: skipped) only when no Chromium is installed.
set -u
page=$1 shot=$2 min_figures=$3
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z $browser ]]; then echo "browser_check: no chromium installed (Debian package chromium)" >&2; exit 77; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
       --disable-sync --no-first-run --enable-logging=stderr --v=0 --virtual-time-budget=10000)
url="file://$(realpath "$page")"
"$browser" "${flags[@]}" --user-data-dir="$work/profile" --dump-dom "$url" > "$work/dom.html" 2> "$work/stderr"
status=$(grep -o '<p id="ibt-render-status"[^>]*>[^<]*' "$work/dom.html" || true)
expected=$(grep -o "<img class='fig'" "$page" | wc -l)
echo "browser_check: $status (the page holds $expected figures)"
fail() { echo "browser_check: FAIL: $*" >&2; exit 1; }
[[ $status == *"render-ok"* ]] || fail "the page did not report render-ok"
[[ $status == *"data-rendered=\"$expected\""* ]] || fail "not all $expected figures decoded"
(( expected >= min_figures )) || fail "only $expected figures, expected at least $min_figures"
if grep -q ':CONSOLE' "$work/stderr"; then grep ':CONSOLE' "$work/stderr" >&2; fail "console messages"; fi
rm -f "$shot"
"$browser" "${flags[@]}" --user-data-dir="$work/profile2" --window-size=1400,3000 --screenshot="$shot" "$url" \
  > /dev/null 2>&1
[[ -s $shot ]] || fail "no screenshot written to $shot"
echo "browser_check: ok, screenshot $shot"
