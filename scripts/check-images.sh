#!/usr/bin/env bash
# Checks deploy/docker/Dockerfile offline (no Docker engine runs here):
#
#   scripts/check-images.sh [BUILD_DIR] [DOCKERFILE]
#   scripts/check-images.sh --packages [BUILD_DIR]
#
# --packages prints, one per line, the Debian packages owning the shared libraries the three
# binaries link directly (readelf NEEDED, resolved by ldd, owner by dpkg -S) and nothing else:
# what scripts/image.sh installs into the image (their own dependencies come with them).
#
# BUILD_DIR defaults to <repo>/build (its mcpq-ingress, mcpq-worker, mcpq-devbroker are what
# `ldd` is asked about), DOCKERFILE to <repo>/deploy/docker/Dockerfile. The image is one stage,
# `mcpq` (the last one, what `docker build` builds), holding the three binaries like the image
# of scripts/image.sh; it checks that:
#   1. the stage exists and copies each binary from the build stage to /usr/local/bin; its
#      exec-form ENTRYPOINT is tini (["/usr/bin/tini", "--"]: PID 1 reaps what exec tools
#      leave) and its exec-form CMD runs /usr/local/bin/mcpq-ingress (the default binary);
#   2. every shared library `ldd BUILD_DIR/<binary>` lists belongs (dpkg -S) to a package that
#      the stage installs or that those packages depend on, recursively (Depends and
#      Pre-Depends from the dpkg database of this machine, which builds with the -dev
#      packages of the same Debian release as the image: libssl-dev pulls libssl3, which is
#      what the stage must name). Sanitizer runtimes (an ASan build dir), and the libraries
#      only they need, are not image libraries and are skipped;
#   3. the stage (nor a stage it is built FROM) installs no compiler, build tool or -dev
#      package, each apt-get install there says --no-install-recommends, and it installs what
#      scripts/image.sh adds to the libraries: ca-certificates and tini;
#   4. the stage runs as a numeric, non-root USER (runAsNonRoot can only verify a number);
#   5. the stage EXPOSEs the port of its MCPQ_LISTEN (the ingress's).
# Also: the build stage configures with -DMCPQ_WERROR=ON, .dockerignore lets in every path
# the Dockerfile COPYs from the context, and there is no HEALTHCHECK (Kubernetes probes).
#
# Prints one line per check and "images: N passed, M failed"; exits non-zero on any failure.
# USERS, ENTRY and CMDS are read through `inherited` (a nameref), which shellcheck cannot follow.
# shellcheck disable=SC2034
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PACKAGES_ONLY=0
if [ "${1:-}" = --packages ]; then
    PACKAGES_ONLY=1
    shift
