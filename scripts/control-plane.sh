#!/usr/bin/env bash
# A real Kubernetes control plane on loopback, for spark-triage's tests: etcd (embedded from
# go.etcd.io/etcd/server/v3), kube-apiserver (RBAC on, real TLS, client certificates),
# kube-scheduler, kube-controller-manager and kwok (fake nodes; pod lifecycles from
# scripts/control-plane/stages.yaml). No container runtime, no root, unless `up --real-node`
# (a real kubelet with containerd and runc: root; scripts/control-plane/node/node.sh).
#
#   scripts/control-plane.sh build   build the binaries into target/control-plane/bin (reused)
#   scripts/control-plane.sh up      build if needed, start everything, wait until ready, create
#                                    the kwok nodes and the RBAC of the least-privileged user;
#                                    prints the admin kubeconfig's path as its last line
#   scripts/control-plane.sh up --real-node   the same and a real node beside the kwok nodes:
#                                    the kubelet, containerd, runc, a CNI bridge (root only;
#                                    scripts/control-plane/node/node.sh)
#   scripts/control-plane.sh down    stop what `up` started (by PID) and remove its state (the
#                                    real node's processes, mounts, cgroups and devices too)
#   scripts/control-plane.sh restart-apiserver   stop the API server and start it again
#   scripts/control-plane.sh vanish NS POD       delete a pod behind the API server's back (a
#                                    deletion every watcher misses; see vanish() below)
#   scripts/control-plane.sh kubelet stop|start  the real node's kubelet only (NotReady and back)
#   scripts/control-plane.sh images    build the real node's images that need no node (busybox,
#                                    pause, the Spark image's Debian base) into
#                                    target/control-plane/images (reused)
#   scripts/control-plane.sh spark-image DIR     build the Spark image from pyspark's package
#                                    DIR and import it into the real node
#   scripts/control-plane.sh import-image TAR  an OCI image archive (scripts/image.sh) into the real node
#
# The Kubernetes version is pinned in scripts/control-plane/go.mod (kwok's in kwok/go.mod).
# Files: target/control-plane/run/ (certificates, admin.kubeconfig, viewer.kubeconfig, logs,
# pids). CP_DIR moves that directory; CP_PORT (default 16443) is the API server's port, etcd
# takes CP_PORT+1 and CP_PORT+2. Without Go it says "control-plane: SKIPPED" and exits 0, or 1
# when CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SRC=$ROOT/scripts/control-plane
BIN=$ROOT/target/control-plane/bin
RUN=${CP_DIR:-$ROOT/target/control-plane/run}
PORT=${CP_PORT:-16443}
ETCD_CLIENT=$((PORT + 1))
ETCD_PEER=$((PORT + 2))
COMPONENTS="etcd kube-apiserver kube-controller-manager kube-scheduler kwok"
# Built beside them: etcdctl is a tool, the kubelet runs only with `up --real-node`.
TOOLS="etcdctl kubelet"

say() { echo "control-plane: $*" >&2; }
skip() {
    echo "control-plane: SKIPPED: $*"
    if [ "${CI:-}" = "true" ]; then
        echo "control-plane: CI=true, so this is a failure"
        exit 1
    fi
    exit 0
}

