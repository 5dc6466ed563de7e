#!/usr/bin/env bash
# install_test.sh BUILD_DIR DIR: `cmake --install` into a temporary prefix, the prefix
# moved elsewhere (a relocated install), and the installed ibt run from there:
#   - `project` finds the installed model and topology catalogs: a model and a topology
#     that exist ONLY in the installed catalogs (copies under new names) are found;
#   - `scaling` likewise;
#   - `report` runs the installed render script (marked in the copy, so the output proves
#     which one ran), and the page is written;
#   - IBT_DATA_DIR points a copied binary with no share/ beside it at the installed files;
#   - without any, the error names the missing folder (exit 2).
set -eu
build=$1 dir=$2 here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$dir"
cmake --install "$build" --prefix "$dir/first" > "$dir/install.log" || { cat "$dir/install.log"; fail "cmake --install"; }
mv "$dir/first" "$dir/moved"
prefix=$dir/moved
for f in bin/ibt share/ibt/models/catalog/llama3-8b.json share/ibt/topologies/catalog/dgx-h100.json \
         share/ibt/topologies/references/local-cpu.json share/ibt/reports/html/render_report.py; do
  [[ -e $prefix/$f ]] || fail "$f not installed"
done
# Names only the installed catalogs know.
sed 's/"name": *"tiny-dense"/"name": "installed-tiny"/' "$prefix/share/ibt/models/catalog/tiny-dense.json" \
  > "$prefix/share/ibt/models/catalog/installed-tiny.json"
sed 's/"name": *"local-cpu"/"name": "installed-cpu"/' "$prefix/share/ibt/topologies/catalog/local-cpu.json" \
  > "$prefix/share/ibt/topologies/catalog/installed-cpu.json"
sed -i 's/print(f"ibt report: wrote {path}")/print(f"ibt report (installed renderer): wrote {path}")/' \
  "$prefix/share/ibt/reports/html/render_report.py"
grep -q "installed renderer" "$prefix/share/ibt/reports/html/render_report.py" || fail "could not mark the installed renderer"
clean=(env -u IBT_MODELS_DIR -u IBT_TOPOLOGIES_DIR -u IBT_REPORT_SCRIPT_DIR -u IBT_DATA_DIR)
cd "$dir"  # not the source tree
"${clean[@]}" "$prefix/bin/ibt" project --model installed-tiny --topology installed-cpu --gpus 2 --out "$dir/p.h5" \
  > "$dir/project.log" || { cat "$dir/project.log"; fail "installed project"; }
grep -q "installed-tiny on 2 x installed-cpu" "$dir/project.log" || { cat "$dir/project.log"; fail "project output"; }
"${clean[@]}" "$prefix/bin/ibt" scaling --model installed-tiny --topology installed-cpu --gpus 1,2 --global-batch 4 \
  --out "$dir/p.h5" > "$dir/scaling.log" || { cat "$dir/scaling.log"; fail "installed scaling"; }
"${clean[@]}" "$prefix/bin/ibt" report "$dir/p.h5" --out "$dir/html" > "$dir/report.log" 2>&1 ||
  { cat "$dir/report.log"; fail "installed report"; }
grep -q "ibt report (installed renderer): wrote .*html/index.html" "$dir/report.log" ||
  { cat "$dir/report.log"; fail "the installed renderer did not run"; }
[[ -s $dir/html/index.html ]] || fail "no page"
# The validation bands and the atlas are read from the installed tree, not the source tree
# compiled in: a damaged installed copy is what the installed binary complains about.
for f in bands.json atlas.json; do
  [[ -s $prefix/share/ibt/topologies/validation/$f ]] || fail "topologies/validation/$f not installed"
done
cp "$prefix/share/ibt/topologies/validation/bands.json" "$dir/bands.good"
echo '{"coverage": 0.8}' > "$prefix/share/ibt/topologies/validation/bands.json"
"$here/../expect_exit.sh" 1 "$prefix/share/ibt/topologies/validation/bands.json are malformed" "${clean[@]}" \
  "$prefix/bin/ibt" project --model installed-tiny --topology installed-cpu --gpus 2 ||
  fail "the installed binary did not read the installed bands"
cp "$dir/bands.good" "$prefix/share/ibt/topologies/validation/bands.json"
cp "$prefix/share/ibt/topologies/validation/atlas.json" "$dir/atlas.good"
echo '[' > "$prefix/share/ibt/topologies/validation/atlas.json"
"$here/../expect_exit.sh" 2 "$prefix/share/ibt/topologies/validation/atlas.json" "${clean[@]}" \
  "$prefix/bin/ibt" crossover --atlas || fail "the installed binary did not read the installed atlas"
cp "$dir/atlas.good" "$prefix/share/ibt/topologies/validation/atlas.json"
# A copy of the binary alone finds the files through IBT_DATA_DIR.
mkdir -p "$dir/elsewhere" && cp "$prefix/bin/ibt" "$dir/elsewhere/ibt"
"${clean[@]}" IBT_DATA_DIR="$prefix/share/ibt" "$dir/elsewhere/ibt" project --model installed-tiny \
  --topology installed-cpu --gpus 2 > /dev/null || fail "IBT_DATA_DIR"
"$here/../expect_exit.sh" 2 "installed-tiny" "${clean[@]}" "$dir/elsewhere/ibt" project \
  --model installed-tiny --topology local-cpu --gpus 2 || fail "an unknown model was not refused by name"
echo "install_test: ok"
