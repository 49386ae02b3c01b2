#!/usr/bin/env bash
# The flight recorder's image, assembled without a daemon or a registry: the release binary,
# the shared libraries it links (glibc, libgcc_s: as distroless/cc has), CA certificates, and
# a nonroot user (65532) — what the Dockerfile builds on distroless, with its entrypoint, its
# default command (record /data -A …), its port and volume. Written as an OCI image archive
# (scripts/control-plane/node/oci-image.py; `ctr images import`, `skopeo copy oci-archive:…`).
# Usage: scripts/image.sh [--bin FILE] [--out FILE] [--ref NAME]
#   default: target/release/spark-triage, target/image/spark-triage-VERSION.oci.tar,
#   localhost/spark-triage:VERSION. Prints the archive's path as its last line.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -1)
bin=$ROOT/target/release/spark-triage
out=$ROOT/target/image/spark-triage-$version.oci.tar
ref=localhost/spark-triage:$version
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --ref) ref=$2; shift 2 ;;
    *) echo "usage: $0 [--bin FILE] [--out FILE] [--ref NAME]" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "image: $bin: no such binary (cargo build --release first)" >&2; exit 1; }
# The layer keeps owners as on disk: /data and the home must be the nonroot user's.
[ "$(id -u)" = 0 ] || { echo "image: run as root (the image's files are owned as they are on disk)" >&2; exit 1; }
[ "$(uname -m)" = x86_64 ] || { echo "image: amd64 only (oci-image.py writes an amd64 image)" >&2; exit 1; }
rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
install -D -m 755 "$bin" "$rootfs/usr/local/bin/spark-triage"
strip "$rootfs/usr/local/bin/spark-triage" 2>/dev/null || true
# The libraries the dynamic linker loads, at the paths it looks in (ldd names them).
# (none for a static binary: ldd says "not a dynamic executable").
if ldd "$bin" >/dev/null 2>&1; then
    ldd "$bin" | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}' | while read -r lib; do
        install -D -m 755 "$(readlink -f "$lib")" "$rootfs$lib"
    done
fi
install -D -m 644 /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
mkdir -p "$rootfs/tmp" "$rootfs/data" "$rootfs/home/nonroot"
chmod 1777 "$rootfs/tmp"
chown 65532:65532 "$rootfs/data" "$rootfs/home/nonroot"
mkdir -p "$(dirname "$out")"
python3 "$ROOT/scripts/control-plane/node/oci-image.py" "$ref" "$rootfs" "$out" \
    --entrypoint /usr/local/bin/spark-triage \
    --cmd-json '["record", "/data", "--all-namespaces", "--rotate=1h", "--retain=7d", "--forget-after=15m", "--driver-poll-interval=60s", "--metrics-addr=0.0.0.0:9090"]' \
    --user 65532:65532 --expose 9090/tcp --volume /data --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
echo "$out"
