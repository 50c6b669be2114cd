#!/usr/bin/env bash
# Redraws docs/architecture.png from the code with farm-studio (the house picture tool of our
# workplace). farm-studio passes over a folder named `build` as generated output, so the picture
# is drawn from a copy of src/ in which src/build is named `build_` (imports renamed to match);
# nothing else differs. Usage: scripts/architecture-picture.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
house="$tmp/okp"
mkdir "$house"
cp -r src "$house/src"
mv "$house/src/build" "$house/src/build_"
grep -rl 'build::' "$house/src" | xargs sed -i -E 's/\b(crate|okp)::build::/\1::build_::/g; s/^pub mod build;/pub mod build_;/'
sed -i 's/^pub mod build;$/pub mod build_;/' "$house/src/lib.rs"
git -C "$house" init -q
out=$(cd "$house" && farm-studio look src)
echo "$out" | head -1
png=$(echo "$out" | head -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["picture"])')
cp "$png" docs/architecture.png
echo "$out" | sed -n '/THE SHEET IN WORDS/,$p' | sed 's#src/build_/#src/build/#' > docs/architecture-sheet.txt
echo "wrote docs/architecture.png and docs/architecture-sheet.txt"
