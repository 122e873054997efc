package chart

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/utils/ptr"

	"github.com/salusgo/salus/k8s/dra"
)

// claimValidator compiles the chart's claim policy as the API server's
// ValidatingAdmissionPolicy plugin does (k8s.io/apiserver v0.37.2,
// validating.compilePolicy: its variables, then its validations and their
// messages, in the base CEL environment of this version), rendered with values.
func claimValidator(t *testing.T, values map[string]any) (*admissionv1.ValidatingAdmissionPolicy, validating.Validator) {
	t.Helper()
	vap, _ := policy(t, rendered(t, variant{"claim policy", values, variants(t)[0].kinds}), Release+"-claims")
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	vars := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	var named []plugincel.NamedExpressionAccessor
	for _, v := range vap.Spec.Variables {
		named = append(named, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(named, vars, environment.StoredExpressions)
	var conds []plugincel.ExpressionAccessor
	for _, v := range vap.Spec.Validations {
		conds = append(conds, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
	}
	validations := compiler.CompileCondition(conds, vars, environment.StoredExpressions)
	for _, err := range validations.CompilationErrors() {
		t.Fatalf("the claim policy does not compile: %v", err)
	}
	messages := compiler.CompileCondition(make([]plugincel.ExpressionAccessor, len(conds)), plugincel.OptionalVariableDeclarations{}, environment.StoredExpressions)
	audit := compiler.CompileCondition(nil, vars, environment.StoredExpressions) // the policy has no audit annotations
	return vap, validating.NewValidator(validations, nil, audit, messages, vap.Spec.FailurePolicy, nil)
}

// admit evaluates the policy on the creation of obj (a ResourceClaim or a
// ResourceClaimTemplate): "" when admitted, else the messages of its refusals.
func admit(t *testing.T, v validating.Validator, obj runtime.Object) string {
	t.Helper()
	gvk := obj.GetObjectKind().GroupVersionKind()
	gvr := resourcev1.SchemeGroupVersion.WithResource(strings.ToLower(gvk.Kind) + "s")
	attr := admission.NewAttributesRecord(obj, nil, gvk, "team-a", "c", gvr, "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	res := v.Validate(context.Background(), gvr, &admission.VersionedAttributes{Attributes: attr, VersionedObject: admission.NewLazyObject(obj), VersionedKind: gvk}, nil, nil, celconfig.RuntimeCELCostBudget, nil)
	var refused []string
	for _, d := range res.Decisions {
		switch {
		case d.Evaluation == validating.EvalError:
			t.Fatalf("the claim policy fails to evaluate on %s: %s", gvk.Kind, d.Message)
		case d.Action == validating.ActionDeny:
			refused = append(refused, d.Message)
		}
	}
	return strings.Join(refused, "; ")
}

// claimOf is a ResourceClaim of these requests and opaque configurations of the
// salus driver (JSON).
func claimOf(requests []resourcev1.DeviceRequest, configs ...string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "team-a"},
		Spec:       resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: requests}},
	}
	for _, raw := range configs {
		c.Spec.Devices.Config = append(c.Spec.Devices.Config, resourcev1.DeviceClaimConfiguration{
			DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{
				Driver: dra.DriverName, Parameters: runtime.RawExtension{Raw: []byte(raw)}}}})
	}
	return c
}

// gpu is a request of n salus devices, as the API server defaults it
// (allocationMode ExactCount).
func gpu(name string, n int64) resourcev1.DeviceRequest {
	return resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{
		DeviceClassName: dra.DriverName, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: n}}
}

