#!/usr/bin/env bash
# Builds the mcpq container image (docs/production.md, "Container image") without Docker:
#
#   scripts/image.sh [--print-env]
#
# One image holds the three binaries (mcpq-ingress, mcpq-worker, mcpq-devbroker); the command
# of each container chooses which one runs (its default is mcpq-ingress). It is the image
# deploy/docker/Dockerfile builds with Docker, built here from Debian packages directly:
#
#   1. a minimal Debian bookworm root filesystem made by mmdebstrap (--variant=essential, no
#      apt, no compiler) from the mirrors this machine's apt uses, with exactly the packages
#      of the shared libraries the binaries link (scripts/check-images.sh --packages: readelf,
#      ldd, dpkg -S), ca-certificates and tini; documentation, manual pages and locales left
#      out by dpkg path-exclude; user and group mcpq = 10001, /var/lib/mcpq/files owned by
#      them. Kept as a tarball keyed on that package list and the mirrors, so it is made again
#      only when one of them changes;
#   2. with buildah: that tarball as the base layer, and a layer with the stripped binaries and
#      the demo tool deploy/local/tools/report.sh; USER 10001:10001, ENTRYPOINT tini, CMD
#      mcpq-ingress, MCPQ_LISTEN=0.0.0.0:8080, EXPOSE 8080, no HEALTHCHECK (Kubernetes probes
#      do that). Nothing in it writes outside /tmp and /var/lib/mcpq/files, so it runs with a
#      read-only root filesystem;
#   3. exported to IMAGE_DIR/<name>-<tag>.oci.tar (an oci-archive, gzip layers), and kept in
#      the local container storage of IMAGE_DIR for podman.
#
# The image is not built again when its inputs (the stripped binaries, the package list, the
# mirrors, the tool, this script, name and tag) are those of the last build and it is still
# in the storage. Prints the image's size (uncompressed and the archive) and fails over
# IMAGE_MAX_MB.
#
# Environment: BIN_DIR (default <repo>/build: a normal build, never a sanitizer one),
# IMAGE_DIR (default BIN_DIR/image), IMAGE_NAME (default mcpq), IMAGE_TAG (default
# `git describe --tags --always --dirty`), IMAGE_MAX_MB (default 100), IMAGE_SOURCES (an apt
# sources file for mmdebstrap; default: the files of /etc/apt that name bookworm).
#
# All container state (storage.conf, containers.conf, images, containers) lives under
# IMAGE_DIR/containers: nothing is written to /var/lib/containers or /etc/containers.
# --print-env prints the variables that point podman, buildah and skopeo at it
# (CONTAINERS_STORAGE_CONF, CONTAINERS_CONF) as shell assignments, and exits.
#
# Needs root (mmdebstrap --mode=root, buildah) and buildah, podman, runc, mmdebstrap, skopeo
# (scripts/deps.sh installs them).
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BIN_DIR=${BIN_DIR:-$REPO/build}
case $BIN_DIR in /*) ;; *) BIN_DIR=$PWD/$BIN_DIR ;; esac
IMAGE_DIR=${IMAGE_DIR:-$BIN_DIR/image}
case $IMAGE_DIR in /*) ;; *) IMAGE_DIR=$PWD/$IMAGE_DIR ;; esac
IMAGE_NAME=${IMAGE_NAME:-mcpq}
IMAGE_TAG=${IMAGE_TAG:-$(git -C "$REPO" describe --tags --always --dirty 2>/dev/null || echo dev)}
IMAGE_MAX_MB=${IMAGE_MAX_MB:-100}
SUITE=bookworm
BINARIES=(mcpq-ingress mcpq-worker mcpq-devbroker)

say() { printf 'image: %s\n' "$*" >&2; }
die() {
    say "$*"
    exit 1
}

# --- container configuration under IMAGE_DIR --------------------------------------------------
# overlay on the build dir's file system (runc; crun may refuse this machine's cgroup layout),
# cgroupfs, events to a file, and ulimits a sandbox accepts (podman's defaults may be refused).
CDIR=$IMAGE_DIR/containers
mkdir -p "$CDIR"
cat >"$CDIR/storage.conf.tmp" <<EOF
# Written by scripts/image.sh: the container storage of this build dir.
[storage]
driver = "overlay"
graphroot = "$CDIR/storage"
runroot = "$CDIR/run"
EOF
cat >"$CDIR/containers.conf.tmp" <<EOF
# Written by scripts/image.sh.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$CDIR/events.log"
tmp_dir = "$CDIR/run/libpod"
volume_path = "$CDIR/storage/volumes"
EOF
mv -f "$CDIR/storage.conf.tmp" "$CDIR/storage.conf"
mv -f "$CDIR/containers.conf.tmp" "$CDIR/containers.conf"
export CONTAINERS_STORAGE_CONF=$CDIR/storage.conf CONTAINERS_CONF=$CDIR/containers.conf
if [ "${1:-}" = --print-env ]; then
    printf 'export CONTAINERS_STORAGE_CONF=%q CONTAINERS_CONF=%q\n' "$CONTAINERS_STORAGE_CONF" "$CONTAINERS_CONF"
    exit 0
fi
[ $# -eq 0 ] || die "usage: scripts/image.sh [--print-env]"

# --- preflight --------------------------------------------------------------------------------
[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap --mode=root, buildah)"
for tool in mmdebstrap buildah podman runc skopeo readelf strip sha256sum; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/deps.sh installs it)"
done
for b in "${BINARIES[@]}"; do
    [ -x "$BIN_DIR/$b" ] || die "no $BIN_DIR/$b (make build)"
done
if grep -q '^MCPQ_SANITIZE:BOOL=ON' "$BIN_DIR/CMakeCache.txt" 2>/dev/null; then
    die "$BIN_DIR is a sanitizer build: its binaries cannot go in an image (use the normal build)"
fi
[[ $IMAGE_TAG =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "IMAGE_TAG '$IMAGE_TAG' is not a valid tag"
[[ $IMAGE_NAME =~ ^[a-z0-9]([a-z0-9._/:-]*[a-z0-9])?$ ]] || die "IMAGE_NAME '$IMAGE_NAME' is not a valid name"
REF=$IMAGE_NAME:$IMAGE_TAG
case $IMAGE_NAME in */*) LOCAL_REF=$REF ;; *) LOCAL_REF=localhost/$REF ;; esac
ARCHIVE=$IMAGE_DIR/$(tr '/:' '__' <<<"$IMAGE_NAME")-$IMAGE_TAG.oci.tar

