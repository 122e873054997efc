#!/usr/bin/env bash
# The chart, the DRA driver and the claims against real Kubernetes components
# (docs/kubernetes-reference.md, "Against the real components"): kube-apiserver,
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
# With SALUS_REAL_KUBELET=1, then the kubelet stage (k8s/realtest/node.sh,
# TestKubelet): a real node, the kubelet v1.37.2 and containerd v2.4.2 (built
# from the Go module proxy, cached) with Debian's runc, in a private mount
# namespace where the kernel tunables the kubelet checks are files: the
# chart's DaemonSet pod, training pods under their claims, unprepare and a
# waiting pod admitted, and a sweep's Indexed Job. It records the host's
# tunables before and after, and fails if any changed.
#
# Opt-in, not part of .ci/run: the first run builds Kubernetes (long); later
# runs take minutes. Needs root only to install etcd (apt-get) when it is
# missing; the kubelet stage needs root. Everything it starts is stopped on
# exit.
#
#   bash scripts/test-k8s-real.sh               # everything but the kubelet stage
#   SALUS_REAL_KUBELET=1 bash scripts/test-k8s-real.sh    # and the kubelet stage
#   SALUS_REAL_KUBELET=only ...                 # the kubelet stage alone
#   SALUS_REAL_NEGATIVE=0 bash scripts/test-k8s-real.sh   # without the negative checks
#   SALUS_REAL_KEEP=1 ...                       # keep the temporary directory (logs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export K8S_VERSION=v1.37.2
export CONTAINERD_VERSION=v2.4.2
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/salus-k8s-real
export CACHE=$cache_root/$K8S_VERSION
kubelet_stage=${SALUS_REAL_KUBELET:-0}
start_s=$(date +%s)
say() { echo "test-k8s-real: $*"; }

