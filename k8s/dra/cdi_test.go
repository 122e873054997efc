package dra

import (
	"encoding/json"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"
)

// keys are the field names of a JSON object, sorted.
func keys(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not a JSON object", v)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestCDISpec(t *testing.T) {
	gpu := GPU{Index: 3, Model: "NVIDIA L4", MemoryMiB: 23034, DriverVersion: "550.54.15"}
	cfg := ClaimConfig{DeclaredS: 90.5, PersistentMiB: 1500, EphemeralMiB: 4000}
	const uid = "6f1d2c3a-8e4b-4b1e-9a7c-0123456789ab"
	const secret = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2"
	raw, err := CDISpec(uid, secret, gpu, "/run/salus/salus.sock", "/var/lib/salus/token", cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The fields are named as the CDI spec names them, and only those.
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, doc); !slices.Equal(got, []string{"cdiVersion", "devices", "kind"}) {
		t.Errorf("spec fields %v", got)
	}
	if doc["cdiVersion"] != "0.6.0" || doc["kind"] != "gpu.salus.dev/claim" {
		t.Errorf("cdiVersion %v, kind %v", doc["cdiVersion"], doc["kind"])
	}
	devices := doc["devices"].([]any)
	if len(devices) != 1 {
		t.Fatalf("%d devices, want 1", len(devices))
	}
	if got := keys(t, devices[0]); !slices.Equal(got, []string{"containerEdits", "name"}) {
		t.Errorf("device fields %v", got)
	}
	dev := devices[0].(map[string]any)
	if name, _ := dev["name"].(string); name != uid || !cdiName.MatchString(name) {
		t.Errorf("device name %q: want the claim UID, a valid CDI name", name)
	}
	edits := dev["containerEdits"]
	if got := keys(t, edits); !slices.Equal(got, []string{"env", "mounts"}) {
		t.Errorf("containerEdits fields %v", got)
	}
	mounts := edits.(map[string]any)["mounts"].([]any)
	if len(mounts) != 2 {
		t.Fatalf("%d mounts, want 2 (socket, token)", len(mounts))
	}
	for _, m := range mounts {
		if got := keys(t, m); !slices.Equal(got, []string{"containerPath", "hostPath", "options"}) {
			t.Errorf("mount fields %v", got)
		}
		mm := m.(map[string]any)
		for _, p := range []string{"hostPath", "containerPath"} {
			if s, _ := mm[p].(string); !path.IsAbs(s) {
				t.Errorf("mount %s %q is not absolute", p, s)
			}
		}
		if opts, _ := mm["options"].([]any); !slices.Contains(opts, any("ro")) {
			t.Errorf("mount %v is not read-only", mm)
		}
	}
	var env []string
	for _, e := range edits.(map[string]any)["env"].([]any) {
		env = append(env, e.(string))
	}
	want := []string{
		"SALUS_ADDR=" + ContainerSocket,
		"SALUS_TOKEN_FILE=" + ContainerToken,
		"SALUS_GPU=3",
		"SALUS_CLAIM=" + uid,
		"SALUS_CLAIM_SECRET=" + secret,
		"SALUS_DECLARED_S=90.5",
		"SALUS_PERSISTENT_MIB=1500",
		"SALUS_EPHEMERAL_MIB=4000",
		"CUDA_DEVICE_ORDER=PCI_BUS_ID",
		"CUDA_VISIBLE_DEVICES=3",
	}
	if !slices.Equal(env, want) {
		t.Errorf("env\n%q\nwant\n%q", env, want)
	}
	// The same arguments give the same bytes.
	if again, _ := CDISpec(uid, secret, gpu, "/run/salus/salus.sock", "/var/lib/salus/token", cfg); string(again) != string(raw) {
		t.Error("CDISpec is not deterministic")
	}
}

// Numbers not given leave their variables out.
func TestCDISpecBare(t *testing.T) {
	raw, err := CDISpec("claim-1", testSecret, GPU{Index: 0, MemoryMiB: 1024}, "/s", "/t", ClaimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"SALUS_DECLARED_S", "SALUS_PERSISTENT_MIB", "SALUS_EPHEMERAL_MIB", "SALUS_PRIORITY", "SALUS_GPUS"} {
		if strings.Contains(string(raw), v) {
			t.Errorf("%s set though not given", v)
		}
	}
}

const testSecret = "0123456789abcdef0123456789abcdef"

func TestCDISpecRefuses(t *testing.T) {
	gpu := GPU{Index: 0, Model: "T4", MemoryMiB: 15360}
	for _, c := range []struct {
		name, uid, socket, token string
		gpu                      GPU
		cfg                      ClaimConfig
		want                     string
	}{
		{"uid with a slash", "a/b", "/s", "/t", gpu, ClaimConfig{}, "not a CDI device name"},
		{"uid starting with a dash", "-abc", "/s", "/t", gpu, ClaimConfig{}, "not a CDI device name"},
		{"empty uid", "", "/s", "/t", gpu, ClaimConfig{}, "not a CDI device name"},
		{"relative socket", "u", "salus.sock", "/t", gpu, ClaimConfig{}, "socket"},
		{"relative token", "u", "/s", "token", gpu, ClaimConfig{}, "token file"},
		{"negative index", "u", "/s", "/t", GPU{Index: -1, MemoryMiB: 1}, ClaimConfig{}, "GPU index -1"},
		{"bad config", "u", "/s", "/t", gpu, ClaimConfig{DeclaredS: -1}, "declaredS"},
		{"too big", "u", "/s", "/t", gpu, ClaimConfig{PersistentMiB: 15000, EphemeralMiB: 1000}, "16000 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := CDISpec(c.uid, testSecret, c.gpu, c.socket, c.token, c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// The claim's secret goes into an environment variable: none, a short one
	// or one with a newline is refused.
	for _, secret := range []string{"", "short", testSecret + "\n", testSecret[:31] + " "} {
		if _, err := CDISpec("u", secret, gpu, "/s", "/t", ClaimConfig{}); err == nil || !strings.Contains(err.Error(), "its secret must be") {
			t.Errorf("secret %q: %v, want a refusal", secret, err)
		}
	}
}
