#!/usr/bin/env bash
# Builds krew (kubectl's plugin manager, sigs.k8s.io/krew at scripts/krew/go.mod's version)
# from Go modules into target/krew/bin/kubectl-krew, once (again when scripts/krew/go.mod
# changes). Prints the binary's path as its last line. tests/integration/krew.rs installs
# the plugin with it from a local manifest and archive, as a user would.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/target/krew/bin/kubectl-krew
STAMP=$ROOT/target/krew/go.mod.built
if [ ! -x "$OUT" ] || ! cmp -s "$ROOT/scripts/krew/go.mod" "$STAMP" 2>/dev/null; then
    echo "krew: building sigs.k8s.io/krew/cmd/krew (once)" >&2
    mkdir -p "$(dirname "$OUT")"
    (cd "$ROOT/scripts/krew" && go build -trimpath -o "$OUT" sigs.k8s.io/krew/cmd/krew) >&2
    cp "$ROOT/scripts/krew/go.mod" "$STAMP"
fi
echo "$OUT"
