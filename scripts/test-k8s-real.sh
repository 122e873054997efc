#!/usr/bin/env bash
# The chart, the DRA driver and the claims against real Kubernetes components
# (docs/kubernetes.md, "Against the real components"): kube-apiserver,
# kube-scheduler and kube-controller-manager v1.37.2, built from the Go module
# proxy (k8s/realtest/build.sh, cached), on Debian's etcd, on loopback only, in
# a temporary directory, with fake Nodes and no kubelet. Then the tests of
# k8s/realtest: the chart applied server-side, the slice the driver binary
# publishes (with a token bound to the chart's DaemonSet pod), claims
# allocated by the real scheduler, prepare and unprepare over the driver's
# kubelet plugin socket, and the API server with DRAConsumableCapacity off.
# Then the negative checks: a mutated copy of the driver, the chart or the
# claims, each of which the tests must fail, for the reason expected.
#
# Opt-in, not part of .ci/run: the first run builds Kubernetes (long); later
# runs take minutes. Needs root only to install etcd (apt-get) when it is
# missing. Everything it starts is stopped on exit.
#
#   bash scripts/test-k8s-real.sh               # everything
#   SALUS_REAL_NEGATIVE=0 bash scripts/test-k8s-real.sh   # without the negative checks
#   SALUS_REAL_KEEP=1 ...                       # keep the temporary directory (logs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export K8S_VERSION=v1.37.2
export CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/salus-k8s-real/$K8S_VERSION
start_s=$(date +%s)
say() { echo "test-k8s-real: $*"; }

# --- what it needs --------------------------------------------------------
if ! command -v etcd >/dev/null; then
  if [ "$(id -u)" != 0 ]; then
    say "etcd is missing: install Debian's etcd-server (apt-get install etcd-server) as root, or run this as root"; exit 1
  fi
  # On a host with systemd, the package also starts its own etcd service on
  # 127.0.0.1:2379; this script never uses it (its etcd is on a random port).
  say "installing etcd (apt-get install etcd-server)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
fi
for c in openssl curl ss go; do
  command -v "$c" >/dev/null || { say "$c is missing: install it"; exit 1; }
done

say "building kube-apiserver, kube-scheduler, kube-controller-manager $K8S_VERSION (cached in $CACHE/bin)"
nice -n 19 bash "$root/k8s/realtest/build.sh"
kbin=$CACHE/bin

