package main

import (
	"os"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// The DaemonSet's salus serve arguments are flags salus serve has, with values
// its flag parser takes.
func TestDaemonSetArgumentsParse(t *testing.T) {
	data, err := os.ReadFile("../../deploy/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(data, &ds); err != nil {
		t.Fatal(err)
	}
	args := ds.Spec.Template.Spec.Containers[0].Args
	if len(args) < 2 || args[0] != "serve" {
		t.Fatalf("the container runs %v, want salus serve", args)
	}
	serve, _, err := newRoot().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.ParseFlags(args[1:]); err != nil {
		t.Errorf("salus serve %v: %v", args[1:], err)
	}
}
