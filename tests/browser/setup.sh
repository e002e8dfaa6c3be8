#!/bin/sh
# setup.sh SRC BUILD — what the inspector's browser test needs: Debian's chromium (tools/deps.sh
# installs it) and puppeteer-core at the version package-lock.json pins, installed with `npm ci`
# into BUILD/browser (the source tree is left alone). Fails, saying why, when either is missing.
set -eu
src=$1/tests/browser
out=$2/browser
chromium=${KEEL_CHROMIUM:-/usr/bin/chromium}
if ! "$chromium" --version >/dev/null 2>&1; then
    echo "inspector_browser: no Chromium at $chromium: install Debian's chromium (sh tools/deps.sh does)" >&2
    exit 1
fi
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "inspector_browser: node and npm are needed for puppeteer-core: install Debian's nodejs and npm (sh tools/deps.sh does)" >&2
    exit 1
fi
mkdir -p "$out"
cp "$src/package.json" "$src/package-lock.json" "$src"/*.mjs "$out/"
# npm ci again only when the lock file changed since the last install
if [ -f "$out/node_modules/.keel-lock" ] && cmp -s "$out/package-lock.json" "$out/node_modules/.keel-lock"; then
    exit 0
fi
cd "$out"
if ! npm ci --no-audit --no-fund --loglevel=error; then
    echo "inspector_browser: npm ci failed (is the npm registry reachable?)" >&2
    exit 1
fi
cp package-lock.json node_modules/.keel-lock
