// Package realtest checks the chart, the driver and the claims against real
// Kubernetes components: kube-apiserver, kube-scheduler and
// kube-controller-manager v1.37.2 built from the Go module proxy, on etcd,
// started by scripts/test-k8s-real.sh on loopback, with fake Nodes and no
// kubelet (TestReal, TestConsumableCapacityOff), and with a real node: the
// kubelet v1.37.2 on containerd v2 in a private mount namespace (TestKubelet;
// docs/kubernetes-reference.md, "Against the real components" and "The
// kubelet stage").
//
// Its tests are skipped unless SALUS_REAL_KUBECONFIG names the cluster's admin
// kubeconfig (the script sets it and the rest of the environment they read):
// go test ./... compiles them and runs none.
package realtest
