#!/usr/bin/env bash
# Installs the Debian packages mcpq builds, runs and tests with. Idempotent: when every
# package is present it only checks (dpkg-query) and returns in well under a second.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config clang-format
  librdkafka-dev libmicrohttpd-dev libcjson-dev libssl-dev libhiredis-dev libcurl4-openssl-dev
  redis-server curl ca-certificates openssl
  nodejs npm python3
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    # node and npm may come from outside Debian (an image's own Node.js): accept them on PATH.
    case "$p" in
      nodejs) command -v node >/dev/null && continue ;;
      npm) command -v npm >/dev/null && continue ;;
    esac
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "deps: installing ${missing[*]}" >&2
SUDO=
if [ "$(id -u)" != 0 ]; then
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done" >&2