fi
BUILD_DIR=${1:-$REPO/build}
DOCKERFILE=${2:-$REPO/deploy/docker/Dockerfile}
DOCKERIGNORE=$REPO/.dockerignore
TARGETS=(ingress worker devbroker)
IMAGE_STAGE=mcpq

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); printf 'ok   %s\n' "$*"; }
bad() { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$*"; }
note() { printf '     %s\n' "$*"; }

for tool in ldd dpkg dpkg-query; do
    command -v "$tool" >/dev/null || { echo "images: $tool is required" >&2; exit 2; }
done
[ -f "$DOCKERFILE" ] || { echo "images: no $DOCKERFILE" >&2; exit 2; }
for t in "${TARGETS[@]}"; do
    [ -x "$BUILD_DIR/mcpq-$t" ] || { echo "images: no $BUILD_DIR/mcpq-$t (run make build)" >&2; exit 2; }
done

# --- parse the Dockerfile -------------------------------------------------------------------
# One instruction per line: comment lines dropped (also inside continuations, as Docker does),
# continuation lines joined.
instructions() {
    awk '
        /^[[:space:]]*#/ { next }
        {
            line = $0
            if (sub(/\\[[:space:]]*$/, "", line)) { acc = acc line " "; next }
            acc = acc line
            if (acc ~ /[^[:space:]]/) print acc
            acc = ""
        }
        END { if (acc ~ /[^[:space:]]/) print acc }
    ' "$1"
}

declare -A ARGS PARENT PKGS USERS ENTRY CMDS EXPOSE COPIES ENVS RECOMMENDS
HEALTHCHECKS=0
STAGES=()
stage=
while IFS= read -r line; do
    read -r kw rest <<<"$line"
    kw=${kw^^}
    case $kw in
    ARG)
        [[ $rest == *=* ]] && ARGS[${rest%%=*}]=${rest#*=}
        ;;
    FROM)
        read -r -a w <<<"$rest"
        stage=
        parent=${w[0]}
        for a in "${!ARGS[@]}"; do parent=${parent//\$\{$a\}/${ARGS[$a]}}; done
        for ((i = 1; i < ${#w[@]}; i++)); do
            if [ "${w[i]^^}" = AS ]; then stage=${w[i + 1]}; fi
        done
        [ -n "$stage" ] || stage="#${#STAGES[@]}"
        STAGES+=("$stage")
        PARENT[$stage]=$parent
        PKGS[$stage]=
        COPIES[$stage]=
        ENVS[$stage]=
        RECOMMENDS[$stage]=0
        ;;
    RUN)
        # Every `apt-get install` of the RUN: the words after it up to the next && ; or |.
        # RECOMMENDS counts the installs without --no-install-recommends.
        read -r -a w <<<"${rest//&&/ ; }"
        inst=0 flag=0 prev=
        for word in "${w[@]}" ';'; do
            case $word in
            ';' | '|' | '||')
                [ "$inst" = 1 ] && [ "$flag" = 0 ] && RECOMMENDS[$stage]=$((RECOMMENDS[$stage] + 1))
                inst=0
                ;;
            install) case $prev in apt-get | apt) inst=1 flag=0 ;; esac ;;
            --no-install-recommends) flag=1 ;;
            -*) ;;
            *) [ "$inst" = 1 ] && PKGS[$stage]+=" $word" ;;
            esac
            prev=$word
        done
        ;;
    USER) USERS[$stage]=$rest ;;
    ENTRYPOINT) ENTRY[$stage]=$rest ;;
    CMD) CMDS[$stage]=$rest ;;
    HEALTHCHECK) HEALTHCHECKS=$((HEALTHCHECKS + 1)) ;;
    EXPOSE) EXPOSE[$stage]+=" $rest" ;;
    ENV) ENVS[$stage]+=" $rest" ;;
    COPY | ADD) COPIES[$stage]+="$rest"$'\n' ;;
    esac
done < <(instructions "$DOCKERFILE")

is_stage() { [ -n "${PARENT[$1]+x}" ]; }
# The chain of stages a stage is built FROM, itself first.
chain() {
    local s=$1
    while is_stage "$s"; do
        echo "$s"
        s=${PARENT[$s]}
    done
}
inherited() { # MAP STAGE: the nearest value along the chain
    local -n map=$1
    local s
    for s in $(chain "$2"); do
        if [ -n "${map[$s]:-}" ]; then
            echo "${map[$s]}"
            return
        fi
    done
}

# --- package closure from the dpkg database ---------------------------------------------------
# One dpkg-query for every installed package: name -> "Depends, Pre-Depends".
declare -A DEPS
while IFS=$'\t' read -r name status deps; do
    case $status in *' installed') DEPS[$name]=$deps ;; esac
