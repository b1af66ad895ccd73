#!/usr/bin/env bash
# Provides the CPython interpreters that CI tests bale on (make pythons), as
# .pythons/<version>/bin/python3 in the checkout (.pythons/ is git-ignored).
# Idempotent: a second run on the same machine only checks the links.
#
#   3.10 3.11 3.12 3.13  the machine's pyenv builds, linked in place
#   3.14                 CPython built from Debian sid's python3.14 source
#                        (its .orig tarball, fetched with apt-get source),
#                        or, when Debian's archive does not serve that
#                        source, Debian sid's own python3.14 binaries in a
#                        sid chroot (see "chroot interpreters" below)
#   3.14t                the same source built with --disable-gil (free
#                        threading); Debian ships no free-threaded binary,
#                        so without the source it cannot be provided, and
#                        this script says so (exit status 2 for it alone)
#
# What is built or installed goes to a cache outside the clone
# ($BALE_PYTHONS_CACHE, default ~/.cache/bale-pythons/<version>), so that
# clones on one machine share it; .pythons/<version> links to it. Every
# cache entry is made in a temporary directory beside it and renamed into
# place as the last step, so an interrupted run leaves no entry that looks
# finished; its leftovers are removed by the next run.
#
# Chroot interpreters: the cache entry holds root/ (a minimal sid system
# with python3.14, its venv and dev packages, gcc and make) and
# bin/python3, a wrapper that runs root/usr/bin/python3.14 through chroot
# (outside it) or directly (inside it). .ci/test-python.sh runs its whole
# job inside the chroot, with the checkout and the Rust toolchain mounted
# at the same paths in a private mount namespace (root only; CI runs as
# root).
#
# Usage: .ci/pythons.sh [VERSION...]   (default: every version CI needs)
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${BALE_PYTHONS_CACHE:-$HOME/.cache/bale-pythons}"
SRC_PACKAGE=python3.14
# Debian's archive (the only place this script takes packages from); sid
# for the source of python3.14 and for the chroot.
MIRROR="${BALE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
JOBS="${JOBS:-2}"
ALL_VERSIONS="3.10 3.11 3.12 3.13 3.14 3.14t"

log() { echo "pythons: $*" >&2; }

mkdir -p .pythons "$CACHE"

# Links .pythons/$1 to $2 (replacing an older link).
link() {
    ln -sfn "$2" ".pythons/$1"
    log "$1 -> $2 ($(".pythons/$1/bin/python3" -c 'import sys; print(sys.version.split()[0])'))"
}

pyenv_python() {
    local version=$1 root
    root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
    local found
    found="$(ls -d "$root/versions/$version".* 2>/dev/null | sort -V | tail -n 1 || true)"
    if [ -z "$found" ] || [ ! -x "$found/bin/python3" ]; then
        log "no pyenv build of $version under $root/versions"
        return 1
    fi
    link "$version" "$found"
}

# ----------------------------------------------------------------------------
# Debian's python3.14 source, through apt with a private configuration: a
# deb-src line for sid in our own sources directory and our own package
# lists, so the machine's apt setup is neither read nor changed.
# ----------------------------------------------------------------------------
APT_DIR="$CACHE/apt"
apt_private() {
    "$@" -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$APT_DIR/sources" \
        -o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache" \
        -o Debug::NoLocking=1 -o APT::Sandbox::User=root -o Acquire::Check-Valid-Until=false
}
apt_private_update() {
    [ -n "${APT_UPDATED:-}" ] && return 0
    mkdir -p "$APT_DIR/sources" "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
    cat > "$APT_DIR/sources/sid-src.sources" <<EOF
Types: deb-src
URIs: $MIRROR
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt_private apt-get -q update >&2
    APT_UPDATED=1
}