# The kernel tunables the kubelet checks with protectKernelDefaults, and the
# value it wants (k8s.io/kubernetes pkg/kubelet/cm setupKernelTunables), with
# net.ipv4.ip_forward, which a CNI bridge would turn on: read, never written,
# in the host's namespaces.
tunables="vm.overcommit_memory=1 vm.panic_on_oom=0 kernel.panic=10 kernel.panic_on_oops=1 kernel.keys.root_maxkeys=1000000 kernel.keys.root_maxbytes=25000000"
read_tunables() {
  local kv name
  for kv in $tunables net.ipv4.ip_forward=; do
    name=${kv%%=*}; echo "$name=$(cat "/proc/sys/${name//.//}")"
  done
}
tunables_before=$(read_tunables)
# tunables_unchanged: whether they are as they were before anything ran (it
# says which changed when some did).
tunables_unchanged() {
  local after; after=$(read_tunables)
  if [ "$tunables_before" != "$after" ]; then
    say "THE HOST'S KERNEL TUNABLES CHANGED:"; diff <(echo "$tunables_before") <(echo "$after") || true; return 1
  fi
  say "the host's kernel tunables, unchanged: $(echo $after)"
}

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

if [ "$kubelet_stage" != 0 ]; then
  [ "$(id -u)" = 0 ] || { say "the kubelet stage needs root (containerd, the kubelet, mount namespaces)"; exit 1; }
  if ! command -v runc >/dev/null; then
    say "installing runc (apt-get install runc)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runc >/dev/null
  fi
  for c in unshare nsenter findmnt python3 ip flock; do
    command -v "$c" >/dev/null || { say "$c is missing: install it (util-linux, iproute2, python3)"; exit 1; }
  done
  [ -x /bin/busybox ] && busybox --list | grep -qx chown || {
    say "installing busybox-static (apt-get install busybox-static), for the stage's pause and busybox images"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null
  }
  [ -x /usr/bin/python3.11 ] || { say "the training image copies Debian's /usr/bin/python3.11: apt-get install python3.11"; exit 1; }
  say "building containerd $CONTAINERD_VERSION (cached in $cache_root/containerd-$CONTAINERD_VERSION/bin)"
  CACHE=$cache_root/containerd-$CONTAINERD_VERSION nice -n 19 bash "$root/k8s/realtest/build-containerd.sh"
  say "building kube-apiserver, kube-scheduler, kube-controller-manager, kubelet $K8S_VERSION (cached in $CACHE/bin)"
  nice -n 19 bash "$root/k8s/realtest/build.sh" kube-apiserver kube-scheduler kube-controller-manager kubelet
else
  say "building kube-apiserver, kube-scheduler, kube-controller-manager $K8S_VERSION (cached in $CACHE/bin)"
  nice -n 19 bash "$root/k8s/realtest/build.sh"
fi
kbin=$CACHE/bin

tmp=$(mktemp -d /tmp/salus-k8s-real.XXXXXX)
pids=()
# stop_all [KEEP]: stops every process started (but KEEP: etcd, between
# clusters), the last first.
stop_all() {
  local i keep=${1:-} left=()
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    [ "${pids[i]}" = "$keep" ] || kill -TERM "${pids[i]}" 2>/dev/null || true
  done
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    [ "${pids[i]}" = "$keep" ] && { left=("$keep"); continue; }
    # Wait up to 10 s for each (the node: 60 s, it stops its containers), then kill it.
    local n=50; [ "${pids[i]}" = "${node_pid:-}" ] && n=300
    for _ in $(seq $n); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  pids=("${left[@]}")
}
cleanup() {
  local rc=$?
  stop_all
  if declare -F node_cleanup >/dev/null; then node_cleanup; fi
  # Checked on every exit, whatever happened (unless just checked, at the end).
  [ -n "${tunables_checked:-}" ] || tunables_unchanged || rc=1
  if [ "${SALUS_REAL_KEEP:-}" = 1 ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
  exit $rc
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
  # The API server's client certificate to the kubelet (logs, exec), and the
  # kubelet's to the API server (the Node authorizer's system:node:NAME).
  cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" 'extendedKeyUsage=clientAuth'
  cert node "/O=system:nodes/CN=system:node:salus-node" 'extendedKeyUsage=clientAuth'
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

# cluster NAME GATES [kubelet]: an API server (its own etcd prefix), the
# controller manager, the scheduler and a node daemon, in $tmp/NAME; sets $dir,
# $kubeconfig, $api. With kubelet: no node daemon (the chart's runs on the
# node), and the node lifecycle controller on (a real kubelet renews its
# node's lease).
cluster() {
  local name=$1 gates=$2 mode=${3:-} controllers='*,-node-lifecycle-controller'
  [ "$mode" = kubelet ] && controllers='*'
  dir=$tmp/$name; mkdir -p "$dir"
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
    --kubelet-client-certificate "$pki/kubelet-client.crt" --kubelet-client-key "$pki/kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    ${gates:+--feature-gates "$gates"} > "$dir/kube-apiserver.log" 2>&1 &
  pids+=($!)
  wait_up kube-apiserver $! curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$api/readyz" || return 1
  # No node lifecycle controller: there is no kubelet to renew the fake
  # nodes' leases, and it would taint them unreachable.
  "$kbin/kube-controller-manager" --kubeconfig "$kubeconfig" --leader-elect=false --secure-port 0 \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --controllers "$controllers" ${gates:+--feature-gates "$gates"} > "$dir/kube-controller-manager.log" 2>&1 &
  pids+=($!)
  "$kbin/kube-scheduler" --kubeconfig "$kubeconfig" --leader-elect=false --secure-port 0 \
    ${gates:+--feature-gates "$gates"} > "$dir/kube-scheduler.log" 2>&1 &
  pids+=($!)
  [ "$mode" = kubelet ] && return 0
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

# --- the kubelet stage ------------------------------------------------------
# node_cleanup: what the node left outside its namespace: its processes
# (containerd's shims, should the node have been killed), then its cgroups.
node_cleanup() {
  [ -n "${node_dir:-}" ] || return 0
  local ns p c
  ns=$(cat "$node_dir/mnt-ns" 2>/dev/null || true)
  if [ -n "$ns" ] && [ "$ns" != "$(readlink /proc/self/ns/mnt)" ]; then
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] && kill -KILL "${p#/proc/}" 2>/dev/null
    done
    sleep 1
  fi
  for c in /sys/fs/cgroup/*/; do
    [ -n "${cgroup_root:-}" ] && [ -d "$c$cgroup_root" ] && find "$c$cgroup_root" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  node_dir=""
}

# kubelet_node: a node, salus-node, in $tmp/node: the kubelet and containerd
# under node.sh in a private mount namespace; sets $node_dir and $node_pid.
kubelet_node() {
  node_dir=$tmp/node
  local d=$node_dir overlay=${1:-} kport hport kv c
  rm -rf "$d"
  mkdir -p "$d/bin" "$d/images" "$d/sysctl" "$d/cni/bin" "$d/cni/conf" "$d/img" "$d/run" "$d/var-lib" "$d/var-log"
  echo salus-node > "$d/node-name"
  # The kubelet refuses a loopback node IP: the node's is this machine's own
  # address (that of its default route), which the API server reaches the
  # kubelet at, and the kubelet the DaemonSet's probes (hostNetwork); the
  # traffic never leaves the machine.
  node_ip=$(ip -4 -o route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") print $(i + 1); exit}' \
    | xargs -r -I{} ip -4 -o addr show dev {} | awk '{split($4, a, "/"); print a[1]; exit}')
  [ -n "$node_ip" ] || { say "no IPv4 address on the default route's interface: the kubelet needs a node IP that is not loopback"; return 1; }
  echo "$node_ip" > "$d/node-ip"
  # The chart's daemon listens on 127.0.0.1:7070, here in the host's network.
  [ -z "$(ss -Htln 'sport = :7070')" ] || { say "port 7070 is taken: the chart's daemon (hostNetwork in this stage) listens there"; return 1; }
  cp "$cache_root/containerd-$CONTAINERD_VERSION"/bin/* "$kbin/kubelet" "$d/bin/"
  # Each tunable, as a file holding the value the kubelet wants.
  for kv in $tunables; do echo "${kv#*=}" > "$d/sysctl/${kv%%=*}"; done
  cp "$root/k8s/realtest/cni-private.sh" "$d/cni/bin/salus-private"
  cp "$root/k8s/realtest/cni-private.sh" "$d/cni/bin/loopback"
  chmod 755 "$d/cni/bin"/*
  echo '{"cniVersion":"1.0.0","name":"salus-private","plugins":[{"type":"salus-private"}]}' > "$d/cni/conf/10-salus-private.conflist"

  # The images (no registry): the tree's static binaries and Debian's files,
  # named as deploy/e2e's values and pods name them.
  say "kubelet stage: making the images"
  local img=$d/img mk=(python3 "$root/k8s/realtest/mkimage.py")
  (cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$img/salus" ./cmd/salus)
  (cd "$root/k8s" && CGO_ENABLED=0 go build -trimpath ${overlay:+-overlay "$overlay"} -o "$img/salus-dra-driver" ./cmd/salus-dra-driver)
  mkdir -p "$img/busybox/bin"; cp /bin/busybox "$img/busybox/bin/"
  ln -sf busybox "$img/busybox/bin/sh"; ln -sf busybox "$img/busybox/bin/chown"
  "${mk[@]}" --name docker.io/library/pause:salus-test --out "$d/images/pause.tar" \
    --entrypoint /bin/busybox --entrypoint sleep --entrypoint 2147483647 /bin/busybox=/bin/busybox
  "${mk[@]}" --name docker.io/library/busybox:1.37 --out "$d/images/busybox.tar" --entrypoint /bin/sh "$img/busybox/bin=/bin"
  "${mk[@]}" --name docker.io/library/salus:e2e --out "$d/images/salus.tar" --entrypoint /usr/local/bin/salus --dir /tmp \
    --user 65532:65532 "$img/salus=/usr/local/bin/salus" "$img/salus-dra-driver=/usr/local/bin/salus-dra-driver"
  local libs=() so
  for so in /usr/lib/python3.11/lib-dynload/*.so; do libs+=(--libs-of "$so"); done
  "${mk[@]}" --name docker.io/library/salus-e2e-client:e2e --out "$d/images/client.tar" --user 65532:65532 \
    --entrypoint python --entrypoint /opt/salus/train.py --env PYTHONPATH=/opt/salus --env PYTHONDONTWRITEBYTECODE=1 \
    --libs-of /usr/bin/python3.11 "${libs[@]}" /usr/bin/python3.11=/usr/bin/python3.11 /usr/bin/python3.11=/usr/bin/python \
    /usr/lib/python3.11=/usr/lib/python3.11 "$root/client/python/salus_client=/opt/salus/salus_client" \
    "$root/deploy/e2e/train.py=/opt/salus/train.py"

  # The node's credentials, its containerd and its kubelet.
  cat > "$d/kubelet.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: real, cluster: {server: "https://127.0.0.1:$api", certificate-authority: "$pki/ca.crt"}}]
users: [{name: node, user: {client-certificate: "$pki/node.crt", client-key: "$pki/node.key"}}]
contexts: [{name: real, context: {cluster: real, user: node}}]
current-context: real
KUBECONFIG
  cat > "$d/containerd.toml" <<CONTAINERD
version = 4
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "docker.io/library/pause:salus-test"
[plugins.'io.containerd.cri.v1.runtime']
  cdi_spec_dirs = ["/var/run/cdi"]
  # No container's oom_score_adj below containerd's own: lowering it needs
  # CAP_SYS_RESOURCE, which a test machine that is itself a container may
  # lack (runc then fails: "failed to update /proc/self/oom_score_adj").
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$d/cni/bin"]
    conf_dir = "$d/cni/conf"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "$(command -v runc)"
      SystemdCgroup = false
CONTAINERD
  kport=$(free_port); hport=$(free_port)
  # A cgroup of its own under each v1 hierarchy (this machine's), removed on exit.
  cgroup_root=salus-real-$$
  for c in /sys/fs/cgroup/*/; do
    [ -f "${c}cgroup.procs" ] && [ "$c" != /sys/fs/cgroup/unified/ ] && mkdir -p "$c$cgroup_root"
  done
  cat > "$d/kubelet.yaml" <<KUBELET
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# Checked, never written: node.sh bind-mounts each tunable as a file.
protectKernelDefaults: true
# This machine's cgroups are v1 (hybrid), which the kubelet refuses by default
# from 1.35 on.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$cgroup_root
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
address: $node_ip
port: $kport
healthzBindAddress: 127.0.0.1
healthzPort: $hport
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization: {mode: Webhook}
failSwapOn: false
volumePluginDir: $d/volume-plugins
evictionHard: {memory.available: 100Mi, nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
maxPods: 30
KUBELET
  readlink /proc/self/ns/mnt > "$d/host-mnt-ns"
  unshare --mount --propagation private -- bash -c 'readlink /proc/self/ns/mnt > "$1/mnt-ns"; exec bash "$2" "$1" "$3"' \
    node "$d" "$root/k8s/realtest/node.sh" "$(cat "$d/host-mnt-ns")" > "$d/node.log" 2>&1 &
  node_pid=$!
  pids+=("$node_pid")
  for _ in $(seq 400); do
    grep -q 'kubelet started' "$d/node.log" 2>/dev/null && break
    kill -0 "$node_pid" 2>/dev/null || { say "the node exited:"; cat "$d/node.log"; return 1; }
    sleep 0.5
  done
  grep -q 'kubelet started' "$d/node.log" || { say "the node did not start its kubelet:"; cat "$d/node.log"; return 1; }
  cat "$d/node.log"
}

# run_kubelet_stage NAME [OVERLAY]: a cluster in $tmp/NAME with the node
# (its driver built with go build -overlay OVERLAY when given), and
# TestKubelet; its output in $tmp/NAME/test.log; returns the test's status.
run_kubelet_stage() {
  local name=$1 overlay=${2:-} rc=0 t0
  t0=$(date +%s)
  cluster "$name" "" kubelet || return 1
  kubelet_node "$overlay" || return 1
  rm -rf "$tmp/sweeps"; mkdir -p "$tmp/sweeps"; chown 65532:65532 "$tmp/sweeps"
  (cd "$root/k8s/realtest" && env SALUS_REAL_KUBECONFIG="$kubeconfig" SALUS_REAL_KUBELET_NODE=salus-node \
    SALUS_REAL_NODE_DIR="$node_dir" SALUS_REAL_SALUS="$node_dir/img/salus" SALUS_REAL_SWEEP_DIR="$tmp/sweeps" \
    SALUS_REAL_DRIVER_PORT="$(free_port)" "$tmp/bin/realtest.test" -test.run '^TestKubelet$' -test.v -test.count 1 -test.timeout 30m) \
    > "$dir/test.log" 2>&1 || rc=$?
  # Stop the node (it kills its containers) and the cluster, leaving etcd.
  stop_all "$etcd_pid"
  tail -2 "$node_dir/node.log"
  node_cleanup
  say "$name: TestKubelet exited $rc in $(( $(date +%s) - t0 ))s"
  return $rc
}

if [ "$kubelet_stage" != only ]; then
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

fi

if [ "$kubelet_stage" != 0 ]; then
  say "the kubelet stage: TestKubelet (the chart's pod, training pods under their claims, unprepare, a sweep's Indexed Job)"
  if ! run_kubelet_stage kubelet; then
    cat "$tmp/kubelet/test.log"; say "the node's logs are in $tmp/node (SALUS_REAL_KEEP=1 keeps them)"; exit 1
  fi
  grep -E '^(=== RUN|--- |    kubelet_test.go)' "$tmp/kubelet/test.log" | grep -v '=== RUN' || true
  if [ "${SALUS_REAL_NEGATIVE:-1}" != 0 ]; then
    # The driver reserves its claims without their intent (declared time and
    # priority): salus get claims must show it, whatever the client sends.
    mkdir -p "$tmp/mut/drop-intent"
    perl -0pe 's/DeclaredS: intent\.DeclaredS, Priority: intent\.Priority/DeclaredS: 0, Priority: nil/' "$root/k8s/driver/daemon.go" > "$tmp/mut/drop-intent/daemon.go"
    cmp -s "$root/k8s/driver/daemon.go" "$tmp/mut/drop-intent/daemon.go" && { say "the intent mutation changed nothing in driver/daemon.go: update it"; exit 1; }
    printf '{"Replace":{"%s":"%s"}}\n' "$root/k8s/driver/daemon.go" "$tmp/mut/drop-intent/daemon.go" > "$tmp/mut/drop-intent/overlay.json"
    if run_kubelet_stage kubelet-drop-intent "$tmp/mut/drop-intent/overlay.json"; then
      say "NEGATIVE CHECK kubelet-drop-intent PASSED: TestKubelet did not notice claims reserved without their intent"; exit 1
    fi
    want="salus get claims: claim of train-0 is"
    grep -qF -- "$want" "$tmp/kubelet-drop-intent/test.log" || {
      cat "$tmp/kubelet-drop-intent/test.log"; say "NEGATIVE CHECK kubelet-drop-intent failed, but without saying \"$want\""; exit 1; }
    say "negative check kubelet-drop-intent: failed as it must ($want)"
  fi
else
  say "kubelet stage skipped: SALUS_REAL_KUBELET=1 runs it (root; docs/kubernetes.md)"
fi

stop_all
if declare -F node_cleanup >/dev/null; then node_cleanup; fi
tunables_unchanged || exit 1
tunables_checked=1
say "all passed in $(( $(date +%s) - start_s ))s"
