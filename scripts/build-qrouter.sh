#!/usr/bin/env bash
# Build qrouter 1.4.88 (Debian trixie/sid's upstream tarball) for bookworm, where only 1.4.71 is
# packaged. The source comes through `apt-get source` with a temporary apt configuration (a
# deb-src line for sid, private lists/archives dirs); /etc/apt is not touched.
# Patches in closer/physical/route/patches/qrouter-*.patch are applied in name order; qrouter-01 (net
# numbers after SPECIALNETS) is required by closer.physical, see docs/physical.md.
# Idempotent: when the installed binary's stamp matches the version + patch hash, it exits at once.
#
# Installs into <repo>/.venv/opt/qrouter and links .venv/bin/qrouter-1.4.88 to it. With
# QROUTER_PREFIX set it installs there and links nothing (a private build, selected at run time by
# CLOSER_QROUTER_PREFIX; the venv may be shared with other checkouts).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
VERSION=1.4.88
PREFIX="${QROUTER_PREFIX:-$REPO/.venv/opt/qrouter}"
CACHE="${QROUTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/closer/qrouter}"
PATCH_DIR="$REPO/closer/physical/route/patches"
shopt -s nullglob
PATCHES=("$PATCH_DIR"/qrouter-*.patch)
STAMP_WANT="$VERSION $(cat "${PATCHES[@]}" /dev/null | sha256sum | cut -c1-16)"
STAMP="$PREFIX/.closer-stamp"

if [[ -x "$PREFIX/bin/qrouter" && -f "$STAMP" && "$(cat "$STAMP")" == "$STAMP_WANT" ]]; then
  echo "qrouter $VERSION already built at $PREFIX/bin/qrouter"
  exit 0
fi

mkdir -p "$CACHE"
TARBALL="$CACHE/qrouter_$VERSION.orig.tar.gz"
if [[ ! -f "$TARBALL" ]]; then
  APT="$CACHE/apt"
  mkdir -p "$APT/lists/partial" "$APT/archives/partial" "$APT/sources.list.d"
  echo "deb-src http://deb.debian.org/debian sid main" > "$APT/sources.list"
  APT_OPTS=(-o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=$APT/sources.list.d"
            -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache::Archives=$APT/archives"
            -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)")
  apt-get "${APT_OPTS[@]}" update >"$CACHE/apt-update.log" 2>&1 || { tail "$CACHE/apt-update.log"; exit 1; }
  # The .dsc/debian.tar.xz may 404 on some mirrors; the orig tarball is all we need.
  (cd "$CACHE" && apt-get "${APT_OPTS[@]}" source --download-only qrouter >"$CACHE/apt-source.log" 2>&1) || true
  found=("$CACHE"/qrouter_"$VERSION"*.orig.tar.gz)
  if [[ ${#found[@]} -eq 0 ]]; then
    echo "apt-get source did not deliver qrouter_$VERSION.orig.tar.gz; see $CACHE/apt-source.log" >&2
    tail "$CACHE/apt-source.log" >&2; exit 1
  fi
  [[ "${found[0]}" == "$TARBALL" ]] || mv "${found[0]}" "$TARBALL"
fi

# A private build directory: two checkouts may build at once with the same cache.
BUILD="$(mktemp -d "$CACHE/build.XXXXXX")"
trap 'rm -rf "$BUILD"' EXIT
tar -xzf "$TARBALL" -C "$BUILD"
SRC=("$BUILD"/qrouter-*)
cd "${SRC[0]}"
for p in "${PATCHES[@]}"; do
  echo "applying $(basename "$p")"
  patch -p1 < "$p"
done
./configure --prefix="$PREFIX" --with-tcl=/usr/lib/tcl8.6 --with-tk=/usr/lib/tk8.6 >"$BUILD/configure.log" 2>&1 \
  || { tail -20 "$BUILD/configure.log"; exit 1; }
make -j"${QROUTER_JOBS:-1}" >"$BUILD/make.log" 2>&1 || { tail -30 "$BUILD/make.log"; exit 1; }
make install >"$BUILD/install.log" 2>&1 || { tail -20 "$BUILD/install.log"; exit 1; }
echo "$STAMP_WANT" > "$STAMP"
if [[ -z "${QROUTER_PREFIX:-}" ]]; then
  ln -sf "$PREFIX/bin/qrouter" "$REPO/.venv/bin/qrouter-$VERSION"
fi
echo "qrouter $VERSION built at $PREFIX/bin/qrouter"
