package workload

import (
	"bytes"
	"strings"
	"testing"
)

// A trace's share column is a job's scheduling weight: read, written back, and a
// bad one refused naming the file, line and field.
func TestTraceShareColumn(t *testing.T) {
	head := "job_id,model,batch_size,iterations,arrival_s,iter_s,persistent_mib,ephemeral_mib,share\n"
	tr, err := ParseTrace([]byte(head+"a,m,1,10,0,0.1,100,100,3\nb,m,1,10,0,0.1,100,100,\n"), "s.csv", "s", Default())
	if err != nil {
		t.Fatal(err)
	}
	if tr.Jobs[0].Share != 3 || tr.Jobs[1].Share != 0 || tr.Jobs[0].CoreJob().Share != 3 {
		t.Fatalf("shares %v and %v, want 3 and none", tr.Jobs[0].Share, tr.Jobs[1].Share)
	}
	var out bytes.Buffer
	if err := tr.WriteCSV(&out); err != nil {
		t.Fatal(err)
	}
	back, err := ParseTrace(out.Bytes(), "back.csv", "s", Default())
	if err != nil || back.Jobs[0].Share != 3 || back.Jobs[1].Share != 0 {
		t.Fatalf("written and read back: %v\n%s", err, out.String())
	}
	for _, v := range []string{"0", "-1", "5000", "lots", "NaN"} {
		_, err := ParseTrace([]byte(head+"a,m,1,10,0,0.1,100,100,"+v+"\n"), "s.csv", "s", Default())
		if err == nil || !strings.Contains(err.Error(), "s.csv:2") || !strings.Contains(err.Error(), "share") {
			t.Errorf("share %s: %v, want an error naming s.csv:2 and share", v, err)
		}
	}
}