// The chart's claim policy, compiled and evaluated as the API server does,
// admits the claims of deploy/ (the example's and the kind test's) and one GPU
// per claim, and refuses, with a message saying what to change, a claim of
// several salus GPUs, an admin-access request without a capacity request, and
// a driver configuration that the driver's own parser (dra.ParseClaimConfig)
// refuses, or of a gang.
func TestClaimPolicy(t *testing.T) {
	vap, v := claimValidator(t, nil)
	if vap.Spec.FailurePolicy == nil || *vap.Spec.FailurePolicy != admissionv1.Fail {
		t.Errorf("the claim policy's failurePolicy is %v, want Fail", vap.Spec.FailurePolicy)
	}
	rules := vap.Spec.MatchConstraints.ResourceRules
	if len(rules) != 1 || strings.Join(rules[0].Resources, ",") != "resourceclaims,resourceclaimtemplates" {
		t.Errorf("the claim policy matches %+v, want resourceclaims and resourceclaimtemplates", rules)
	}

	// deploy/'s templates are admitted.
	for _, file := range []string{deployDir + "/dra-example.yaml", deployDir + "/e2e/claims.yaml"} {
		n := 0
		for _, o := range readManifests(t, file) {
			if tpl, ok := o.(*resourcev1.ResourceClaimTemplate); ok {
				n++
				if msg := admit(t, v, tpl); msg != "" {
					t.Errorf("%s: template %s refused: %s", file, tpl.Name, msg)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no ResourceClaimTemplate", file)
		}
	}

	admin := gpu("monitor", 1)
	admin.Exactly.AdminAccess = ptr.To(true)
	adminMiB := gpu("monitor", 1)
	adminMiB.Exactly.AdminAccess = ptr.To(true)
	adminMiB.Exactly.Capacity = &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{dra.CapMemory: resource.MustParse("1Mi")}}
	all := gpu("gpu", 0)
	all.Exactly.AllocationMode, all.Exactly.Count = resourcev1.DeviceAllocationModeAll, 0
	other := gpu("nic", 4)
	other.Exactly.DeviceClassName = "nic.example.com"
	first := func(n int64) resourcev1.DeviceRequest {
		return resourcev1.DeviceRequest{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{
			{Name: "big", DeviceClassName: "gpu.example.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 8},
			{Name: "salus", DeviceClassName: dra.DriverName, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: n}}}
	}
	for _, c := range []struct {
		name     string
		requests []resourcev1.DeviceRequest
		want     string // "" admitted, else in the message
	}{
		{"one GPU", []resourcev1.DeviceRequest{gpu("gpu", 1)}, ""},
		{"one GPU and other devices", []resourcev1.DeviceRequest{gpu("gpu", 1), other}, ""},
		{"a first-available salus GPU", []resourcev1.DeviceRequest{first(1)}, ""},
		{"admin access asking for 1Mi", []resourcev1.DeviceRequest{adminMiB}, ""},
		{"two GPUs in one request", []resourcev1.DeviceRequest{gpu("gpu", 2)}, "must ask for one device"},
		{"every GPU", []resourcev1.DeviceRequest{all}, "must ask for one device"},
		{"two requests of the class", []resourcev1.DeviceRequest{gpu("a", 1), gpu("b", 1)}, "one request of DeviceClass gpu.salus.dev"},
		{"a first-available of three salus GPUs", []resourcev1.DeviceRequest{first(3)}, "must ask for one device"},
		{"admin access with no capacity request", []resourcev1.DeviceRequest{admin}, "with adminAccess must ask for capacity gpu.salus.dev/memory"},
	} {
		got := admit(t, v, claimOf(c.requests))
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q, want %q", c.name, got, c.want)
		}
	}

	// The opaque configuration: refused exactly when the driver's parser
	// refuses it, and for a gang (gpus above 1, which no claim can run yet).
	for _, c := range []struct{ config, want string }{
		{`{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig"}`, ""},
		{`{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","declaredS":600,"priority":-3,"persistentMiB":2000,"ephemeralMiB":3000.5,"gpus":1}`, ""},
		{`{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","gpus":0}`, ""},
		{`{"apiVersion":"gpu.salus.dev/v1","kind":"ClaimConfig"}`, "apiVersion gpu.salus.dev/v1alpha1 and kind ClaimConfig"},
		{`{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"Config"}`, "apiVersion gpu.salus.dev/v1alpha1 and kind ClaimConfig"},
		{`{"kind":"ClaimConfig"}`, "apiVersion gpu.salus.dev/v1alpha1 and kind ClaimConfig"},
		{`{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","persistentMib":2000}`, "a field it does not know"},
		{`{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","persistentMiB":-1}`, "not below 0"},
		{`{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","declaredS":"600"}`, "not below 0"},
		{`{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","priority":1.5}`, "priority must be a whole number"},
		{`{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","priority":3000000000}`, "priority must be a whole number"},
		{`{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","gpus":-1}`, "gpus must be 0 or 1"},
		{`{"apiVersion":"gpu.salus.dev/v1alpha1","kind":"ClaimConfig","gpus":2}`, "gpus must be 0 or 1"},
	} {
		got := admit(t, v, claimOf([]resourcev1.DeviceRequest{gpu("gpu", 1)}, c.config))
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("config %s: refusal %q, want %q", c.config, got, c.want)
		}
		cfg, err := dra.ParseClaimConfig([]byte(c.config))
		if parserRefuses := err != nil || cfg.GPUs > 1; parserRefuses != (got != "") {
			t.Errorf("config %s: the policy refuses: %v, the driver's parser refuses: %v (%v)", c.config, got != "", parserRefuses, err)
		}
	}
	// Another driver's configuration is not this policy's business.
	c := claimOf([]resourcev1.DeviceRequest{gpu("gpu", 1)})
	c.Spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{
		Driver: "nic.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"anything":true}`)}}}}}
	if got := admit(t, v, c); got != "" {
		t.Errorf("another driver's configuration refused: %s", got)
	}
}

// With wholeGPUFallback (no consumable capacity, whose API server drops
// capacity requests) an admin-access request needs none, and is admitted.
func TestClaimPolicyWholeGPUFallback(t *testing.T) {
	_, v := claimValidator(t, map[string]any{"wholeGPUFallback": true})
	admin := gpu("monitor", 1)
	admin.Exactly.AdminAccess = ptr.To(true)
	if got := admit(t, v, claimOf([]resourcev1.DeviceRequest{admin})); got != "" {
		t.Errorf("an admin-access request with the fallback: refused: %s", got)
	}
	if got := admit(t, v, claimOf([]resourcev1.DeviceRequest{gpu("gpu", 2)})); !strings.Contains(got, "must ask for one device") {
		t.Errorf("two GPUs with the fallback: refusal %q", got)
	}
}
