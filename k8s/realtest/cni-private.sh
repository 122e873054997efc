#!/usr/bin/env bash
# A CNI plugin (spec 1.0.0) for the kubelet stage of scripts/test-k8s-real.sh:
# a pod's network namespace with no way out. It touches nothing outside the
# pod's namespace: no bridge, no host-side veth, no route, no iptables rule,
# no sysctl (the bridge and ptp plugins turn on the host's ip_forward, which
# the stage must not change). Inside it, lo is up and eth0 is one end of a
# veth pair whose other end stays in the pod's namespace, addressed in
# 127.88.0.0/16, so that containerd has the pod IP it asks for. The pods of the
# stage need no network: they reach the node daemon through its socket.
#
# Installed as "salus-private" (the network's plugin) and as "loopback" (which
# containerd runs for lo); CNI_IFNAME tells which.
set -euo pipefail
ver=1.0.0
case ${CNI_COMMAND:-} in
VERSION)
  echo "{\"cniVersion\":\"$ver\",\"supportedVersions\":[\"0.4.0\",\"1.0.0\"]}"; exit 0 ;;
DEL|CHECK|GC|STATUS)
  exit 0 ;;  # the namespace goes with the pod, and what is in it
ADD) ;;
*)
  echo "{\"cniVersion\":\"$ver\",\"code\":4,\"msg\":\"unknown CNI_COMMAND ${CNI_COMMAND:-}\"}"; exit 1 ;;
esac
in_ns() { nsenter --net="$CNI_NETNS" "$@"; }
if [ "$CNI_IFNAME" = lo ]; then
  in_ns ip link set lo up
  echo "{\"cniVersion\":\"$ver\",\"interfaces\":[{\"name\":\"lo\",\"sandbox\":\"$CNI_NETNS\"}],\"ips\":[{\"address\":\"127.0.0.1/8\",\"interface\":0}]}"
  exit 0
fi
# The next address, from a counter beside this script (one per node).
state=$(dirname "$(readlink -f "$0")")/../state
mkdir -p "$state"
n=$(
  flock 9
  n=$(( $(cat "$state/next" 2>/dev/null || echo 1) + 1 ))
  echo "$n" > "$state/next"
  echo "$n"
) 9>"$state/lock"
addr=127.88.$(( n / 250 % 250 )).$(( n % 250 + 2 ))
in_ns ip link add "$CNI_IFNAME" type veth peer name "${CNI_IFNAME}p" >&2
in_ns ip addr add "$addr/32" dev "$CNI_IFNAME" >&2
in_ns ip link set "${CNI_IFNAME}p" up >&2
in_ns ip link set "$CNI_IFNAME" up >&2
echo "{\"cniVersion\":\"$ver\",\"interfaces\":[{\"name\":\"$CNI_IFNAME\",\"sandbox\":\"$CNI_NETNS\"}],\"ips\":[{\"address\":\"$addr/32\",\"interface\":0}]}"
