package dra

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
)

// CDI (Container Device Interface) spec constants: the version written, and the
// kind (vendor/class) of the devices this driver writes, one per claim.
const (
	CDIVersion = "0.6.0"
	CDIKind    = DriverName + "/claim"
)

// Where the daemon's socket and token file appear inside the container.
const (
	ContainerSocket = "/run/salus/salus.sock"
	ContainerToken  = "/run/salus/token"
)

// The subset of the CDI spec this driver writes; the JSON names are the spec's.
type (
	cdiSpec struct {
		CDIVersion string      `json:"cdiVersion"`
		Kind       string      `json:"kind"`
		Devices    []cdiDevice `json:"devices"`
	}
	cdiDevice struct {
		Name           string            `json:"name"`
		ContainerEdits cdiContainerEdits `json:"containerEdits"`
	}
	cdiContainerEdits struct {
		Env    []string   `json:"env,omitempty"`
		Mounts []cdiMount `json:"mounts,omitempty"`
	}
	cdiMount struct {
		HostPath      string   `json:"hostPath"`
		ContainerPath string   `json:"containerPath"`
		Options       []string `json:"options,omitempty"`
	}
)

// cdiName is what the CDI spec allows as a device name.
var cdiName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// secretChars is what a claim secret may be: what the daemon accepts.
var secretChars = regexp.MustCompile(`^[!-~]{32,256}$`)

// readOnlyBind are the mount options of the socket and the token file.
var readOnlyBind = []string{"ro", "nosuid", "nodev", "bind"}

// CDISpec is the CDI spec (JSON) for an allocated claim: one device, named by
// the claim's UID, whose edits mount the daemon's socket and token file
// read-only into the container and set the environment a salus client reads:
// SALUS_ADDR and SALUS_TOKEN_FILE (their paths inside the container; the Python
// client reads both), SALUS_GPU (the GPU's physical index), SALUS_CLAIM (the
// claim's UID) and SALUS_CLAIM_SECRET (its secret, which the daemon requires of
// an open naming the claim: only this container has it), SALUS_DECLARED_S, SALUS_PRIORITY,
// SALUS_PERSISTENT_MIB, SALUS_EPHEMERAL_MIB and SALUS_GPUS when the
// configuration gives them, and CUDA_VISIBLE_DEVICES with CUDA_DEVICE_ORDER so
// that CUDA numbers the GPUs as the daemon does. It refuses a claim whose memory
// does not fit on the GPU (Fits), and a secret that is not 32 to 256 printable
// ASCII characters. The spec holds the secret: write it where only the
// container runtime reads (mode 0600).
func CDISpec(claimUID, secret string, gpu GPU, socket, tokenPath string, cfg ClaimConfig) ([]byte, error) {
	if !cdiName.MatchString(claimUID) {
		return nil, fmt.Errorf("CDI spec: claim UID %q is not a CDI device name: give the claim's UID (letters, digits, '_', '.', '-', starting with a letter or digit)", claimUID)
	}
	if !secretChars.MatchString(secret) {
		return nil, fmt.Errorf("CDI spec: claim %s: its secret must be 32 to 256 printable ASCII characters (%d given)", claimUID, len(secret))
	}
	for _, p := range []struct{ name, v string }{{"socket", socket}, {"token file", tokenPath}} {
		if !path.IsAbs(p.v) {
			return nil, fmt.Errorf("CDI spec: the daemon's %s %q is not an absolute path: give the path on the host", p.name, p.v)
		}
	}
	if gpu.Index < 0 {
		return nil, fmt.Errorf("CDI spec: GPU index %d: give the GPU's physical index, 0 or more", gpu.Index)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := Fits(gpu, cfg); err != nil {
		return nil, err
	}
	idx := strconv.Itoa(gpu.Index)
	env := []string{
		"SALUS_ADDR=" + ContainerSocket,
		"SALUS_TOKEN_FILE=" + ContainerToken,
		"SALUS_GPU=" + idx,
		"SALUS_CLAIM=" + claimUID, // the session names its claim: the daemon pins it to this GPU
		"SALUS_CLAIM_SECRET=" + secret,
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if cfg.DeclaredS > 0 {
		env = append(env, "SALUS_DECLARED_S="+num(cfg.DeclaredS))
	}
	if cfg.Priority != 0 {
		env = append(env, "SALUS_PRIORITY="+strconv.Itoa(cfg.Priority))
	}
	if cfg.PersistentMiB > 0 {
		env = append(env, "SALUS_PERSISTENT_MIB="+num(cfg.PersistentMiB))
	}
	if cfg.EphemeralMiB > 0 {
		env = append(env, "SALUS_EPHEMERAL_MIB="+num(cfg.EphemeralMiB))
	}
	if cfg.GPUs > 0 {
		env = append(env, "SALUS_GPUS="+strconv.Itoa(cfg.GPUs))
	}
	env = append(env, "CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES="+idx)
	return marshalSpec(claimUID, env, socket, tokenPath)
}

// MonitorCDISpec is the CDI spec (JSON) for a claim with admin access
// (adminAccess: true, a monitoring pod): the daemon's socket and token file
// mounted read-only, SALUS_ADDR, SALUS_TOKEN_FILE and SALUS_GPU, and the GPU
// made visible to CUDA, but no SALUS_CLAIM nor secret: such a claim holds no
// memory with the daemon, and its pod's sessions are not bound to it.
func MonitorCDISpec(claimUID string, gpu GPU, socket, tokenPath string) ([]byte, error) {
	if !cdiName.MatchString(claimUID) {
		return nil, fmt.Errorf("CDI spec: claim UID %q is not a CDI device name: give the claim's UID (letters, digits, '_', '.', '-', starting with a letter or digit)", claimUID)
	}
	for _, p := range []struct{ name, v string }{{"socket", socket}, {"token file", tokenPath}} {
		if !path.IsAbs(p.v) {
			return nil, fmt.Errorf("CDI spec: the daemon's %s %q is not an absolute path: give the path on the host", p.name, p.v)
		}
	}
	idx := strconv.Itoa(gpu.Index)
	env := []string{"SALUS_ADDR=" + ContainerSocket, "SALUS_TOKEN_FILE=" + ContainerToken, "SALUS_GPU=" + idx,
		"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=" + idx}
	return marshalSpec(claimUID, env, socket, tokenPath)
}

// marshalSpec is the spec of one device, named claimUID, with env and the
// daemon's socket and token file mounted read-only.
func marshalSpec(claimUID string, env []string, socket, tokenPath string) ([]byte, error) {
	spec := cdiSpec{
		CDIVersion: CDIVersion,
		Kind:       CDIKind,
		Devices: []cdiDevice{{
			Name: claimUID,
			ContainerEdits: cdiContainerEdits{
				Env: env,
				Mounts: []cdiMount{
					{HostPath: socket, ContainerPath: ContainerSocket, Options: readOnlyBind},
					{HostPath: tokenPath, ContainerPath: ContainerToken, Options: readOnlyBind},
				},
			},
		}},
	}
	return json.MarshalIndent(spec, "", "  ")
}
