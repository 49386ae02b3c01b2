#!/usr/bin/env bash
# Builds the release archive of one target (default: this machine's) and writes its uri and
# sha256 into the krew manifest: OUT/spark-triage.yaml (made from assets/krew/spark-triage.yaml
# when absent, so a release runs this once per target into one OUT), or --manifest FILE. The archive, spark-triage-vVERSION-TARGET.tar.gz, holds one
# directory of that name with both binaries (spark-triage, kubectl-spark_triage), kubectl's
# completion helper (kubectl_complete-spark_triage), LICENSE and README.md.
# Usage: scripts/package.sh [--target TRIPLE] [--out DIR] [--manifest FILE] [--base-url URL]
#                           [--bin-dir DIR]   (use binaries already built there; no build)
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(rustc -vV | sed -n 's/^host: //p')
out=dist
manifest=
base=
bin_dir=
while [ $# -gt 0 ]; do
    case "$1" in
    --target) target=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --manifest) manifest=$2; shift 2 ;;
    --base-url) base=$2; shift 2 ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    *) echo "usage: $0 [--target TRIPLE] [--out DIR] [--manifest FILE] [--base-url URL] [--bin-dir DIR]" >&2; exit 2 ;;
    esac
done
if [ -z "$manifest" ]; then
    mkdir -p "$out"
    manifest=$out/spark-triage.yaml
fi
version=v$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
if [ -z "$bin_dir" ]; then
    cargo build --release --locked --target "$target" --bins
    bin_dir=target/$target/release
fi
# OUT's manifest is made again from the template when it is another version's (its other
# platforms' archives are not this release's).
if [ "$manifest" = "$out/spark-triage.yaml" ] &&
    ! grep -q "^  version: $version\$" "$manifest" 2>/dev/null; then
    cp assets/krew/spark-triage.yaml "$manifest"
fi
name=spark-triage-$version-$target
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name" "$out"
cp "$bin_dir/spark-triage" "$bin_dir/kubectl-spark_triage" "$stage/$name/"
cp assets/kubectl/kubectl_complete-spark_triage LICENSE README.md "$stage/$name/"
# The release profile strips symbols already (Cargo.toml); strip again for a binary built otherwise.
if command -v strip >/dev/null && [ "$target" = "$(rustc -vV | sed -n 's/^host: //p')" ]; then
    strip "$stage/$name/spark-triage" "$stage/$name/kubectl-spark_triage"
fi
chmod 755 "$stage/$name/spark-triage" "$stage/$name/kubectl-spark_triage" "$stage/$name/kubectl_complete-spark_triage"
# Reproducible: sorted entries, fixed owner and times.
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - "$name" | gzip -n >"$out/$name.tar.gz"
sha=$(sha256sum "$out/$name.tar.gz" | cut -d' ' -f1)
python3 - "$manifest" "$name" "$version" "$sha" "$base" <<'PY'
import re, sys
path, name, version, sha, base = sys.argv[1:]
target = name.split("-", 3)[3]
lines = open(path).read().split("\n")
hit = [i for i, l in enumerate(lines) if l.strip().startswith("uri:") and l.rstrip().endswith(f"-{target}.tar.gz")]
if len(hit) != 1:
    sys.exit(f"{path}: no single platform whose uri ends with -{target}.tar.gz")
i = hit[0]
old = lines[i].split("uri:", 1)[1].strip()
url_base = base.rstrip("/") if base else old.rsplit("/", 2)[0]
lines[i] = lines[i].split("uri:")[0] + f"uri: {url_base}/{version}/{name}.tar.gz"
if not lines[i + 1].strip().startswith("sha256:"):
    sys.exit(f"{path}: the line after the uri of {target} is not its sha256")
lines[i + 1] = lines[i + 1].split("sha256:")[0] + f'sha256: "{sha}"'
text = "\n".join(lines)
text = re.sub(r"(?m)^  version: .*$", f"  version: {version}", text)
open(path, "w").write(text)
PY
echo "$out/$name.tar.gz  sha256 $sha  (written into $manifest)"
echo "install: kubectl krew install --manifest=$manifest --archive=$out/$name.tar.gz"
