#!/usr/bin/env bash
# PyPI's `mcp` (the Model Context Protocol's Python SDK) ==VERSION (default 2.3.0) in a venv
# under target/e2e/mcp-venv, installed once: the real MCP client of tests/integration/mcp.rs.
# Prints the venv's python as its last line. Exits 1 with one line on stderr when it cannot.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=${1:-2.3.0}
VENV=${MCP_VENV:-$ROOT/target/e2e/mcp-venv}
# One maker at a time: tests run in parallel, and two of them creating the same venv raced
# ("[Errno 17] File exists", a fresh clone's first `cargo test` failing). The second waits
# for the first, then finds the venv made. The lock goes with the process.
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if ! "$VENV/bin/python" -c 'import sys; from importlib.metadata import version; sys.exit(version("mcp") != sys.argv[1])' "$VERSION" 2>/dev/null; then
    echo "mcp-venv: installing mcp==$VERSION into $VENV (once)" >&2
    rm -rf "$VENV"
    python3 -m venv "$VENV" >&2 || { echo "python3 cannot create a venv" >&2; exit 1; }
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "mcp==$VERSION" >&2 ||
        { echo "cannot install mcp==$VERSION from PyPI" >&2; exit 1; }
fi
echo "$VENV/bin/python"
