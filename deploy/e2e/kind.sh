#!/usr/bin/env bash
# End-to-end test of salus on Kubernetes, on a throwaway kind cluster: the
# image, the Helm chart (the node daemon emulating two P100s, and the DRA
# driver), a claim that trains and one that must never run. For machines with
# Docker, kind, kubectl and helm; not run in CI. From the repository root:
#
#   deploy/e2e/kind.sh
#
# It checks, in order, and stops at the first failure (printing the cluster's
# pods, events, slices and the daemon's and driver's logs):
#   1. the image builds with deploy/Dockerfile (and the test's Python client
#      image with deploy/e2e/Dockerfile);
#   2. a kind cluster (a control plane and a worker) runs Kubernetes 1.36 or
#      newer, where DRA's consumable capacity is on by default (the chart's
#      kubeVersion);
#   3. the chart installs with deploy/e2e/values-kind.yaml and its DaemonSet
#      becomes ready (the daemon answers salus get stats);
#   4. the driver publishes a ResourceSlice of driver gpu.salus.dev with the
#      devices gpu-0 and gpu-1 for the worker node;
#   5. a pod with the example's 6 GiB claim runs a training loop with the
#      Python client (deploy/e2e/train.py: 50 emulated resnet50 iterations)
#      through the socket the claim mounts, sending the claim's UID, and
#      succeeds;
#   6. the daemon saw its session: its log names the job, and its journal on
#      the node (/var/lib/salus/journal.jsonl) has the job's finish event;
#   7. a pod whose claim asks for 200 GiB (more than any GPU) gets a
#      FailedScheduling (the scheduler cannot allocate the claim) or
#      FailedPrepareDynamicResources (the driver refuses it) event about its
#      claim, and never runs.
# The cluster is deleted at the end, whatever happened (KEEP=1 keeps it).
#
# Environment:
#   CLUSTER          the kind cluster's name (salus-e2e)
#   KIND_NODE_IMAGE  the node image, e.g. kindest/node:v1.36.0 (default: kind's)
#   FEATURE_GATES    feature gates to turn on in every component, comma-separated
#                    (DRAConsumableCapacity: shared devices with consumable
#                    capacity, alpha in 1.34, beta from 1.36; empty on versions
#                    where the gate is gone)
#   TIMEOUT          seconds each wait may take (180)
#   KEEP             1: keep the cluster at the end
set -euo pipefail

CLUSTER=${CLUSTER:-salus-e2e}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-}
FEATURE_GATES=${FEATURE_GATES-DRAConsumableCapacity}
TIMEOUT=${TIMEOUT:-180}
KEEP=${KEEP:-0}

IMAGE=salus:e2e        # deploy/e2e/values-kind.yaml's image
CLIENT_IMAGE=salus-e2e-client:e2e # deploy/e2e/claims.yaml's pods
HOST_IMAGE=busybox:1.37 # the chart's hostSetup.image
NS=salus-system
E2E_NS=salus-e2e
DRIVER=gpu.salus.dev

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

log() { printf '==> %s\n' "$*" >&2; }
fail() {
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}
k() { kubectl --context "kind-$CLUSTER" "$@"; }

for tool in docker kind kubectl helm; do
	command -v "$tool" >/dev/null || fail "$tool is not installed: this script needs docker, kind, kubectl and helm"
done

workdir=$(mktemp -d)
created=0

diagnose() {
	log "diagnostics"
	k get pods -A -o wide || true
	k get resourceslices -o yaml || true
	k get resourceclaims -n "$E2E_NS" -o yaml || true
	k describe pods -n "$E2E_NS" || true
	k get events -A --sort-by=.lastTimestamp | tail -n 40 || true
	for c in serve dra-driver; do
		log "logs of $c"
		k logs -n "$NS" -l app.kubernetes.io/name=salus -c "$c" --tail=100 || true
	done
}