# The inputs of a build: when they change, the binaries are built again.
stamp() { { cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/kwok/go.mod" "$SRC/kwok/go.sum" "$SRC/cmd/etcd/main.go"; version_flags; } | sha256sum | cut -c1-16; }

# The version the binaries report (a module build has no git tree to read it from).
version_flags() {
    local v
    v=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$SRC/go.mod")
    local minor=${v#v1.}
    minor=${minor%%.*}
    echo "-X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
}

build() {
    local want
    want=$(stamp)
    if [ -f "$BIN/.stamp" ] && [ "$(cat "$BIN/.stamp")" = "$want" ]; then
        for c in $COMPONENTS $TOOLS; do [ -x "$BIN/$c" ] || { rm -f "$BIN/.stamp"; break; }; done
        [ -f "$BIN/.stamp" ] && { say "binaries up to date in $BIN"; return 0; }
    fi
    # Go is needed only to build: binaries already built run without it.
    command -v go >/dev/null 2>&1 || skip "no go on PATH (the control plane is built from Go modules)"
    mkdir -p "$BIN"
    local t0=$SECONDS
    say "building kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, etcd, etcdctl ($(awk '$1=="k8s.io/kubernetes"{print $2}' "$SRC/go.mod"))"
    (cd "$SRC" && go build -trimpath -ldflags="-s -w $(version_flags)" -o "$BIN/" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet ./cmd/etcd go.etcd.io/etcd/etcdctl/v3)
    say "building kwok ($(awk '$1=="sigs.k8s.io/kwok"{print $2}' "$SRC/kwok/go.mod"))"
    (cd "$SRC/kwok" && go build -trimpath -ldflags='-s -w' -o "$BIN/" sigs.k8s.io/kwok/cmd/kwok)
    echo "$want" >"$BIN/.stamp"
    say "built in $((SECONDS - t0)) s"
}

alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

# Stops the process whose PID file is $1 ($2 names it): SIGTERM, 10 s, then SIGKILL; removes
# the file.
stop_pidfile() {
    local pid n
    [ -f "$1" ] || return 0
    pid=$(cat "$1")
    # Only the process it names (a PID may have been reused since).
    if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"; then
        kill -TERM "$pid" 2>/dev/null || true
        for n in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            say "$2 ($pid) ignored SIGTERM for 10 s: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$1"
}

down() {
    local c
    node_down
    for c in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
        stop_pidfile "$RUN/$c.pid" "$c"
    done
    rm -rf "$RUN"
}

# A key and a certificate signed by the test CA. $1 name, $2 subject, $3 extensions (optional).
cert() {
    openssl req -new -newkey rsa:2048 -nodes -keyout "$RUN/$1.key" -subj "$2" -out "$RUN/$1.csr" 2>/dev/null
    openssl x509 -req -in "$RUN/$1.csr" -CA "$RUN/ca.crt" -CAkey "$RUN/ca.key" -CAcreateserial \
        -days 30 -out "$RUN/$1.crt" ${3:+-extfile "$3"} 2>/dev/null
    rm -f "$RUN/$1.csr"
}

# A kubeconfig for a user authenticated by its client certificate. $1 user (cert name).
kubeconfig() {
    cat >"$RUN/$1.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: spark-triage-cp
  cluster:
    server: https://127.0.0.1:$PORT
    certificate-authority-data: $(base64 -w0 "$RUN/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$RUN/$1.crt")
    client-key-data: $(base64 -w0 "$RUN/$1.key")
contexts:
- name: $1@spark-triage-cp
  context:
    cluster: spark-triage-cp
    user: $1
    namespace: spark-jobs
current-context: $1@spark-triage-cp
KC
    chmod 600 "$RUN/$1.kubeconfig"
}

start() {
    local name=$1
    shift
    # A session of its own: it outlives the terminal or tmux pane that ran `up`.
    setsid "$BIN/$name" "$@" >"$RUN/$name.log" 2>&1 </dev/null &
    echo $! >"$RUN/$name.pid"
}

# Stops everything after a failed start, having shown the end of every component's log
# (the state directory, logs included, goes with it).
fail_up() {
    local c
    for c in $COMPONENTS; do
        [ -f "$RUN/$c.log" ] || continue
        say "the end of $c's log:"
        tail -15 "$RUN/$c.log" >&2
    done
    down
    exit 1
}

wait_for() { # $1 what, $2 seconds, then a command
    local what=$1 secs=$2 n
    shift 2
    for n in $(seq 1 $((secs * 5))); do
        "$@" >/dev/null 2>&1 && return 0
        for c in $COMPONENTS; do
            if [ -f "$RUN/$c.pid" ] && ! alive "$c"; then
                say "$c exited"
                fail_up
            fi
        done
        sleep 0.2
    done
    say "$what not ready within ${secs}s"
    fail_up
}

start_apiserver() {
    # With the real node its pods (a Spark driver in cluster mode) reach it on the node's
    # bridge, so it listens there too; else on loopback only.
    local bind=127.0.0.1
    if [ "$REAL_NODE" = 1 ] || [ -d "$RUN/node" ]; then bind=0.0.0.0; fi
    start kube-apiserver --etcd-servers "http://127.0.0.1:$ETCD_CLIENT" \
        --bind-address "$bind" --advertise-address 127.0.0.1 --secure-port "$PORT" \
        --endpoint-reconciler-type none \
        --cert-dir "$RUN/apiserver-certs" \
        --tls-cert-file "$RUN/apiserver.crt" --tls-private-key-file "$RUN/apiserver.key" \
        --client-ca-file "$RUN/ca.crt" --authorization-mode Node,RBAC \
        --service-account-issuer https://kubernetes.default.svc \
        --service-account-key-file "$RUN/sa.pub" --service-account-signing-key-file "$RUN/sa.key" \
        --service-cluster-ip-range 10.96.0.0/16 --profiling=false \
        --kubelet-client-certificate "$RUN/admin.crt" --kubelet-client-key "$RUN/admin.key" \
        --kubelet-preferred-address-types InternalIP,Hostname
    wait_for kube-apiserver 120 kubectl --kubeconfig "$RUN/admin.kubeconfig" --request-timeout=10s get --raw /readyz
}

# Kill the API server (SIGKILL, by PID: a crash, an OOM kill of the API server, a node
# failure; connections drop without a goodbye) and start it again on the same etcd. (A SIGTERM
# makes it drain for about 30 s first.)
restart_apiserver() {
    alive kube-apiserver || { say "not running (no live kube-apiserver in $RUN)"; exit 1; }
    local pid n t0=$SECONDS
    pid=$(cat "$RUN/kube-apiserver.pid")
    kill -KILL "$pid"
    for n in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    mv "$RUN/kube-apiserver.log" "$RUN/kube-apiserver.log.1"
    start_apiserver
    say "kube-apiserver restarted in $((SECONDS - t0)) s"
}

# A pod deleted with no watch event, as Spark's "missing executor" happens for real: its
# deletion falls in a gap of the watches and the history is gone when they resume. The API
# server is stopped (SIGKILL), the pod's key deleted from etcd and etcd's history compacted
# past it, and the API server started again: a watch resuming from before gets 410 Gone and
# relists, and the pod is simply absent. (With the API server up, its watch cache would see
# the etcd delete and send DELETED to everyone.)
vanish() {
    local ns=${1:?namespace} pod=${2:?pod} rev
    alive kube-apiserver || { say "not running (no live kube-apiserver in $RUN)"; exit 1; }
    local E="$BIN/etcdctl --endpoints http://127.0.0.1:$ETCD_CLIENT --command-timeout=10s"
    local pid
    pid=$(cat "$RUN/kube-apiserver.pid")
    kill -KILL "$pid"
    for n in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    [ "$($E del "/registry/pods/$ns/$pod")" = 1 ] || { say "no pod $ns/$pod in etcd"; start_apiserver; exit 1; }
    rev=$($E endpoint status -w json | sed -n 's/.*"revision":\([0-9]*\).*/\1/p')
    $E compact "$rev" --physical >/dev/null
    mv "$RUN/kube-apiserver.log" "$RUN/kube-apiserver.log.1"
    start_apiserver
    say "$ns/$pod vanished (etcd compacted at revision $rev)"
}

up() {
    build
    command -v kubectl >/dev/null 2>&1 || skip "no kubectl on PATH"
    command -v openssl >/dev/null 2>&1 || skip "no openssl on PATH (certificates)"
    [ -d "$RUN" ] && { say "a previous run's state in $RUN: stopping it first"; down; }
    # The real node's checks and images before anything starts: a skip leaves nothing running.
    if [ "$REAL_NODE" = 1 ]; then
        node_check
        node_images
    fi
    mkdir -p "$RUN"
    local t0=$SECONDS
    # Certificates: a CA, the API server's serving certificate, an admin (system:masters) and a
    # least-privileged user (its RBAC below), the service-account signing key.
    openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$RUN/ca.key" -subj "/CN=spark-triage-test-ca" \
        -days 30 -out "$RUN/ca.crt" 2>/dev/null
    # 10.89.0.1: the real node's bridge, where its pods reach the API server (up --real-node).
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.96.0.1,IP:10.89.0.1\nextendedKeyUsage=serverAuth\n' >"$RUN/serving.ext"
    printf 'extendedKeyUsage=clientAuth\n' >"$RUN/client.ext"
    cert apiserver "/CN=kube-apiserver" "$RUN/serving.ext"
    cert admin "/O=system:masters/CN=spark-triage-admin" "$RUN/client.ext"
    cert viewer "/CN=spark-triage-viewer" "$RUN/client.ext"
    openssl genrsa -out "$RUN/sa.key" 2048 2>/dev/null
    openssl rsa -in "$RUN/sa.key" -pubout -out "$RUN/sa.pub" 2>/dev/null
    kubeconfig admin
    kubeconfig viewer
    local K="kubectl --kubeconfig $RUN/admin.kubeconfig --request-timeout=10s"

    start etcd --data-dir "$RUN/etcd" --listen-client-url "http://127.0.0.1:$ETCD_CLIENT" \
        --listen-peer-url "http://127.0.0.1:$ETCD_PEER"
    wait_for etcd 30 grep -q "etcd ready" "$RUN/etcd.log"
    start_apiserver
    start kube-controller-manager --kubeconfig "$RUN/admin.kubeconfig" \
        --authentication-kubeconfig "$RUN/admin.kubeconfig" --authorization-kubeconfig "$RUN/admin.kubeconfig" \
        --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
        --service-account-private-key-file "$RUN/sa.key" --root-ca-file "$RUN/ca.crt" \
        --use-service-account-credentials=false --profiling=false
    start kube-scheduler --kubeconfig "$RUN/admin.kubeconfig" \
        --authentication-kubeconfig "$RUN/admin.kubeconfig" --authorization-kubeconfig "$RUN/admin.kubeconfig" \
        --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false --profiling=false
    start kwok --kubeconfig "$RUN/admin.kubeconfig" --config "$SRC/stages.yaml" \
        --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
        --node-lease-duration-seconds 40 --cidr 10.244.0.0/16 --node-ip 10.0.0.1
    $K apply -f "$SRC/cluster.yaml" >/dev/null
    wait_for "kwok nodes" 60 bash -c "$K get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}' | grep -c True | grep -qx 4"
    # The namespace's default ServiceAccount (the controller-manager makes it): pods need it.
    wait_for "default service account" 60 $K -n spark-jobs get serviceaccount default
    if [ "$REAL_NODE" = 1 ]; then
        # Any failure in it stops everything (fail_up shows the logs and runs down).
        set -E
        trap 'say "up --real-node failed"; trap - ERR; fail_up' ERR
        node_up
        trap - ERR
        set +E
    fi
    say "up in $((SECONDS - t0)) s: $($K version -o json 2>/dev/null | sed -n 's/.*"gitVersion": "\([^"]*\)".*/\1/p' | tail -1), 4 kwok nodes$([ "$REAL_NODE" = 1 ] && echo " and the real node $NODE_NAME"); viewer: $RUN/viewer.kubeconfig"
    echo "$RUN/admin.kubeconfig"
}

# The real node (kubelet, containerd, runc, CNI): scripts/control-plane/node/node.sh.
# shellcheck source=control-plane/node/node.sh
. "$SRC/node/node.sh"
REAL_NODE=0

case ${1:-} in
    build) build ;;
    up)
        case ${2:-} in
            "") ;;
            --real-node) REAL_NODE=1 ;;
            *) echo "usage: scripts/control-plane.sh up [--real-node]" >&2; exit 2 ;;
        esac
        up
        ;;
    down) down ;;
    restart-apiserver) restart_apiserver ;;
    vanish) vanish "${2:-}" "${3:-}" ;;
    spark-image) node_spark_image "${2:-}" ;;
    import-image) node_import_image "${2:-}" ;;
    images)
        # The real node's images that need no node: busybox, pause, the Spark image's base.
        node_images
        node_spark_base
        ;;
    kubelet)
        case ${2:-} in
            stop) node_kubelet_stop ;;
            start) node_kubelet_start ;;
            *) echo "usage: scripts/control-plane.sh kubelet stop|start" >&2; exit 2 ;;
        esac
        ;;
    *)
        echo "usage: scripts/control-plane.sh build|up [--real-node]|down|restart-apiserver|vanish NS POD|kubelet stop|start|images|spark-image PYSPARK_DIR|import-image OCI.tar" >&2
        exit 2
        ;;
esac
