#!/usr/bin/env bash
# Figures: the flight recorder's /metrics endpoint under a connection flood. A recorder of
# the simulator's `mixed` scenario rotates every 5 s and serves /metrics on loopback; a
# client opens IDLE connections that never send a byte, plus a slowloris client (one header
# byte a second), and holds them for SECONDS. Printed: how long the server took to close
# them, whether /metrics answered during and after, segments opened, the recorder's peak
# RSS and open descriptors. Usage: scripts/bench-metrics-flood.sh [IDLE] [SECONDS]
# (default 20000 60).
set -euo pipefail
cd "$(dirname "$0")/.."
idle=${1:-20000}
secs=${2:-60}
# The client opens them from processes of at most 5,000 descriptors each.
cargo build --release --quiet
port=$((20000 + RANDOM % 20000))
mport=$((port + 1))
dir=$(mktemp -d)
target/release/spark-triage sim --scenario mixed --listen "127.0.0.1:$port" \
    --kubeconfig-out "$dir/kc" >"$dir/sim.log" 2>&1 &
sim=$!
trap 'kill $sim $rec 2>/dev/null; rm -rf "$dir"' EXIT
sleep 3
# The recorder keeps the descriptors a Deployment gives it by default.
(ulimit -n 1024 && exec target/release/spark-triage record --kubeconfig "$dir/kc" -A "$dir/segments" \
    --rotate 5s --metrics-addr "127.0.0.1:$mport") 2>"$dir/rec.log" &
rec=$!
sleep 3
python3 - "$mport" "$idle" "$secs" "$rec" <<'PY'
import socket, sys, time, urllib.request
port, n, secs, pid = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1]) // 1024
def fds():
    import os
    return len(os.listdir(f"/proc/{pid}/fd"))
def scrape():
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
        return next(float(l.split()[1]) for l in text.splitlines()
                    if l.startswith("spark_triage_recorder_segments_opened_total "))
    except Exception as e:
        return None
import os
opened0 = scrape()
t0 = time.time()
chunk = 5000
# Helpers hold all but the last chunk (idle, until the end); this process holds and checks it.
for i in range(max(0, (n - 1) // chunk)):
    if os.fork() == 0:
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(chunk)]
        time.sleep(secs)
        os._exit(0)
socks = []
for _ in range(n - chunk * max(0, (n - 1) // chunk)):
    s = socket.create_connection(("127.0.0.1", port))
    s.setblocking(False)
    socks.append(s)
slow = socket.create_connection(("127.0.0.1", port))
slow.sendall(b"GET /metrics HTTP/1.1\r\n")
print(f"opened {n} idle connections ({len(socks)} of them checked here) in {time.time() - t0:.1f} s")
closed_at, slow_closed, peak, peak_fds, answered, tries, missed = None, None, 0, 0, 0, 0, []
end = time.time() + secs
while time.time() < end:
    time.sleep(1)
    peak, peak_fds = max(peak, rss()), max(peak_fds, fds())
    try:
        slow.sendall(b"X")
        slow.setblocking(False)
        if slow.recv(1) == b"":
            raise OSError
    except BlockingIOError:
        pass
    except OSError:
        slow_closed = slow_closed or time.time() - t0
    open_ = 0
    for s in socks:
        try:
            if s.recv(1) != b"":
                open_ += 1
        except BlockingIOError:
            open_ += 1
        except OSError:
            pass
    if open_ == 0 and closed_at is None:
        closed_at = time.time() - t0
    tries += 1
    if scrape() is not None:
        answered += 1
    else:
        missed.append(round(time.time() - t0))
opened1 = scrape()
print(f"idle connections all closed by the server after: {closed_at and f'{closed_at:.1f} s'}")
print(f"slowloris client closed after: {slow_closed and f'{slow_closed:.1f} s'}")
print(f"/metrics answered {answered} of {tries} scrapes during the flood (missed at {missed} s); after it: {opened1 is not None}")
print(f"segments opened during the run: {opened0} -> {opened1}")
print(f"recorder peak RSS {peak} MiB, peak open descriptors {peak_fds} (limit 1024)")
PY
kill -0 $rec && echo "the recorder is still running" || { echo "the recorder exited:"; tail -3 "$dir/rec.log"; }
! grep -q "Too many open files" "$dir/rec.log" || echo "the recorder ran out of descriptors"
