package live

import (
	"strings"
	"testing"

	"github.com/salusgo/salus/workload"
)

// salus worker in a claim's container: the flags not given take the
// environment the DRA driver's CDI edits set (SALUS_ADDR, SALUS_CLAIM, the
// claim's figures); a flag given wins; a malformed variable is an error naming
// it and the flag.
func TestWorkerTakesTheClaimsEnvironment(t *testing.T) {
	for k, v := range map[string]string{"SALUS_ADDR": "/run/salus/salus.sock", "SALUS_CLAIM": "uid-1", "SALUS_DECLARED_S": "3600",
		"SALUS_PRIORITY": "1", "SALUS_PERSISTENT_MIB": "700", "SALUS_EPHEMERAL_MIB": "300", "SALUS_GPUS": "1"} {
		t.Setenv(k, v)
	}
	w, err := ParseWorker([]string{"--job", "j", "--iter-s", "0.1"}, workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	if w.Addr != "/run/salus/salus.sock" || w.Claim != "uid-1" || w.DeclaredS != 3600 || w.Priority != 1 || w.PersistentMiB != 700 || w.EphemeralMiB != 300 {
		t.Errorf("worker from the environment: %+v", w)
	}
	w, err = ParseWorker([]string{"--job", "j", "--iter-s", "0.1", "--server", "unix:/tmp/x.sock", "--priority", "4", "--share", "3"}, workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	if w.Addr != "unix:/tmp/x.sock" || w.Priority != 4 || w.Share != 3 || w.DeclaredS != 3600 {
		t.Errorf("flags given win over the environment: %+v", w)
	}
	t.Setenv("SALUS_PRIORITY", "high")
	if _, err := ParseWorker([]string{"--job", "j", "--iter-s", "0.1"}, workload.Default()); err == nil || !strings.Contains(err.Error(), "$SALUS_PRIORITY") || !strings.Contains(err.Error(), "--priority") {
		t.Errorf("a malformed $SALUS_PRIORITY: %v", err)
	}
}
