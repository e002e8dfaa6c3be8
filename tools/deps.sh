#!/bin/sh
# deps.sh — installs the Debian packages keel builds and tests with, when any is missing.
# Uses apt-get as root or through sudo; otherwise prints the command and exits 2.
set -eu
PKGS="cmake make pkg-config gcc clang libclang-rt-14-dev liblua5.4-dev lua5.4 libyaml-dev
libcmocka-dev zlib1g-dev libedit-dev libenet-dev lua-busted lua-filesystem libmicrohttpd-dev libjansson-dev curl git
diffutils luarocks"
# the inspector's browser test (tests/browser/): Debian's Chromium, and Node.js with npm for
# puppeteer-core unless the machine already has them
PKGS="$PKGS chromium"
command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
echo "keel: installing missing packages:$missing" >&2
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo"
else
    echo "keel: run this first, then try again:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y$missing" >&2
    exit 2
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