done < <(dpkg-query -W -f='${Package}\t${Status}\t${Depends}, ${Pre-Depends}\n')
installed() { [ -n "${DEPS[$1]+x}" ]; }
# Every package the given ones pull in (Depends, Pre-Depends), each alternative that is
# installed here; prints one name per line.
closure() {
    local -A seen=()
    local queue=("$@") p d
    while [ ${#queue[@]} -gt 0 ]; do
        p=${queue[0]}
        queue=("${queue[@]:1}")
        [ -n "${seen[$p]+x}" ] && continue
        seen[$p]=1
        installed "$p" || continue
        while IFS= read -r d; do
            d=${d%%(*}
            d=${d%%:*}
            d=${d// /}
            [ -n "$d" ] && [ -z "${seen[$d]+x}" ] && queue+=("$d")
        done <<<"${DEPS[$p]//[,|]/$'\n'}"
    done
    printf '%s\n' "${!seen[@]}"
}

# The package that owns each library path: one dpkg -S for every path of every binary, under
# each name dpkg may know it by (usrmerge: /lib or /usr/lib; the symlink or the real file).
declare -A OWNER LIBS
candidates() {
    local path=$1 real
    real=$(readlink -f "$path" 2>/dev/null || echo "$path")
    printf '%s\n' "$path" "${path#/usr}" "/usr$path" "$real" "${real#/usr}" "/usr$real"
}
owner() {
    local cand
    while IFS= read -r cand; do
        if [ -n "${OWNER[$cand]:-}" ]; then
            echo "${OWNER[$cand]}"
            return 0
        fi
    done < <(candidates "$1")
    return 1
}
load_owners() {
    local t line pkg path paths=()
    for t in "${TARGETS[@]}"; do
        LIBS[$t]=$(ldd "$BUILD_DIR/mcpq-$t")
        while read -r name arrow path _; do
            [ "$arrow" = '=>' ] || path=$name
            case $path in /*) mapfile -t -O "${#paths[@]}" paths < <(candidates "$path") ;; esac
        done <<<"${LIBS[$t]}"
    done
    while IFS= read -r line; do
        pkg=${line%%: *}
        path=${line#*: }
        OWNER[$path]=${pkg%%:*}
    done < <(printf '%s\n' "${paths[@]}" | sort -u | xargs dpkg -S 2>/dev/null || true)
}
load_owners

# The packages owning the libraries the binaries link directly (what scripts/image.sh
# installs), one per line; exits 2 on a sanitizer build or a library no package owns.
needed_packages() {
    command -v readelf >/dev/null || { echo "images: readelf (binutils) is required" >&2; exit 2; }
    local t lib path
    for t in "${TARGETS[@]}"; do
        while read -r lib; do
            case $lib in libasan.so.* | libubsan.so.* | liblsan.so.* | libtsan.so.*)
                echo "images: $BUILD_DIR/mcpq-$t is a sanitizer build: its runtime is no image library" >&2
                exit 2 ;;
            esac
            path=$(awk -v n="$lib" '$1 == n && $2 == "=>" { print $3 }' <<<"${LIBS[$t]}")
            if [ -z "$path" ] || ! owner "$path"; then
                echo "images: no Debian package owns $lib of mcpq-$t (${path:-not found by ldd})" >&2
                exit 2
            fi
        done < <(readelf -d "$BUILD_DIR/mcpq-$t" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    done | sort -u
    return "${PIPESTATUS[0]}"
}
if [ "$PACKAGES_ONLY" = 1 ]; then
    needed_packages
    exit 0
fi

FORBIDDEN='(-dev|-dbg)$|^(build-essential|gcc(-[0-9]+)?|g\+\+(-[0-9]+)?|cpp(-[0-9]+)?|clang(-[0-9]+)?|llvm.*|cmake|make|pkg-config|pkgconf|binutils.*|autoconf|automake|libtool|bison|flex|git)$'

# --- checks -----------------------------------------------------------------------------------
echo "images: $DOCKERFILE against $BUILD_DIR"

if is_stage build && grep -q -- '-DMCPQ_WERROR=ON' <<<"$(instructions "$DOCKERFILE" | awk '/^FROM .* [Aa][Ss] build$/{b=1;next} /^FROM /{b=0} b')"; then
    ok "build stage configures with -DMCPQ_WERROR=ON"
else
    bad "build stage: no stage 'build' running cmake -DMCPQ_WERROR=ON"
fi

# .dockerignore must let in every COPY source from the context.
if [ -f "$DOCKERIGNORE" ]; then
    missing_ctx=()
    while IFS= read -r src; do
        [ -n "$src" ] || continue
        allowed=0
        while IFS= read -r pat; do
            pat=${pat%/}
            case $src in "$pat" | "$pat"/*) allowed=1 ;; esac
        done < <(sed -n 's/^!//p' "$DOCKERIGNORE")
        [ "$allowed" = 1 ] || missing_ctx+=("$src")
    done < <(for s in "${STAGES[@]}"; do printf '%s' "${COPIES[$s]}"; done |
        grep -v -- '--from=' | awk '{for (i = 1; i < NF; i++) if ($i !~ /^--/) print $i}' |
        sed 's,/$,,' | sort -u)
    if [ ${#missing_ctx[@]} -eq 0 ]; then
        ok ".dockerignore lets in every COPY source"
    else
        bad ".dockerignore excludes COPY sources: ${missing_ctx[*]}"
    fi
else
    bad "no .dockerignore next to the build context ($DOCKERIGNORE)"
fi

if [ "$HEALTHCHECKS" = 0 ]; then
    ok "no HEALTHCHECK (Kubernetes probes /healthz and /readyz)"
else
    bad "the Dockerfile has a HEALTHCHECK: the image has none (Kubernetes probes do that)"
fi

SANITIZED=
grep -qE '(^|[[:space:]])lib(a|ub)san\.so' <<<"${LIBS[ingress]}" && SANITIZED=1

S=$IMAGE_STAGE
if ! is_stage "$S"; then
    bad "no stage '$S' (the image: docker build -f deploy/docker/Dockerfile .)"
    echo "images: $PASS passed, $FAIL failed"
    exit 1
fi
ok "$S: stage exists (built FROM $(chain "$S" | tail -n +2 | tr '\n' ' ')${PARENT[$(chain "$S" | tail -n1)]})"
if [ "${STAGES[${#STAGES[@]} - 1]}" = "$S" ]; then
    ok "$S: the last stage (what docker build builds without --target)"
else
    bad "$S: not the last stage of the Dockerfile"
fi

# 1. entrypoint and command.
entry=$(inherited ENTRY "$S")
if grep -qE '^\[[[:space:]]*"/usr/bin/tini"[[:space:]]*,[[:space:]]*"--"[[:space:]]*\]$' <<<"$entry"; then
    ok "$S: ENTRYPOINT $entry"
else
    bad "$S: ENTRYPOINT is not [\"/usr/bin/tini\", \"--\"]: ${entry:-none}"
fi
cmd=$(inherited CMDS "$S")
if grep -qE '^\[[[:space:]]*"/usr/local/bin/mcpq-ingress"[[:space:]]*\]$' <<<"$cmd"; then
    ok "$S: CMD $cmd"
else
    bad "$S: CMD is not [\"/usr/local/bin/mcpq-ingress\"]: ${cmd:-none}"
fi

# 3. no build tools; --no-install-recommends; what scripts/image.sh adds.
pkgs=()
for s in $(chain "$S"); do
    read -r -a more <<<"${PKGS[$s]}"
    pkgs+=("${more[@]}")
    if [ "${RECOMMENDS[$s]}" != 0 ]; then
        bad "$S: stage $s runs apt-get install without --no-install-recommends"
    fi
done
forbidden=()
for p in "${pkgs[@]}"; do
    grep -qE "$FORBIDDEN" <<<"$p" && forbidden+=("$p")
done
if [ ${#forbidden[@]} -eq 0 ]; then
    ok "$S: no compiler, build tool or -dev package (installs: ${pkgs[*]})"
else
    bad "$S: runtime stage installs build packages: ${forbidden[*]}"
fi
# The packages scripts/image.sh installs: those of the libraries the binaries link, named
# (libc6 is in every Debian image), ca-certificates and tini.
if [ -n "${SANITIZED:-}" ]; then
    note "$S: sanitizer build: the packages of scripts/image.sh are not compared"
    image_pkgs=(ca-certificates tini)
else
    mapfile -t image_pkgs < <(needed_packages | grep -vx libc6)
    image_pkgs+=(ca-certificates tini)
fi
unnamed=()
for p in "${image_pkgs[@]}"; do
    grep -qxF "$p" <<<"$(printf '%s\n' "${pkgs[@]}")" || unnamed+=("$p")
done
if [ ${#unnamed[@]} -eq 0 ]; then
    ok "$S: installs every package scripts/image.sh does (${image_pkgs[*]})"
else
    bad "$S: does not install ${unnamed[*]} (scripts/image.sh does)"
fi
for p in "${pkgs[@]}"; do
    if ! installed "$p"; then
        if apt-cache show "$p" >/dev/null 2>&1; then
            note "$S: $p is not installed on this machine; it is a Debian package, but the libraries it pulls in are not counted"
        elif ! apt-cache policy libc6 2>/dev/null | grep -qE '^ *Candidate: [^(]'; then
            note "$S: $p is not installed here and the apt lists are missing (apt-get update): its name is not checked"
        else
            bad "$S: $p is not a Debian package of this release"
        fi
    fi
done
mapfile -t provided < <(closure "${pkgs[@]}")
declare -A have=()
for p in "${provided[@]}"; do have[$p]=1; done

for t in "${TARGETS[@]}"; do
    bin=mcpq-$t
    # 1. binary copied from the build stage.
    if grep -qE -- "--from=build[[:space:]]+/build/${bin}[[:space:]]+/usr/local/bin/${bin}\$" <<<"${COPIES[$S]}"; then
        ok "$t: copies /build/$bin from the build stage to /usr/local/bin/$bin"
    else
        bad "$t: no COPY --from=build /build/$bin /usr/local/bin/$bin in stage $S"
    fi

    # 2. ldd's libraries against the closure of the stage's packages.
    missing=()
    nlibs=0
    # A sanitizer build dir (build-asan): the image is built without sanitizers, so their
    # runtimes, and what only they need (libstdc++), are not image libraries.
    declare -A skip=()
    while read -r name arrow path _; do
        case $name in
        libasan.so.* | libubsan.so.* | liblsan.so.* | libtsan.so.*)
            skip[$name]=1
            while read -r dep _; do skip[$dep]=1; done < <(ldd "$path" 2>/dev/null)
            ;;
        esac
    done <<<"${LIBS[$t]}"
    if [ ${#skip[@]} -gt 0 ]; then
        note "$t: sanitizer build: skipping the sanitizer runtimes and the libraries only they need"
        if command -v readelf >/dev/null; then # keep what the binary itself needs
            while read -r dep; do unset "skip[$dep]"; done < <(readelf -d "$BUILD_DIR/$bin" |
                sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -vE '^lib(a|ub|l|t)san\.so')
        fi
    fi
    while read -r name arrow path _; do
        case $name in linux-vdso.so.* | linux-gate.so.*) continue ;; esac
        [ "$arrow" = '=>' ] || path=$name # the loader: "/lib64/ld-linux-x86-64.so.2 (0x...)"
        [ -n "${skip[$name]+x}" ] && continue
        if [ "$path" = "not" ]; then
            bad "$t: ldd cannot find $name on this machine"
            continue
        fi
        nlibs=$((nlibs + 1))
        if ! pkg=$(owner "$path"); then
            missing+=("$name (no Debian package owns $path)")
        elif [ -z "${have[$pkg]+x}" ]; then
            missing+=("$name (package $pkg)")
        fi
    done <<<"${LIBS[$t]}"
    unset skip
    if [ ${#missing[@]} -eq 0 ]; then
        ok "$t: the stage's packages provide all $nlibs libraries ldd lists for $bin"
    else
        bad "$t: libraries of $bin that the stage's packages do not provide: ${missing[*]}"
    fi
done

# 4. non-root numeric user.
user=$(inherited USERS "$S")
uid=${user%%:*}
if [[ $uid =~ ^[0-9]+$ ]] && [ "$uid" != 0 ]; then
    ok "$S: runs as USER $user"
else
    bad "$S: USER must be a numeric non-root uid (runAsNonRoot), got '${user:-none (root)}'"
fi

# 5. the ingress listens on all addresses and the image exposes that port.
env_all=$(for s in $(chain "$S"); do echo "${ENVS[$s]}"; done)
listen=$(grep -oE 'MCPQ_LISTEN=[^[:space:]]+' <<<"$env_all" | head -n1 | cut -d= -f2)
port=${listen##*:}
if [ "${listen%:*}" = 0.0.0.0 ] && grep -qw "$port" <<<"$(inherited EXPOSE "$S")"; then
    ok "$S: MCPQ_LISTEN=$listen and EXPOSE $port"
else
    bad "$S: needs ENV MCPQ_LISTEN=0.0.0.0:<port> and EXPOSE <port> (MCPQ_LISTEN=${listen:-unset}, EXPOSE${EXPOSE[$S]:- none})"
fi

echo "images: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