cleanup() {
	local rc=$?
	if ((rc != 0 && created)); then diagnose; fi
	if ((created)); then
		if [[ $KEEP == 1 ]]; then
			log "keeping cluster $CLUSTER (delete it with: kind delete cluster --name $CLUSTER)"
		else
			log "deleting cluster $CLUSTER"
			kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
		fi
	fi
	rm -rf "$workdir"
	exit "$rc"
}
trap cleanup EXIT

# wait_for SECONDS WHAT COMMAND...: runs COMMAND every 2 seconds until it
# succeeds; fails naming WHAT after SECONDS.
wait_for() {
	local seconds=$1 what=$2
	shift 2
	local deadline=$((SECONDS + seconds))
	until "$@"; do
		((SECONDS < deadline)) || fail "no $what within ${seconds}s"
		sleep 2
	done
}

# 1. The image.
log "building $IMAGE with deploy/Dockerfile"
docker build -f deploy/Dockerfile -t "$IMAGE" .
log "building $CLIENT_IMAGE with deploy/e2e/Dockerfile"
docker build -f deploy/e2e/Dockerfile -t "$CLIENT_IMAGE" .
docker pull --quiet "$HOST_IMAGE" >/dev/null

# 2. The cluster.
log "creating kind cluster $CLUSTER"
{
	echo "kind: Cluster"
	echo "apiVersion: kind.x-k8s.io/v1alpha4"
	if [[ -n $FEATURE_GATES ]]; then
		echo "featureGates:"
		IFS=, read -ra gates <<<"$FEATURE_GATES"
		for g in "${gates[@]}"; do echo "  $g: true"; done
	fi
	echo "nodes:"
	echo "  - role: control-plane"
	echo "  - role: worker"
} >"$workdir/kind.yaml"
image_args=()
if [[ -n $KIND_NODE_IMAGE ]]; then image_args=(--image "$KIND_NODE_IMAGE"); fi
created=1
kind create cluster --name "$CLUSTER" --config "$workdir/kind.yaml" "${image_args[@]}" --wait 120s

