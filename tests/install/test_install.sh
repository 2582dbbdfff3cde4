#!/usr/bin/env bash
# The installed tree works outside the source tree: `cmake --install` into a temporary prefix, then
# from an unrelated directory `flywheel info`, a plugin listing that finds the installed plugins
# through the installed default config, and a one-line generation; then `cpack -G DEB` packages
# the same tree. Usage: test_install.sh BUILD_DIR
set -euo pipefail
build="$(cd "$1" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
fail() { echo "install test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install failed"; }
for f in bin/flywheel bin/flywheel-tiny-model lib/flywheel/plugins/libdraft_ngram.so lib/flywheel/plugins/libq8_0_kernel.so \
         share/flywheel/conf/default.toml share/flywheel/conf/examples/speculative_plugin.toml \
         share/flywheel/conf/grafana/flywheel_dashboard.json share/flywheel/conf/prometheus/flywheel_rules.yml \
         share/flywheel/conf/calibration/prompts.txt include/flywheel/plugin_sdk.h; do
  [ -e "$prefix/$f" ] || fail "$f was not installed"
done
grep -q "\"$prefix/lib/flywheel/plugins\"" "$prefix/share/flywheel/conf/default.toml" ||
  fail "the installed default.toml does not point at the installed plugins"
if grep -q '^dir = "build/plugins"' "$prefix/share/flywheel/conf/examples/speculative_plugin.toml"; then
  fail "an installed example still points at build/plugins"
fi

# Outside the source tree, with nothing but the installed files.
work="$tmp/work"
mkdir -p "$work"
cd "$work"
"$prefix/bin/flywheel-tiny-model" --out tiny.gguf --type q8_0 > /dev/null
"$prefix/bin/flywheel" info --model tiny.gguf > info.txt 2>&1 || { cat info.txt; fail "flywheel info failed"; }
grep -q "q8_0" info.txt || { cat info.txt; fail "flywheel info names no kernel path for q8_0"; }
"$prefix/bin/flywheel" plugins --config "$prefix/share/flywheel/conf/examples/speculative_plugin.toml" > plugins.txt 2>&1 ||
  { cat plugins.txt; fail "flywheel plugins failed"; }
grep -q "draft_ngram" plugins.txt && grep -q "$prefix/lib/flywheel/plugins" plugins.txt ||
  { cat plugins.txt; fail "the plugin listing does not show draft_ngram from the installed plugin folder"; }
"$prefix/bin/flywheel" generate --model tiny.gguf --prompt "hello" --max-tokens 4 --temperature 0 --json > gen.json 2> gen.err ||
  { cat gen.err; fail "flywheel generate failed"; }
grep -q '"finish_reason"' gen.json || { cat gen.json gen.err; fail "no generation"; }

# No --config: the installed default.toml is the configuration; its feature_prompts points at the
# installed prompts, so a first use of the feature draft fits its map here, outside the source tree.
"$prefix/bin/flywheel" generate --model tiny.gguf --prompt "hello" --max-tokens 4 --temperature 0 \
    --draft feature --feature-map fm.gguf --json > spec.json 2> spec.err || { cat spec.err; fail "first-use fit failed"; }
grep -q "fitting it on $prefix/share/flywheel/conf/calibration/prompts.txt" spec.err ||
  { cat spec.err; fail "the first-use fit did not read the installed prompts"; }
[ -s fm.gguf ] || fail "the first-use fit wrote no feature map"

# The Debian package of the same tree.
(cd "$build" && cpack -G DEB -B "$tmp/pkg" > "$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail "cpack failed"; }
deb="$(ls "$tmp"/pkg/*.deb | head -1)"
[ -n "$deb" ] || fail "cpack made no .deb"
dpkg-deb -c "$deb" > "$tmp/contents.txt"
for f in ./usr/bin/flywheel ./usr/lib/flywheel/plugins/libdraft_ngram.so ./usr/share/flywheel/conf/default.toml; do
  grep -q " $f\$" "$tmp/contents.txt" || fail "$f is not in $(basename "$deb")"
done
dpkg-deb -x "$deb" "$tmp/unpacked"
grep -q '"/usr/lib/flywheel/plugins"' "$tmp/unpacked/usr/share/flywheel/conf/default.toml" ||
  fail "the packaged default.toml does not point at /usr/lib/flywheel/plugins"
echo "install test: installed, ran info, plugins and generate from $work, packaged $(basename "$deb")"
