#!/usr/bin/env bash
# Installs the Debian packages mcpq builds, runs and tests with. Idempotent: when every
# package is present it only checks (dpkg-query) and returns in well under a second.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config clang-format
  librdkafka-dev libmicrohttpd-dev libcjson-dev libssl-dev libhiredis-dev libcurl4-openssl-dev
  redis-server curl ca-certificates openssl
  nodejs npm python3
  kubernetes-client
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    # node, npm and kubectl may come from outside Debian (the image's own): accept them on PATH.
    case "$p" in
      nodejs) command -v node >/dev/null && continue ;;
      npm) command -v npm >/dev/null && continue ;;
      # kubectl renders deploy/kubernetes (kubectl kustomize, scripts/check-deploy.sh). Debian's
      # is 1.20 (kustomize v2.0.3); a newer kubectl on PATH (e.g. the image's own) does too,
      # and installing Debian's over it would clash on /usr/bin/kubectl.
      kubernetes-client) command -v kubectl >/dev/null && continue ;;
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