# Prints the path of the upstream (.orig) tarball of the newest python3.14
# source that the archive serves, downloading it into the cache once; fails
# when no version of it can be downloaded.
debian_source() {
    local dir="$CACHE/src" existing
    existing="$(ls "$dir"/${SRC_PACKAGE}_*.orig.tar.* 2>/dev/null | sort -V | tail -n 1 || true)"
    if [ -n "$existing" ]; then echo "$existing"; return 0; fi
    apt_private_update || return 1
    mkdir -p "$dir"
    local version tmp
    for version in $(apt_private apt-cache showsrc "$SRC_PACKAGE" | sed -n 's/^Version: //p' | sort -Vru); do
        tmp="$(mktemp -d "$dir/.download.XXXXXX")"
        # --download-only: apt checks the .dsc's checksums of each file; the
        # Debian patches are not applied (the upstream tree is built).
        if (cd "$tmp" && apt_private apt-get -q source --download-only "$SRC_PACKAGE=$version" >&2); then
            mv "$tmp"/${SRC_PACKAGE}_*.orig.tar.* "$dir/"
            rm -rf "$tmp"
            ls "$dir"/${SRC_PACKAGE}_*.orig.tar.* | sort -V | tail -n 1
            return 0
        fi
        rm -rf "$tmp"
        log "Debian's archive did not serve the source of $SRC_PACKAGE $version"
    done
    return 1
}

# Build dependencies of CPython's optional modules, from Debian (only what
# is missing is installed).
build_deps() {
    local wanted="build-essential pkg-config libssl-dev zlib1g-dev libffi-dev libbz2-dev liblzma-dev
        libsqlite3-dev libreadline-dev libncurses-dev uuid-dev libgdbm-dev libzstd-dev libexpat1-dev"
    local missing=() p
    for p in $wanted; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing build dependencies: ${missing[*]}"
        apt-get -q update >&2 && apt-get install -y -q "${missing[@]}" >&2
    fi
}

# Builds CPython from the tarball $2 into $CACHE/$1 (3.14, or 3.14t with
# --disable-gil). No --enable-optimizations / LTO: CI builds it on a fresh
# machine, where PGO would take most of an hour.
build_from_source() {
    local version=$1 tarball=$2 flags=()
    [ "$version" = 3.14t ] && flags+=(--disable-gil)
    build_deps
    local tmp="$CACHE/.build-$version.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp/src"
    tar -xf "$tarball" -C "$tmp/src" --strip-components=1
    log "building CPython $version from $(basename "$tarball") (${flags[*]:-default configuration})"
    # The prefix is the final path: CPython records it (sys.prefix,
    # sysconfig), so it is built for $CACHE/$version and installed into
    # the temporary directory with DESTDIR, then moved.
    (
        cd "$tmp/src"
        ./configure --prefix="$CACHE/$version" --with-ensurepip=install "${flags[@]}" >"$tmp/configure.log" 2>&1 \
            || { tail -n 30 "$tmp/configure.log" >&2; exit 1; }
        make -j"$JOBS" >"$tmp/make.log" 2>&1 || { tail -n 40 "$tmp/make.log" >&2; exit 1; }
        make install DESTDIR="$tmp/dest" >"$tmp/install.log" 2>&1 || { tail -n 30 "$tmp/install.log" >&2; exit 1; }
    )
    local built="$tmp/dest$CACHE/$version"
    # python3 is the entry point; a free-threaded install names its
    # interpreter python3.14t (python3 links to it).
    [ -x "$built/bin/python3" ] || ln -s "python$version" "$built/bin/python3"
    mv "$built" "$CACHE/$version.new"
    rm -rf "$tmp"
}

# A sid chroot with Debian's python3.14 (only used when the source cannot
# be had).
build_chroot() {
    local version=$1
    command -v debootstrap >/dev/null 2>&1 || { apt-get -q update >&2 && apt-get install -y -q debootstrap >&2; }
    local tmp="$CACHE/$version.new"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    log "installing Debian sid's python3.14 in a chroot ($tmp/root)"
    debootstrap --variant=minbase --include=python3.14,python3.14-venv,python3.14-dev,gcc,libc6-dev,make,ca-certificates \
        sid "$tmp/root" "$MIRROR" >"$tmp/debootstrap.log" 2>&1 \
        || { tail -n 30 "$tmp/debootstrap.log" >&2; return 1; }
    rm -rf "$tmp/root/var/cache/apt/archives/"*.deb
    # Marks the inside of the chroot, for the wrapper and test-python.sh.
    echo "$version" > "$tmp/root/etc/bale-pythons-chroot"
    chroot_wrappers "$tmp"
}

