# A real node beside the kwok nodes: the kubelet (built from the same k8s.io/kubernetes as the
# control plane), Debian's containerd and runc, Debian's CNI plugins (a bridge on loopback-only
# addresses). Sourced by scripts/control-plane.sh; `up --real-node` calls node_up, `down` calls
# node_down. Root only (cgroups, mounts, network devices).
#
# Everything it makes is named so `down` can find it again without trusting a PID file alone:
#   processes    containerd, kubelet (PIDs in $NODE/*.pid) and the shims containerd starts
#                (their command lines name $NODE's socket)
#   mounts       every mount under $NODE (overlay root filesystems, tmpfs volumes, shm) and the
#                network namespaces' bind mounts under /run/netns (cni-*) made since up
#   cgroups      /sys/fs/cgroup/*/kubepods (the kubelet's, cgroupfs driver; up refuses to run
#                when they exist already)
#   devices      the bridge st-cni0 and the veths of its pods
#   sysctls      the kernel settings the kubelet changes (restored from $NODE/sysctls)
#   directories  /run/containerd (shim sockets: containerd 1.6 puts them there whatever its
#                state directory), /var/log/containers (the kubelet's links to its pods'
#                logs), /run/netns (the sandboxes' namespaces) and /var/lib/cni (libcni's
#                cache) when they did not exist before
#   cluster      the ClusterRoleBinding that lets the kubelet ask who may use its API (gone
#                with the control plane)
NODE_NAME=spark-triage-node
NODE_BRIDGE=st-cni0
NODE_SUBNET=10.89.0
NODE_IP=$NODE_SUBNET.1
NODE_SRC=$SRC/node
# The kernel settings the kubelet sets when protectKernelDefaults is false
# (pkg/kubelet/cm/container_manager_linux.go setupKernelTunables).
# net.ipv4.ip_forward: the CNI bridge plugin turns it on (isGateway).
NODE_SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward"

