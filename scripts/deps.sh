#!/usr/bin/env bash
# Installs the Debian packages mcpq builds, runs and tests with. Idempotent: when every
# package is present it only checks (dpkg-query) and returns in well under a second.
set -euo pipefail

# The libraries the build links and what has no program of its own; every program the tests,
# scripts and launcher run comes from a package of scripts/programs.txt (its second column,
# except those marked optional), installed too: ctest static/programs checks that list is
# complete. The container image (scripts/image.sh, tests/e2e/test_image.sh) takes mmdebstrap,
# buildah, podman with runc, skopeo, uidmap and fuse-overlayfs from there.
PKGS=(
  librdkafka-dev libmicrohttpd-dev libcjson-dev libssl-dev libhiredis-dev libcurl4-openssl-dev
  ca-certificates
  # test data, no program: the official JSON Schema Test Suite (tests/draft2020-12) that
  # unit/common/test_sch_suite runs (docs/tools.md "Input schemas" says why not npm's copy)
  libtest-json-schema-acceptance-perl
)
while read -r prog pkg opt; do
  case $prog in '' | '#'*) continue ;; esac
  [ "$opt" = optional ] && continue
  [[ " ${PKGS[*]} " == *" $pkg "* ]] || PKGS+=("$pkg")
done <"$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/programs.txt"

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
      # Only for promtool (tests/e2e/test_metrics.sh, scripts/check-deploy.sh: `promtool check
      # metrics` and `check rules`); any promtool on PATH will do. The package (~96 MB) also
      # brings a Prometheus server, which is never started (see policy-rc.d below).
      prometheus) command -v promtool >/dev/null && continue ;;
      # Only for systemd-analyze (tests/e2e/test_install.sh checks the units of deploy/systemd).
      systemd) command -v systemd-analyze >/dev/null && continue ;;
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
# Packages that ship a service (prometheus) must not start it: a policy-rc.d that says
# "forbidden" (exit 101) stops invoke-rc.d and deb-systemd-invoke, with or without systemd.
# Docker images usually have one already; otherwise one is in place for this install only.
POLICY=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
  $SUDO chmod 755 "$POLICY"
  own_policy=1
fi
drop_policy() { if [ "$own_policy" = 1 ]; then $SUDO rm -f "$POLICY"; fi; }
trap drop_policy EXIT
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done" >&2
