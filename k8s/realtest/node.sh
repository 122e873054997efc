#!/usr/bin/env bash
# The node of the kubelet stage of scripts/test-k8s-real.sh: containerd and
# the kubelet, in a private mount namespace of their own, so that neither can
# change the host's kernel settings nor leave a mount behind. Run as
#
#   unshare --mount --propagation private -- bash k8s/realtest/node.sh DIR HOST_MNT_NS
#
# with DIR prepared by the script (bin/, containerd.toml, kubelet.yaml,
# kubelet.kubeconfig, node-name, node-ip, images/*.tar, sysctl/*) and HOST_MNT_NS the script's own
# mount namespace (readlink /proc/self/ns/mnt), which this refuses to run in.
#
# In the namespace:
#   - each kernel tunable the kubelet checks under protectKernelDefaults
#     (sysctl/NAME, NAME with dots for slashes: vm.overcommit_memory=1,
#     vm.panic_on_oom=0, kernel.panic=10, kernel.panic_on_oops=1,
#     kernel.keys.root_maxkeys, kernel.keys.root_maxbytes) is a regular file
#     holding the value it expects, bind-mounted over /proc/sys/NAME: the
#     kubelet reads its defaults there and never writes one; the host's stay
#     as they were (the script checks them before and after);
#   - DIR/run, DIR/var-lib and DIR/var-log are bind-mounted over /run,
#     /var/lib and /var/log: the chart's hostPath directories (/run/salus,
#     /var/lib/salus, /var/run/cdi), the kubelet's root and pod logs and
#     containerd's root and state are in DIR, which the host reads as files.
# Then containerd, the images imported, and the kubelet; on SIGTERM every
# container is killed and removed, then the kubelet and containerd stop.
set -euo pipefail
dir=$1 host_ns=$2
say() { echo "node: $*"; }

# Never in the host's mount namespace, never with a mount shared with it:
# everything mounted below must stay here.
if [ "$(readlink /proc/self/ns/mnt)" = "$host_ns" ]; then
  say "refusing to run in the host's mount namespace ($host_ns): run under unshare --mount --propagation private"; exit 1
fi
if findmnt -no PROPAGATION / | grep -qv private || findmnt -no PROPAGATION /proc | grep -qv private; then
  say "/ or /proc is not private in this namespace: a mount here could reach the host"; exit 1
fi

for f in "$dir"/sysctl/*; do
  name=$(basename "$f"); path=/proc/sys/${name//.//}
  [ -e "$path" ] || { say "$path does not exist on this kernel"; exit 1; }
  mount --bind "$f" "$path"
  [ "$(cat "$path")" = "$(cat "$f")" ] || { say "$path reads $(cat "$path") after the bind mount, not $(cat "$f")"; exit 1; }
  say "$name reads $(cat "$path") here (a file)"
done
for d in run var-lib var-log; do
  mkdir -p "$dir/$d"
  mount --bind "$dir/$d" "/${d//-//}"
done
mkdir -p /run/containerd /run/cdi /var/lib/kubelet /var/lib/containerd /var/log/pods /var/log/containers

pids=()
stop() {
  trap - TERM INT
  set +e
  say "stopping"
  if [ -n "${kubelet_pid:-}" ]; then kill -TERM "$kubelet_pid" 2>/dev/null; wait "$kubelet_pid" 2>/dev/null; fi
  # The pods' containers and sandboxes, then containerd (their shims exit
  # with their tasks). The cgroups the kubelet made go in the script.
  local ctr=("$dir/bin/ctr" --address /run/containerd/containerd.sock -n k8s.io) t
  for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks kill -s KILL "$t" >/dev/null 2>&1; done
  sleep 1
  for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks delete -f "$t" >/dev/null 2>&1; done
  for t in $("${ctr[@]}" containers ls -q 2>/dev/null); do "${ctr[@]}" containers delete "$t" >/dev/null 2>&1; done
  if [ -n "${containerd_pid:-}" ]; then kill -TERM "$containerd_pid" 2>/dev/null; wait "$containerd_pid" 2>/dev/null; fi
  say "stopped"
  exit 0
}
trap stop TERM INT

PATH=$dir/bin:$PATH "$dir/bin/containerd" --config "$dir/containerd.toml" > "$dir/containerd.log" 2>&1 &
containerd_pid=$!
for _ in $(seq 200); do
  "$dir/bin/ctr" --address /run/containerd/containerd.sock version >/dev/null 2>&1 && break
  kill -0 "$containerd_pid" 2>/dev/null || { say "containerd exited:"; tail -20 "$dir/containerd.log"; exit 1; }
  sleep 0.3
done
for img in "$dir"/images/*.tar; do
  "$dir/bin/ctr" --address /run/containerd/containerd.sock -n k8s.io images import --no-unpack=false "$img" >> "$dir/images.log" 2>&1 \
    || { say "ctr images import $img failed:"; tail -5 "$dir/images.log"; exit 1; }
done
say "containerd up, images: $("$dir/bin/ctr" --address /run/containerd/containerd.sock -n k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"

"$dir/bin/kubelet" --config "$dir/kubelet.yaml" --kubeconfig "$dir/kubelet.kubeconfig" \
  --hostname-override "$(cat "$dir/node-name")" --node-ip "$(cat "$dir/node-ip")" --v 2 > "$dir/kubelet.log" 2>&1 &
kubelet_pid=$!
echo "$kubelet_pid" > "$dir/kubelet.pid"
say "kubelet started ($kubelet_pid)"
# Until told to stop (the trap), or either exits.
while kill -0 "$kubelet_pid" 2>/dev/null && kill -0 "$containerd_pid" 2>/dev/null; do sleep 1 & wait $! || true; done
say "the kubelet or containerd exited:"; tail -20 "$dir/kubelet.log"; tail -5 "$dir/containerd.log"
stop
