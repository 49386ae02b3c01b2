#!/usr/bin/env bash
# Puts a Go toolchain new enough for the control plane's modules on this machine, for
# .ci/run on a machine without one (the control plane is built from Go modules).
#
# Debian's golang-go (1.19 on bookworm) is older than the `go` line of
# scripts/control-plane/go.mod, and too old to switch toolchains by itself (GOTOOLCHAIN came
# in 1.21). It can still download a module, and Go's toolchains are modules
# (golang.org/toolchain@v0.0.1-go<version>.<os>-<arch>) on the Go module proxy: so Debian's
# go fetches the wanted toolchain, which is unpacked (module zips drop the executable bits,
# set again here) under ~/.cache/spark-triage/go<version>.
#
# Prints the bin directory to put first on PATH as its last line, or nothing when the go
# already on PATH is new enough. Usage:
#   scripts/install-go.sh            the version of scripts/control-plane/go.mod's `go` line
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(awk '$1=="go"{print $2; exit}' scripts/control-plane/go.mod)
[ -n "$want" ] || { echo "install-go: no go line in scripts/control-plane/go.mod" >&2; exit 1; }
# `go 1.26` means 1.26.0, the name its toolchain module has.
case "$want" in *.*.*) ;; *) want=$want.0 ;; esac

# A go on PATH at least as new: nothing to do.
version_ok() {
    local have
    have=$("$1" env GOVERSION 2>/dev/null) || return 1
    have=${have#go}
    [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -1)" = "$want" ]
}
if command -v go >/dev/null 2>&1 && version_ok go; then
    exit 0
fi
dest=${HOME:-/root}/.cache/spark-triage/go$want
if [ -x "$dest/bin/go" ] && version_ok "$dest/bin/go"; then
    echo "$dest/bin"
    exit 0
fi

case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "install-go: no Go toolchain module for $(uname -m)" >&2; exit 1 ;;
esac
debian_go() { ls -d /usr/lib/go-1.*/bin/go 2>/dev/null | sort -V | tail -1 || true; }
bootstrap=$(debian_go)
if [ -z "$bootstrap" ]; then
    echo "install-go: installing Debian's golang-go (to fetch the toolchain module)" >&2
    apt-get update -qq && apt-get install -y -qq golang-go >/dev/null
    bootstrap=$(debian_go)
    [ -n "$bootstrap" ] || { echo "install-go: golang-go installed no /usr/lib/go-1.*/bin/go" >&2; exit 1; }
fi
module=golang.org/toolchain@v0.0.1-go$want.linux-$arch
echo "install-go: fetching $module with $($bootstrap version)" >&2
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
if ! json=$(cd "$work" && GOPATH=$work/gopath GOFLAGS=-modcacherw "$bootstrap" mod download -json "$module"); then
    echo "install-go: could not fetch $module: $json" >&2
    exit 1
fi
dir=$(echo "$json" | awk -F'"' '$2=="Dir"{print $4}')
[ -n "$dir" ] && [ -d "$dir/bin" ] || { echo "install-go: $module has no bin/: $json" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
cp -a "$dir" "$dest"
chmod -R u+w "$dest"
chmod +x "$dest"/bin/* "$dest"/pkg/tool/*/*
version_ok "$dest/bin/go" || { echo "install-go: $dest/bin/go does not run" >&2; exit 1; }
echo "install-go: $("$dest/bin/go" version) in $dest" >&2
echo "$dest/bin"