# The entry points of a chroot entry $1: bin/python3 and bin/in-chroot.
# Written on every run (they are small), so that a change to them reaches
# an existing cache entry.
chroot_wrappers() {
    local entry=$1
    mkdir -p "$entry/bin"
    cat > "$entry/bin/python3.new" <<'EOF'
#!/bin/sh
# Debian sid's python3.14, in the chroot beside this directory.
if [ -e /etc/bale-pythons-chroot ]; then exec /usr/bin/python3.14 "$@"; fi
exec "$(dirname "$0")/in-chroot" /usr/bin/python3.14 "$@"
EOF
    cat > "$entry/bin/in-chroot.new" <<'EOF'
#!/bin/sh
# Runs a command in the chroot beside this directory, in the current
# directory, with the current directory and its parent, /tmp, /dev, /proc,
# the Rust toolchain and this bin/ directory (so that .pythons/X/bin/python3
# works inside too) mounted at the same paths in a private mount namespace
# (the mounts end with the command).
bin="$(cd "$(dirname "$0")" && pwd -P)"
root="$(cd "$bin/../root" && pwd -P)"
exec unshare --mount --propagation private /bin/sh -euc '
root=$1; bin=$2; shift 2
for d in /proc /sys /dev /tmp "$HOME/.cargo" "$HOME/.rustup" "$HOME/.cache/pip" "$(dirname "$PWD")" "$PWD" "$bin"; do
    [ -d "$d" ] || continue
    mkdir -p "$root$d"
    mount --rbind "$d" "$root$d"
done
# The network setup of the machine: name resolution, trusted certificates
# (package registries may be reached through a proxy with its own CA), the pip
# configuration.
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
[ ! -f /etc/pip.conf ] || cp /etc/pip.conf "$root/etc/pip.conf"
mkdir -p "$root/etc/ssl"
mount --rbind /etc/ssl "$root/etc/ssl"
exec chroot "$root" /usr/bin/env -C "$PWD" "$@"
' in-chroot "$root" "$bin" "$@"
EOF
    chmod +x "$entry/bin/python3.new" "$entry/bin/in-chroot.new"
    mv "$entry/bin/python3.new" "$entry/bin/python3"
    mv "$entry/bin/in-chroot.new" "$entry/bin/in-chroot"
}

provide() {
    local version=$1
    case "$version" in
        3.10|3.11|3.12|3.13) pyenv_python "$version"; return ;;
        3.14|3.14t) ;;
        *) log "unknown version $version"; return 1 ;;
    esac
    local entry="$CACHE/$version"
    rm -rf "$CACHE/$version.new" "$CACHE/.build-$version".*
    if [ ! -x "$entry/bin/python3" ]; then
        local tarball
        if tarball="$(debian_source)"; then
            build_from_source "$version" "$tarball"
        elif [ "$version" = 3.14 ]; then
            build_chroot "$version"
        else
            log "3.14t: NOT PROVIDED. Debian ships no free-threaded CPython binary, and Debian's archive did not serve the source of $SRC_PACKAGE to build one from"
            return 2
        fi
        rm -rf "$entry"
        mv "$CACHE/$version.new" "$entry"
    fi
    [ ! -e "$entry/root/etc/bale-pythons-chroot" ] || chroot_wrappers "$entry"
    link "$version" "$entry"
}

status=0
for version in ${@:-$ALL_VERSIONS}; do
    provide "$version" || { rc=$?; [ $status -ne 0 ] || status=$rc; }
done
exit $status