tmp=$(mktemp -d /tmp/salus-k8s-real.XXXXXX)
pids=()
stop_all() {
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
  done
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    # Wait up to 10 s for each, then kill it.
    for _ in $(seq 50); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  pids=()
}
cleanup() {
  stop_all
  if [ "${SALUS_REAL_KEEP:-}" = 1 ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    if [ -z "$(ss -Htln "sport = :$p")" ]; then echo "$p"; return; fi
  done
}

# --- the binaries of this tree, and the mutated driver copies ----------------
mkdir -p "$tmp/bin"
say "building salus, salus-dra-driver and the tests"
(cd "$root" && go build -o "$tmp/bin/salus" ./cmd/salus)
(cd "$root/k8s" && go build -o "$tmp/bin/salus-dra-driver" ./cmd/salus-dra-driver \
  && go test -c -o "$tmp/bin/realtest.test" ./realtest)

# mutate NAME FILE PERL: a copy of FILE changed by the perl substitution,
# built into the driver with go build -overlay; fails if nothing changed.
mutate_driver() {
  local name=$1 file=$2 expr=$3 copy=$tmp/mut/$1/$(basename "$2")
  mkdir -p "$tmp/mut/$name"
  perl -0pe "$expr" "$root/k8s/$file" > "$copy"
  if cmp -s "$root/k8s/$file" "$copy"; then say "mutation $name changed nothing in $file: update it"; exit 1; fi
  printf '{"Replace":{"%s":"%s"}}\n' "$root/k8s/$file" "$copy" > "$tmp/mut/$name/overlay.json"
  (cd "$root/k8s" && go build -overlay "$tmp/mut/$name/overlay.json" -o "$tmp/bin/salus-dra-driver-$name" ./cmd/salus-dra-driver)
}

# --- certificates and keys ------------------------------------------------
pki=$tmp/pki; mkdir -p "$pki"
(
  cd "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=salus-real-ca 2>/dev/null
  cert() { # name subject extensions
    openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 1 -extfile <(printf '%s\n' "$3") 2>/dev/null
  }
  cert apiserver /CN=kube-apiserver $'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'
  cert admin "/O=system:masters/CN=salus-real-admin" 'extendedKeyUsage=clientAuth'
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
)

# --- etcd, shared: each cluster below has its own key prefix -----------------
etcd_port=$(free_port); etcd_peer=$(free_port)
etcd --name real --data-dir "$tmp/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
  --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" --initial-cluster "real=http://127.0.0.1:$etcd_peer" \
  > "$tmp/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$etcd_port/health" >/dev/null && break; sleep 0.3; done
curl -sf "http://127.0.0.1:$etcd_port/health" >/dev/null || { say "etcd did not start:"; tail -20 "$tmp/etcd.log"; exit 1; }
etcd_pid=${pids[0]}

# wait_up NAME PID CHECK...: wait for CHECK to succeed while PID lives.
wait_up() {
  local name=$1 pid=$2; shift 2
  for _ in $(seq 400); do
    "$@" >/dev/null 2>&1 && return 0
    if ! kill -0 "$pid" 2>/dev/null; then say "$name exited:"; tail -30 "$dir/$name.log"; return 1; fi
    sleep 0.3
  done
  say "$name is not up after 2 minutes:"; tail -30 "$dir/$name.log"; return 1
}

# cluster NAME GATES: an API server (its own etcd prefix), the controller
# manager, the scheduler and a node daemon, in $tmp/NAME; sets $dir, $kubeconfig.
cluster() {
  local name=$1 gates=$2 api
  dir=$tmp/$name; mkdir -p "$dir"
  api=$(free_port)
  kubeconfig=$dir/admin.kubeconfig
  cat > "$kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: real, cluster: {server: "https://127.0.0.1:$api", certificate-authority: "$pki/ca.crt"}}]
users: [{name: admin, user: {client-certificate: "$pki/admin.crt", client-key: "$pki/admin.key"}}]
contexts: [{name: real, context: {cluster: real, user: admin}}]
current-context: real
EOF
  "$kbin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" --etcd-prefix "/$name" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api" --cert-dir "$dir/certs" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 --authorization-mode Node,RBAC --endpoint-reconciler-type none \
    ${gates:+--feature-gates "$gates"} > "$dir/kube-apiserver.log" 2>&1 &
  pids+=($!)
  wait_up kube-apiserver $! curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$api/readyz" || return 1
  # No node lifecycle controller: there is no kubelet to renew the fake
  # nodes' leases, and it would taint them unreachable.
  "$kbin/kube-controller-manager" --kubeconfig "$kubeconfig" --leader-elect=false --secure-port 0 \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --controllers '*,-node-lifecycle-controller' ${gates:+--feature-gates "$gates"} > "$dir/kube-controller-manager.log" 2>&1 &
  pids+=($!)
  "$kbin/kube-scheduler" --kubeconfig "$kubeconfig" --leader-elect=false --secure-port 0 \
    ${gates:+--feature-gates "$gates"} > "$dir/kube-scheduler.log" 2>&1 &
  pids+=($!)
  # The node daemon, as the chart's kind values run it: two emulated P100s,
  # 14336 MiB usable each.
  local daemon_port; daemon_port=$(free_port)
  "$tmp/bin/salus" serve --device p100 --gpus 2 --emulate p100 --addr "127.0.0.1:$daemon_port" --fast-addr "" \
    --socket "$dir/salus.sock" --token-file "$dir/token" --admin-token-file "$dir/admin-token" > "$dir/salus.log" 2>&1 &
  pids+=($!)
  wait_up salus $! test -s "$dir/admin-token" || return 1
  export SALUS_REAL_KUBECONFIG=$kubeconfig SALUS_REAL_DRIVER=$tmp/bin/salus-dra-driver SALUS_REAL_DAEMON=http://127.0.0.1:$daemon_port \
    SALUS_REAL_ADMIN_TOKEN=$dir/admin-token SALUS_REAL_HOST_SOCKET=$dir/salus.sock \
    SALUS_REAL_HOST_TOKEN=$dir/token SALUS_REAL_WORK=$dir
}

# run NAME TEST [VAR=VALUE...]: a fresh cluster, the test with the environment
# given; its output in $tmp/NAME/test.log; returns the test's status.
run() {
  local name=$1 test=$2 rc=0 t0; shift 2
  t0=$(date +%s)
  local gates=""
  for kv in "$@"; do [ "$kv" = SALUS_REAL_GATE_OFF=1 ] && gates=DRAConsumableCapacity=false; done
  cluster "$name" "$gates" || rc=1
  [ $rc = 0 ] && (cd "$root/k8s/realtest" && env "$@" "$tmp/bin/realtest.test" -test.run "^$test\$" -test.v -test.count 1) > "$dir/test.log" 2>&1 || rc=$?
  # Stop this cluster, leaving etcd.
  local keep=("$etcd_pid") p
  for p in "${pids[@]}"; do [ "$p" = "$etcd_pid" ] || { kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; }; done
  pids=("${keep[@]}")
  say "$name: $test exited $rc in $(( $(date +%s) - t0 ))s"
  return $rc
}

say "TestReal (the chart, the slice, the claims, prepare and unprepare)"
if ! run real TestReal; then cat "$tmp/real/test.log"; exit 1; fi
grep -E '^(=== RUN|--- |    real_test.go)' "$tmp/real/test.log" | grep -v '=== RUN' || true

say "TestConsumableCapacityOff (kube-apiserver --feature-gates DRAConsumableCapacity=false)"
if ! run gate-off TestConsumableCapacityOff SALUS_REAL_GATE_OFF=1; then cat "$tmp/gate-off/test.log"; exit 1; fi

# expect_fail NAME WANT [VAR=VALUE...]: TestReal must fail on the mutated
# copy, and its output must say WANT (so that it fails for that reason).
expect_fail() {
  local name=$1 want=$2; shift 2
  if run "$name" TestReal "$@"; then
    say "NEGATIVE CHECK $name PASSED: TestReal did not notice the mutation"; exit 1
  fi
  if ! grep -qF -- "$want" "$tmp/$name/test.log"; then
    cat "$tmp/$name/test.log"
    say "NEGATIVE CHECK $name failed, but without saying \"$want\": see above"; exit 1
  fi
  say "negative check $name: failed as it must ($want)"
}

if [ "${SALUS_REAL_NEGATIVE:-1}" != 0 ]; then
  # The driver publishes GPUs that are not shareable (allowMultipleAllocations
  # dropped): the API server refuses a capacity request policy without it.
  mutate_driver drop-sharing dra/slice.go 's/\n\s*AllowMultipleAllocations: ptr\(true\),//'
  expect_fail drop-sharing "allowMultipleAllocations must be true" SALUS_REAL_DRIVER="$tmp/bin/salus-dra-driver-drop-sharing"

  # The driver publishes twice the memory the daemon has: the scheduler then
  # allocates past the GPUs, which the tests check against the daemon.
  mutate_driver over-allocate dra/slice.go 's/mem := memoryBytes\(g\)/mem := 2 * memoryBytes(g)/'
  expect_fail over-allocate "over-allocated" SALUS_REAL_DRIVER="$tmp/bin/salus-dra-driver-over-allocate"

  # The chart's DeviceClass selects no device of the driver.
  mkdir -p "$tmp/mut/chart-selector"; cp -r "$root/deploy/chart/salus" "$tmp/mut/chart-selector/"
  perl -0pi -e 's/expression: device\.driver == "\{\{ include "salus.driverName" \. \}\}"/expression: device.driver == "{{ include "salus.driverName" . }}" \&\& device.attributes["gpu.salus.dev"].model == "no-such-gpu"/' \
    "$tmp/mut/chart-selector/salus/templates/deviceclass.yaml"
  cmp -s "$root/deploy/chart/salus/templates/deviceclass.yaml" "$tmp/mut/chart-selector/salus/templates/deviceclass.yaml" && { say "the selector mutation changed nothing"; exit 1; }
  expect_fail chart-selector "not allocated" SALUS_REAL_CHART="$tmp/mut/chart-selector/salus"

  # The chart's DeviceClass CEL does not compile.
  mkdir -p "$tmp/mut/chart-cel"; cp -r "$root/deploy/chart/salus" "$tmp/mut/chart-cel/"
  perl -0pi -e 's/expression: device\.driver ==/expression: device.drivr ==/' "$tmp/mut/chart-cel/salus/templates/deviceclass.yaml"
  cmp -s "$root/deploy/chart/salus/templates/deviceclass.yaml" "$tmp/mut/chart-cel/salus/templates/deviceclass.yaml" && { say "the CEL mutation changed nothing"; exit 1; }
  expect_fail chart-cel "server-side apply DeviceClass" SALUS_REAL_CHART="$tmp/mut/chart-cel/salus"

  # The claims' template asks for no capacity: each claim takes a whole GPU.
  mkdir -p "$tmp/mut/claims"
  perl -0pe 's/\n\s*capacity:\n\s*requests:\n\s*gpu\.salus\.dev\/memory: 6Gi//' "$root/deploy/e2e/claims.yaml" > "$tmp/mut/claims/claims.yaml"
  cmp -s "$root/deploy/e2e/claims.yaml" "$tmp/mut/claims/claims.yaml" && { say "the claims mutation changed nothing"; exit 1; }
  expect_fail claims-no-capacity "want 6Gi" SALUS_REAL_CLAIMS="$tmp/mut/claims/claims.yaml"
fi

# The kubelet stage (the training pod and the sweep's Indexed Job run by a real
# kubelet) is not run: see docs/kubernetes.md for why.
if ! command -v containerd >/dev/null || ! command -v runc >/dev/null; then
  say "kubelet stage skipped: no containerd and runc on this machine (and the stage is not written: docs/kubernetes.md)"
else
  say "kubelet stage skipped: not written yet (docs/kubernetes.md says what it needs to run safely)"
fi
say "all passed in $(( $(date +%s) - start_s ))s"
