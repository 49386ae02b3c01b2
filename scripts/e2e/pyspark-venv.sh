#!/usr/bin/env bash
# PyPI's pyspark==VERSION (default 4.3.0), and duckdb (the fleet tables' second reader:
# tests/integration/fleet.rs), in a venv under target/e2e (target/e2e/venv for
# 4.3.0, else target/e2e/venv-VERSION; E2E_VENV overrides), installed once. Prints the pyspark
# package directory (a SPARK_HOME: bin/spark-submit, jars/) as its last line. Used by
# scripts/e2e-spark.sh and the real node's Spark image (tests/real_node/). Exits 1 with one line
# on stderr when it cannot (no venv module, PyPI unreachable).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=${1:-4.3.0}
DEFAULT_VENV=$ROOT/target/e2e/venv
[ "$VERSION" = 4.3.0 ] || DEFAULT_VENV=$ROOT/target/e2e/venv-$VERSION
VENV=${E2E_VENV:-$DEFAULT_VENV}
# One maker at a time: tests run in parallel, and two of them creating the same venv raced
# ("[Errno 17] File exists", a fresh clone's first `cargo test` failing). The second waits
# for the first, then finds the venv made. The lock goes with the process.
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if ! "$VENV/bin/python" -c 'import pyspark, sys; sys.exit(pyspark.__version__ != sys.argv[1])' "$VERSION" 2>/dev/null; then
    echo "pyspark-venv: installing pyspark==$VERSION into $VENV (once)" >&2
    rm -rf "$VENV"
    python3 -m venv "$VENV" >&2 || { echo "python3 cannot create a venv" >&2; exit 1; }
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "pyspark==$VERSION" >&2 ||
        { echo "cannot install pyspark==$VERSION from PyPI" >&2; exit 1; }
fi
DUCKDB=1.5.2
if ! "$VENV/bin/python" -c 'import duckdb, sys; sys.exit(duckdb.__version__ != sys.argv[1])' "$DUCKDB" 2>/dev/null; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "duckdb==$DUCKDB" >&2 ||
        { echo "cannot install duckdb==$DUCKDB from PyPI" >&2; exit 1; }
fi
"$VENV/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'