node_check() {
    [ "$(id -u)" = 0 ] || skip "the real node needs root (cgroups, mounts, network devices)"
    [ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || skip "no memory cgroup controller"
    grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || skip "no overlayfs"
    local c
    for c in containerd containerd-shim-runc-v2 ctr runc ip gcc python3; do
        command -v "$c" >/dev/null 2>&1 || skip "no $c on PATH (.ci/run installs Debian's containerd, runc, containernetworking-plugins, busybox-static)"
    done
    [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] ||
        skip "no CNI plugins in /usr/lib/cni (Debian's containernetworking-plugins)"
    [ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' ||
        skip "no static /bin/busybox (Debian's busybox-static)"
    [ -x "$BIN/kubelet" ] || skip "no kubelet in $BIN (scripts/control-plane.sh build)"
    # down removes the kubelet's kubepods cgroups and the bridge: they must be ours. Another
    # kubelet on this machine (or a real node of another run dir) is not touched.
    local d
    for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
        [ -e "$d" ] && skip "$d exists: another kubelet runs here (down would remove its cgroups)"
    done
    ip link show "$NODE_BRIDGE" >/dev/null 2>&1 && skip "the bridge $NODE_BRIDGE exists: another real node runs here"
    # Swap would let the memory limits' OOM kills swap instead (the kubelet is told to run
    # with it, failSwapOn: false, as these machines have none).
    [ -z "$(swapon --show --noheadings 2>/dev/null)" ] || skip "swap is on: the OOM-kill cases would swap"
    return 0
}

# The local images, built once into $IMAGES (reused while their inputs are unchanged): pause
# (the sandbox, compiled statically from the kubelet's module's build/pause/linux/pause.c) and
# busybox (a shell, head, tr, sleep, from Debian's busybox-static).
IMAGES=$ROOT/target/control-plane/images
node_images() {
    mkdir -p "$IMAGES"
    local want pause_c
    # The module's directory (downloaded if it is not yet: `go list -m` would not).
    pause_c=$(cd "$SRC" && go mod download -json k8s.io/kubernetes 2>/dev/null |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' || true)/build/pause/linux/pause.c
    [ -f "$pause_c" ] || pause_c=$IMAGES/pause.c
    want=$({ sha256sum /bin/busybox "$NODE_SRC/oci-image.py"; cat "$pause_c" 2>/dev/null || true; } | sha256sum | cut -c1-16)
    if [ -f "$IMAGES/.stamp" ] && [ "$(cat "$IMAGES/.stamp")" = "$want" ] && [ -f "$IMAGES/busybox.tar" ] && [ -f "$IMAGES/pause.tar" ]; then
        return 0
    fi
    [ -f "$pause_c" ] || skip "no pause.c (go list -m k8s.io/kubernetes found no module directory)"
    [ "$pause_c" = "$IMAGES/pause.c" ] || install -m 644 "$pause_c" "$IMAGES/pause.c"
    local fs=$IMAGES/rootfs
    rm -rf "$fs" && mkdir -p "$fs/pause" "$fs/busybox/bin" "$fs/busybox/tmp" "$fs/busybox/etc"
    gcc -Os -static -DVERSION=3.10-spark-triage -o "$fs/pause/pause" "$IMAGES/pause.c"
    python3 "$NODE_SRC/oci-image.py" localhost/spark-triage-pause:3.10 "$fs/pause" "$IMAGES/pause.tar" --entrypoint /pause
    cp /bin/busybox "$fs/busybox/bin/busybox"
    local a
    for a in $("$fs/busybox/bin/busybox" --list); do
        [ "$a" = busybox ] || ln -s busybox "$fs/busybox/bin/$a"
    done
    echo 'root:x:0:0:root:/:/bin/sh' >"$fs/busybox/etc/passwd"
    echo 'root:x:0:' >"$fs/busybox/etc/group"
    chmod 1777 "$fs/busybox/tmp"
    python3 "$NODE_SRC/oci-image.py" localhost/spark-triage-busybox:1 "$fs/busybox" "$IMAGES/busybox.tar"
    rm -rf "$fs"
    echo "$want" >"$IMAGES/.stamp"
}

# The Spark image, localhost/spark-triage-spark:4.3.0: Debian bookworm (debootstrap's minbase
# with openjdk-17-jre-headless, python3, procps and tini; the base kept as a tarball in $IMAGES)
# and PyPI's pyspark package directory (with py4j) as SPARK_HOME, our entrypoint
# (node/spark/entrypoint.sh) and the test's jobs in /opt/jobs. $1: the pyspark package directory (the real-Spark test's venv
# has it). Built once per input, imported into the running node.
node_spark_image() {
    local pyspark=${1:?usage: spark-image PYSPARK_DIR}
    NODE=$RUN/node
    node_alive containerd || { say "no real node running in $RUN (up --real-node)"; exit 1; }
    [ -f "$pyspark/jars/spark-core_2.13-4.3.0.jar" ] || { say "$pyspark: not pyspark 4.3.0's package directory"; exit 1; }
    [ -d "$(dirname "$pyspark")/py4j" ] || { say "no py4j beside $pyspark"; exit 1; }
    mkdir -p "$IMAGES"
    local want fs=$IMAGES/spark-rootfs t0=$SECONDS
    want=$({ sha256sum "$NODE_SRC/oci-image.py" "$NODE_SRC/spark/entrypoint.sh" "$NODE_SRC"/spark/jobs/*.py; ls -l "$pyspark/jars"; } | sha256sum | cut -c1-16)
    if ! [ -f "$IMAGES/spark.tar" ] || [ "$(cat "$IMAGES/spark.stamp" 2>/dev/null)" != "$want" ]; then
        node_spark_base
        rm -rf "$fs" && mkdir -p "$fs"
        tar -C "$fs" -xf "$IMAGES/spark-base.tar"
        mkdir -p "$fs/opt/pyspark-site"
        cp -a "$pyspark" "$fs/opt/pyspark-site/pyspark"
        cp -a "$(dirname "$pyspark")/py4j" "$fs/opt/pyspark-site/py4j"
        install -m 755 "$NODE_SRC/spark/entrypoint.sh" "$fs/opt/entrypoint.sh"
        mkdir -p "$fs/opt/jobs" && install -m 644 "$NODE_SRC"/spark/jobs/*.py "$fs/opt/jobs/"
        python3 "$NODE_SRC/oci-image.py" localhost/spark-triage-spark:4.3.0 "$fs" "$IMAGES/spark.tar" \
            --entrypoint /opt/entrypoint.sh --workdir /opt \
            --env SPARK_HOME=/opt/pyspark-site/pyspark --env PYTHONPATH=/opt/pyspark-site \
            --env JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 --env PYSPARK_PYTHON=python3
        rm -rf "$fs"
        echo "$want" >"$IMAGES/spark.stamp"
    fi
    node_ctr images import "$IMAGES/spark.tar" >/dev/null
    say "localhost/spark-triage-spark:4.3.0 imported in $((SECONDS - t0)) s ($(du -m "$IMAGES/spark.tar" | cut -f1) MB)"
}

# The Spark image's base, once: Debian bookworm by debootstrap (minbase with Java 17, Python 3,
# procps and tini), apt's caches dropped, as $IMAGES/spark-base.tar. Needs no node
# (`scripts/control-plane.sh images` builds it beside the Go build in .ci/run).
node_spark_base() {
    [ -f "$IMAGES/spark-base.tar" ] && return 0
    [ "$(id -u)" = 0 ] || skip "the Spark image's base is built as root (debootstrap)"
    command -v debootstrap >/dev/null 2>&1 || skip "no debootstrap (Debian's debootstrap builds the Spark image's base)"
    mkdir -p "$IMAGES"
    local fs=$IMAGES/spark-base-rootfs t0=$SECONDS
    rm -rf "$fs"
    say "debootstrap: Debian bookworm with Java 17 and Python 3 (once)"
    debootstrap --variant=minbase --include=openjdk-17-jre-headless,python3,procps,tini \
        bookworm "$fs" http://deb.debian.org/debian >"$IMAGES/debootstrap.log" 2>&1 ||
        { tail -5 "$IMAGES/debootstrap.log" >&2; rm -rf "$fs"; exit 1; }
    rm -rf "$fs"/var/cache/apt/archives/*.deb "$fs"/var/lib/apt/lists/*
    tar -C "$fs" -cf "$IMAGES/spark-base.tar.part" . && mv "$IMAGES/spark-base.tar.part" "$IMAGES/spark-base.tar"
    rm -rf "$fs"
    say "the Spark image's base in $((SECONDS - t0)) s"
}

# An OCI image archive (scripts/image.sh's, the flight recorder's) into the running node.
node_import_image() {
    local tar=${1:?usage: import-image OCI.tar}
    NODE=$RUN/node
    node_alive containerd || { say "no real node running in $RUN (up --real-node)"; exit 1; }
    [ -f "$tar" ] || { say "$tar: no such image archive"; exit 1; }
    node_ctr images import "$tar" >/dev/null
    say "$tar imported"
}

node_ctr() { timeout 60 ctr --address "$NODE/containerd.sock" --namespace k8s.io "$@"; }

# After node_check and node_images (up runs them before the control plane starts).
node_up() {
    NODE=$RUN/node
    mkdir -p "$NODE"/{cni,cni-ipam,kubelet,pod-logs,containerd}
    local t0=$SECONDS s
    # What down restores or removes only if up made it.
    for s in $NODE_SYSCTLS; do echo "$s=$(sysctl -n "$s")"; done >"$NODE/sysctls"
    [ -d /run/containerd ] || touch "$NODE/made-run-containerd"
    [ -d /var/log/containers ] || touch "$NODE/made-var-log-containers"
    [ -d /run/netns ] || touch "$NODE/made-run-netns"
    [ -d /var/lib/cni ] || touch "$NODE/made-var-lib-cni"
    ls /var/lib/cni/results 2>/dev/null | sort >"$NODE/cni-results-before" || true
    ls /run/netns 2>/dev/null | sort >"$NODE/netns-before" || true

    # The bridge first, with the node's address: the kubelet's --node-ip must exist.
    ip link add "$NODE_BRIDGE" type bridge
    ip addr add "$NODE_IP/24" dev "$NODE_BRIDGE"
    ip link set "$NODE_BRIDGE" up
    sed -e "s|@IPAM@|$NODE/cni-ipam|g" -e "s|@BRIDGE@|$NODE_BRIDGE|g" -e "s|@SUBNET@|$NODE_SUBNET|g" \
        "$NODE_SRC/cni.conflist" >"$NODE/cni/10-spark-triage.conflist"
    sed -e "s|@NODE@|$NODE|g" "$NODE_SRC/containerd.toml" >"$NODE/containerd.toml"
    setsid containerd --config "$NODE/containerd.toml" >"$NODE/containerd.log" 2>&1 </dev/null &
    echo $! >"$NODE/containerd.pid"
    node_wait containerd 30 node_ctr version
    node_ctr images import --no-unpack=false "$IMAGES/pause.tar" >/dev/null
    node_ctr images import "$IMAGES/busybox.tar" >/dev/null

    # The kubelet's identity: system:node:<name> in system:nodes (the Node authorizer's).
    cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "$RUN/client.ext"
    kubeconfig kubelet
    sed -e "s|@NODE@|$NODE|g" -e "s|@RUN@|$RUN|g" -e "s|@NODE_IP@|$NODE_IP|g" \
        "$NODE_SRC/kubelet.yaml" >"$NODE/kubelet.yaml"
    # The kubelet asks the API server who may use its API (authorization: Webhook).
    kubectl --kubeconfig "$RUN/admin.kubeconfig" --request-timeout=10s create clusterrolebinding \
        spark-triage-node-auth-delegator --clusterrole system:auth-delegator \
        --user "system:node:$NODE_NAME" >/dev/null
    node_kubelet_start
    say "real node $NODE_NAME Ready in $((SECONDS - t0)) s (kubelet $("$BIN/kubelet" --version 2>/dev/null | cut -d' ' -f2), $(containerd --version | cut -d' ' -f3), runc $(runc --version | sed -n 's/^runc version //p'))"
}

# The kubelet alone: `scripts/control-plane.sh kubelet stop|start` (the node goes NotReady
# when the node controller misses its status for its grace period, and comes back).
node_kubelet_start() {
    NODE=$RUN/node
    [ -f "$NODE/kubelet.yaml" ] || { say "no real node in $RUN (up --real-node)"; exit 1; }
    node_alive kubelet && { say "the kubelet runs already"; return 0; }
    [ -f "$NODE/kubelet.log" ] && mv "$NODE/kubelet.log" "$NODE/kubelet.log.1"
    setsid "$BIN/kubelet" --config "$NODE/kubelet.yaml" --kubeconfig "$RUN/kubelet.kubeconfig" \
        --root-dir "$NODE/kubelet" --cert-dir "$NODE/kubelet/pki" \
        --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --v=2 \
        >"$NODE/kubelet.log" 2>&1 </dev/null &
    echo $! >"$NODE/kubelet.pid"
    local K="kubectl --kubeconfig $RUN/admin.kubeconfig --request-timeout=10s"
    node_wait "node $NODE_NAME Ready" 90 bash -c "$K get node $NODE_NAME -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
}

node_kubelet_stop() {
    NODE=$RUN/node
    node_alive kubelet || { say "no kubelet running in $NODE"; exit 1; }
    node_stop_pid kubelet
    say "kubelet stopped (its containers run on)"
}

node_alive() { [ -f "$NODE/$1.pid" ] && kill -0 "$(cat "$NODE/$1.pid")" 2>/dev/null; }

node_wait() { # $1 what, $2 seconds, then a command
    local what=$1 secs=$2 n c
    shift 2
    for n in $(seq 1 $((secs * 5))); do
        "$@" >/dev/null 2>&1 && return 0
        for c in containerd kubelet; do
            if [ -f "$NODE/$c.pid" ] && ! node_alive "$c"; then
                say "$c exited; the end of its log:"
                tail -20 "$NODE/$c.log" >&2
                down
                exit 1
            fi
        done
        sleep 0.2
    done
    say "$what not ready within ${secs}s; the end of the kubelet's and containerd's logs:"
    tail -20 "$NODE/kubelet.log" "$NODE/containerd.log" >&2 2>/dev/null || true
    down
    exit 1
}

node_stop_pid() { stop_pidfile "$NODE/$1.pid" "$1"; }

# Stops the node and removes what it made. Safe to run twice, and after a failed up.
node_down() {
    NODE=$RUN/node
    [ -d "$NODE" ] || return 0
    local pid m d s
    # The kubelet first (no new sandboxes), then every container and sandbox through
    # containerd: tasks killed, so the shims exit and unmount the root filesystems.
    node_stop_pid kubelet
    if node_alive containerd; then
        for d in $(timeout 10 ctr --address "$NODE/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null); do
            timeout 10 ctr --address "$NODE/containerd.sock" -n k8s.io tasks kill -s SIGKILL "$d" >/dev/null 2>&1 || true
        done
        sleep 1
        for d in $(timeout 10 ctr --address "$NODE/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null); do
            timeout 10 ctr --address "$NODE/containerd.sock" -n k8s.io tasks delete -f "$d" >/dev/null 2>&1 || true
        done
    fi
    node_stop_pid containerd
    # Shims that outlived containerd (they are daemons of their own), by their socket's path.
    for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $NODE/containerd.sock" 2>/dev/null); do
        kill -KILL "$pid" 2>/dev/null || true
    done
    # Container processes whose shim is gone: every process in the kubelet's cgroups.
    for d in $(find /sys/fs/cgroup/*/kubepods -name cgroup.procs 2>/dev/null); do
        for pid in $(cat "$d" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    done
    sleep 0.5
    # Mounts under the node's directory, deepest first; then the sandboxes' network namespaces.
    for m in $(awk -v p="$NODE/" 'index($5, p) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
    if [ -f "$NODE/netns-before" ]; then
        # containerd names its sandboxes' namespaces cni-<uuid>; others (ip netns add, podman)
        # are left alone.
        for s in $(ls /run/netns 2>/dev/null | grep '^cni-' | sort | comm -13 "$NODE/netns-before" -); do
            umount -l "/run/netns/$s" 2>/dev/null || true
            rm -f "/run/netns/$s"
        done
    fi
    # The kubelet's cgroups, leaves first.
    for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/unified/kubepods; do
        [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
    # Network devices: the bridge and the veths attached to it.
    for s in $(ip -o link show master "$NODE_BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
        ip link del "$s" 2>/dev/null || true
    done
    ip link del "$NODE_BRIDGE" 2>/dev/null || true
    if [ -f "$NODE/sysctls" ]; then
        while IFS= read -r s; do sysctl -q -w "$s" >/dev/null 2>&1 || true; done <"$NODE/sysctls"
    fi
    # The shims' sockets (containerd 1.6 puts them in /run/containerd/s whatever its state
    # directory; runc's own state is under the node's directory): only when up made the directory.
    if [ -f "$NODE/made-run-containerd" ]; then
        rm -rf /run/containerd/s
        rmdir /run/containerd 2>/dev/null || true
    fi
    # libcni's cache of the results of its sandboxes' networks (ours, spark-triage-*, and
    # containerd's loopback, cni-loopback-*) made since up.
    if [ -f "$NODE/cni-results-before" ]; then
        for s in $(ls /var/lib/cni/results 2>/dev/null | grep -E '^(spark-triage|cni-loopback)-' | sort |
            comm -13 "$NODE/cni-results-before" -); do
            rm -f "/var/lib/cni/results/$s"
        done
    fi
    if [ -f "$NODE/made-var-lib-cni" ]; then
        rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null || true
    fi
    # The kubelet's links to its pods' logs (a fixed directory, /var/log/containers).
    find /var/log/containers -maxdepth 1 -type l -lname "$NODE/*" -delete 2>/dev/null || true
    if [ -f "$NODE/made-var-log-containers" ]; then rmdir /var/log/containers 2>/dev/null || true; fi
    if [ -f "$NODE/made-run-netns" ]; then rmdir /run/netns 2>/dev/null || true; fi
    rm -rf "$NODE"
}