version=$(k get nodes -o jsonpath='{.items[0].status.nodeInfo.kubeletVersion}')
minor=${version#v1.}
minor=${minor%%.*}
[[ $version == v1.* && $minor =~ ^[0-9]+$ ]] || fail "cannot read the Kubernetes version from $version"
((minor >= 36)) || fail "Kubernetes $version: the chart needs 1.36 or newer (DRA's consumable capacity on by default): set KIND_NODE_IMAGE"
log "Kubernetes $version"
kind load docker-image "$IMAGE" "$CLIENT_IMAGE" "$HOST_IMAGE" --name "$CLUSTER"

# 3. The chart.
log "installing the chart (daemon emulating GPUs, DRA driver)"
# hostPath volumes and DAC_READ_SEARCH: the privileged Pod Security level.
k create namespace "$NS"
k label namespace "$NS" pod-security.kubernetes.io/enforce=privileged
helm --kube-context "kind-$CLUSTER" install salus deploy/chart/salus \
	--namespace "$NS" \
	-f deploy/e2e/values-kind.yaml --wait --timeout "${TIMEOUT}s"
k exec -n "$NS" ds/salus-node -c serve -- \
	/usr/local/bin/salus get stats --admin-token-file=/var/run/salus-admin/admin-token

# 4. The ResourceSlice.
worker="$CLUSTER-worker"
slice_devices() {
	k get resourceslices -o jsonpath='{range .items[?(@.spec.driver=="'"$DRIVER"'")]}{.spec.nodeName}{":"}{range .spec.devices[*]}{.name}{","}{end}{"\n"}{end}'
}
# (grep reads all its input here: with pipefail, grep -q could end the
# pipeline's writer early and fail it.)
has_slice() { slice_devices | grep -x "$worker:gpu-0,gpu-1," >/dev/null; }
log "waiting for the ResourceSlice of $worker"
wait_for "$TIMEOUT" "ResourceSlice of $DRIVER with gpu-0 and gpu-1 on $worker" has_slice
slice_devices

# 5. A claim that trains.
log "running the training pod with the example's claim"
k create namespace "$E2E_NS"
k apply -n "$E2E_NS" -l salus-e2e/step=train -f deploy/e2e/claims.yaml
phase() { k get pod -n "$E2E_NS" "$1" -o jsonpath='{.status.phase}'; }
train_done() {
	local p
	p=$(phase e2e-train)
	[[ $p == Failed ]] && fail "pod e2e-train failed: $(k logs -n "$E2E_NS" e2e-train 2>&1 | tail -n 20)"
	[[ $p == Succeeded ]]
}
wait_for "$TIMEOUT" "success of pod e2e-train" train_done
train_log=$(k logs -n "$E2E_NS" e2e-train)
tail -n 5 <<<"$train_log"
claim_name=$(k get pod -n "$E2E_NS" e2e-train -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}')
[[ -n $claim_name ]] || fail "pod e2e-train has no generated ResourceClaim"
k get resourceclaim -n "$E2E_NS" "$claim_name"
claim=$(k get resourceclaim -n "$E2E_NS" "$claim_name" -o jsonpath='{.metadata.uid}')
grep -q "claim $claim (secret set)," <<<"$train_log" ||
	fail "the training pod did not get its claim's UID ($claim) in SALUS_CLAIM and its secret in SALUS_CLAIM_SECRET"

# 6. The daemon saw the session.
node=$(k get pod -n "$E2E_NS" e2e-train -o jsonpath='{.spec.nodeName}')
daemon=$(k get pods -n "$NS" -l app.kubernetes.io/name=salus --field-selector "spec.nodeName=$node" -o name)
[[ -n $daemon ]] || fail "no daemon pod on node $node"
serve_log=$(k logs -n "$NS" "$daemon" -c serve)
grep 'claim reserved' <<<"$serve_log" | grep "claim=$claim" >/dev/null ||
	fail "the daemon's log on $node has no 'claim reserved' of claim $claim (the driver's prepare)"
grep 'session finished' <<<"$serve_log" | grep 'job=e2e-train' >/dev/null ||
	fail "the daemon's log on $node has no 'session finished' of job e2e-train"
journal=$(docker exec "$node" cat /var/lib/salus/journal.jsonl)
grep '"job":"e2e-train"' <<<"$journal" | grep '"ev":"finish"' >/dev/null ||
	fail "the daemon's journal on $node has no finish event of e2e-train"
log "the daemon on $node logged the session and journaled its finish"

# 7. A claim larger than any GPU.
log "applying a claim larger than any GPU"
k apply -n "$E2E_NS" -l salus-e2e/step=too-large -f deploy/e2e/claims.yaml
refusals() {
	k get events -n "$E2E_NS" --field-selector involvedObject.name=e2e-too-large \
		-o jsonpath='{range .items[*]}{.reason}{": "}{.message}{"\n"}{end}' |
		grep -E '^(FailedScheduling|FailedPrepareDynamicResources): .*claim'
}
refused() { refusals >/dev/null; }
wait_for "$TIMEOUT" "event refusing pod e2e-too-large's claim" refused
refusals | tail -n 1
p=$(phase e2e-too-large)
[[ $p == Pending || $p == Failed ]] || fail "pod e2e-too-large is $p: its claim is larger than any GPU and must not run"
[[ -z $(k get pod -n "$E2E_NS" e2e-too-large -o jsonpath='{.status.containerStatuses[*].state.running}') ]] ||
	fail "pod e2e-too-large's container runs"
log "pod e2e-too-large is $p, refused"

# Clean up (the cluster goes in the exit trap).
k delete namespace "$E2E_NS" --wait=false
helm --kube-context "kind-$CLUSTER" uninstall salus --namespace "$NS"
log "kind end-to-end: PASS"
