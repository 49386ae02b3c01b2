#!/usr/bin/env bash
# A loopback S3 server for the object-store tests: moto's server (PyPI's moto[server]),
# installed once into target/e2e/moto-venv. Prints the venv's bin directory last.
# .ci/run runs it before the tests; tests/integration/object_store.rs runs it too (a no-op
# when installed). Exits 1 when python3 or PyPI is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${MOTO_VENV:-$(pwd)/target/e2e/moto-venv}
VERSION=5.2.5
# One maker at a time: the object-store and fleet tests run in parallel and would both
# create the venv (the "[Errno 17] File exists" race the other venv scripts had).
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if ! "$VENV/bin/python" -c 'import moto, sys; sys.exit(moto.__version__ != sys.argv[1])' "$VERSION" 2>/dev/null; then
    echo "moto: installing moto[server]==$VERSION into $VENV (once)" >&2
    rm -rf "$VENV"
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$VERSION" >&2
fi
echo "$VENV/bin"