# --- inputs -----------------------------------------------------------------------------------
PKGS=$("$REPO/scripts/check-images.sh" --packages "$BIN_DIR") || die "could not list the binaries' library packages"
mapfile -t PKG_LIST < <(printf '%s\n' "$PKGS" ca-certificates tini | sort -u)

# The mirrors apt uses here: every sources file of /etc/apt naming the suite (not a suite
# that merely contains the word, such as a vendor's "cloud-sdk-bookworm").
if [ -n "${IMAGE_SOURCES:-}" ]; then
    SOURCES=("$IMAGE_SOURCES")
else
    mapfile -t SOURCES < <(grep -lE "(^|[[:space:]])$SUITE(-updates|-security)?([[:space:]]|\$)" \
        /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
fi
[ ${#SOURCES[@]} -gt 0 ] || die "no apt sources file of /etc/apt names $SUITE (set IMAGE_SOURCES)"
mkdir -p "$IMAGE_DIR"
# mmdebstrap pastes a MIRROR that is a file into the chroot's sources; one file per format.
SRC_FILES=()
for f in "${SOURCES[@]}"; do
    out=$IMAGE_DIR/$(basename "$f")
    # Only the stanzas and lines of the suite (a file may also list other repositories).
    case $f in
    *.sources) awk -v RS= -v ORS='\n\n' -v s="$SUITE" '$0 ~ "Suites:[^\n]*(^|[ \t])" s "([- \t\n]|$)"' "$f" >"$out" ;;
    *) grep -E "^[[:space:]]*deb[[:space:]].*[[:space:]]$SUITE(-updates|-security)?[[:space:]]" "$f" >"$out" || true ;;
    esac
    [ -s "$out" ] && SRC_FILES+=("$out")
done
[ ${#SRC_FILES[@]} -gt 0 ] || die "no $SUITE line in ${SOURCES[*]} (set IMAGE_SOURCES)"

# The hooks run under sh with the root file system's path in $1 (hence single quotes).
# shellcheck disable=SC2016
MM=(mmdebstrap --variant=essential --mode=root --format=tar --quiet
    "--include=$(IFS=,; echo "${PKG_LIST[*]}")"
    # merged /usr by symlinks, without the usrmerge package (which pulls in perl).
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*'
    --dpkgopt='path-exclude=/usr/share/common-licenses/*'
    # The user every container runs as, and the ingress's files directory (a volume in
    # Kubernetes) owned by it.
    --customize-hook='echo "mcpq:x:10001:" >>"$1/etc/group"'
    --customize-hook='echo "mcpq:x:10001:10001:mcpq:/nonexistent:/usr/sbin/nologin" >>"$1/etc/passwd"'
    --customize-hook='echo "mcpq:*:19000:0:99999:7:::" >>"$1/etc/shadow"'
    --customize-hook='install -d -o 10001 -g 10001 -m 0750 "$1/var/lib/mcpq" "$1/var/lib/mcpq/files"'
    # What a container never needs: logs of the build, caches, apt's and debconf's leftovers.
    --customize-hook='rm -rf "$1"/var/log/* "$1"/var/cache/* "$1"/var/lib/apt/lists/* "$1"/var/cache/debconf/*-old'
)
ROOTFS_KEY=$( { printf '%s\n' "${MM[@]}"; cat "${SRC_FILES[@]}"; } | sha256sum | cut -c1-16)
ROOTFS=$IMAGE_DIR/rootfs-$ROOTFS_KEY.tar

STAGE=$IMAGE_DIR/stage
rm -rf "$STAGE"
mkdir -p "$STAGE/usr/local/bin" "$STAGE/opt/mcpq/tools"
for b in "${BINARIES[@]}"; do
    strip --strip-debug -o "$STAGE/usr/local/bin/$b" "$BIN_DIR/$b"
done
install -m 0755 "$REPO/deploy/local/tools/report.sh" "$STAGE/opt/mcpq/tools/report.sh"
KEY=$( {
    echo "$REF $ROOTFS_KEY"
    (cd "$STAGE" && find . -type f | sort | xargs sha256sum)
    sha256sum <"${BASH_SOURCE[0]}"
} | sha256sum | cut -c1-32)

report() { # the size lines
    local bytes arch
    bytes=$(podman image inspect --format '{{.Size}}' "$LOCAL_REF")
    arch=$(stat -c %s "$ARCHIVE")
    printf 'image: %s: %s MB uncompressed, archive %s MB (%s)\n' "$REF" \
        "$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')" \
        "$(awk -v b="$arch" 'BEGIN { printf "%.1f", b / 1e6 }')" "$ARCHIVE"
    {
        echo "IMAGE_REF=$LOCAL_REF"
        echo "IMAGE_ARCHIVE=$ARCHIVE"
        echo "IMAGE_BYTES=$bytes"
        echo "IMAGE_ARCHIVE_BYTES=$arch"
        echo "IMAGE_KEY=$KEY"
    } >"$IMAGE_DIR/image.env"
    if [ "$bytes" -gt $((IMAGE_MAX_MB * 1000 * 1000)) ]; then
        die "the image is over IMAGE_MAX_MB=$IMAGE_MAX_MB MB"
    fi
}

if [ -f "$ARCHIVE" ] && [ "$(cat "$ARCHIVE.key" 2>/dev/null)" = "$KEY" ] &&
    podman image exists "$LOCAL_REF" 2>/dev/null; then
    say "$REF is up to date (same binaries, packages, mirrors and script)"
    report
    exit 0
fi

# --- 1. the root filesystem -------------------------------------------------------------------
if [ ! -s "$ROOTFS" ]; then
    say "mmdebstrap $SUITE with ${PKG_LIST[*]} (from ${SOURCES[*]})"
    start=$SECONDS
    rm -f "$IMAGE_DIR"/rootfs-*.tar "$IMAGE_DIR"/rootfs.tmp.tar
    "${MM[@]}" "$SUITE" "$IMAGE_DIR/rootfs.tmp.tar" "${SRC_FILES[@]}" >"$IMAGE_DIR/mmdebstrap.log" 2>&1 || {
        tail -n 30 "$IMAGE_DIR/mmdebstrap.log" >&2
        die "mmdebstrap failed (log: $IMAGE_DIR/mmdebstrap.log)"
    }
    mv -f "$IMAGE_DIR/rootfs.tmp.tar" "$ROOTFS"
    say "root filesystem in $((SECONDS - start)) s: $ROOTFS"
else
    say "root filesystem unchanged: $ROOTFS"
fi

# --- 2. the image -----------------------------------------------------------------------------
# buildah keeps a cache of blob digests in /var/lib/containers/cache whatever the storage
# (podman keeps it in the storage above): removed again when this build created it.
ctr=
VLC=/var/lib/containers
vlc_existed=0
[ -e "$VLC" ] && vlc_existed=1
cleanup() {
    [ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true
    [ "$vlc_existed" = 1 ] || rm -rf "$VLC"
}
trap cleanup EXIT

BASE_REF=localhost/mcpq-rootfs:$ROOTFS_KEY
if ! buildah inspect --type image "$BASE_REF" >/dev/null 2>&1; then
    ctr=$(buildah from --quiet scratch)
    buildah add --quiet "$ctr" "$ROOTFS" / >/dev/null
    buildah commit --quiet --rm "$ctr" "$BASE_REF" >/dev/null
    ctr=
fi

ctr=$(buildah from --quiet --pull-never "$BASE_REF")
buildah add --quiet "$ctr" "$STAGE/usr/local/bin" /usr/local/bin >/dev/null
buildah add --quiet "$ctr" "$STAGE/opt/mcpq" /opt/mcpq >/dev/null
buildah config \
    --user 10001:10001 \
    --workingdir /opt/mcpq \
    --env PATH=/usr/local/bin:/usr/bin:/bin \
    --env TMPDIR=/tmp \
    --env MCPQ_LISTEN=0.0.0.0:8080 \
    --port 8080/tcp \
    --entrypoint '["/usr/bin/tini", "--"]' \
    --cmd '["/usr/local/bin/mcpq-ingress"]' \
    --label org.opencontainers.image.title=mcpq \
    --label org.opencontainers.image.licenses=Apache-2.0 \
    --label "org.opencontainers.image.version=$IMAGE_TAG" \
    --label "org.opencontainers.image.revision=$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)" \
    "$ctr"
buildah commit --quiet --rm "$ctr" "$LOCAL_REF" >/dev/null
ctr=

# --- 3. the archive ---------------------------------------------------------------------------
rm -f "$ARCHIVE" "$ARCHIVE.key"
# podman, not buildah: podman keeps its blob-info cache in the storage above, buildah in
# /var/lib/containers/cache.
podman push --quiet "$LOCAL_REF" "oci-archive:$ARCHIVE:$REF" >/dev/null
echo "$KEY" >"$ARCHIVE.key"
# Earlier builds (every commit has its own tag): in the storage, only this image and its
# base are kept; of the archives of this name, the three newest.
podman images --format '{{.Repository}}:{{.Tag}}' |
    grep -E "^(localhost/)?($IMAGE_NAME|mcpq-rootfs):" | grep -vxF -e "$LOCAL_REF" -e "$BASE_REF" |
    xargs -r podman rmi --force >/dev/null 2>&1 || true
podman image prune --force >/dev/null 2>&1 || true
# shellcheck disable=SC2012 # our own file names
ls -t "$IMAGE_DIR/$(tr '/:' '__' <<<"$IMAGE_NAME")"-*.oci.tar 2>/dev/null | tail -n +4 |
    while read -r old; do rm -f "$old" "$old.key"; done
report
