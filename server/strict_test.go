package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protowire"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
)

// TestConnectRefusesUnknownFieldsAndEnums: the connect API's JSON refused
// nothing it did not know: a misspelt key, a field of a newer API (a resume
// token, a claim secret that an older daemon would then ignore) or an enum
// value out of range was dropped silently. Now each is refused with
// invalid_argument naming it, in JSON and in binary protobuf, and nothing is
// opened.
func TestConnectRefusesUnknownFieldsAndEnums(t *testing.T) {
	d := start(t, "pack", 14000, nil)
	hs := api(t, d)
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(hs.URL+salusv1connect.SchedulerServiceOpenSessionProcedure, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"an unknown key", `{"job":"a","persistentMib":1,"ephemeralMib":1,"bogus":1}`, "bogus"},
		{"a key in the wrong case", `{"job":"a","PersistentMib":1,"ephemeralMib":1}`, "PersistentMib"},
		{"an unknown enum name", `{"job":"a","persistentMib":1,"ephemeralMib":1,"kind":"JOB_KIND_BATCH"}`, "JOB_KIND_BATCH"},
		{"an enum number out of range", `{"job":"a","persistentMib":1,"ephemeralMib":1,"kind":7}`, "field kind: 7 is not a value of JobKind"},
		{"a negative enum number", `{"job":"a","persistentMib":1,"ephemeralMib":1,"kind":-1}`, "field kind: -1"},
	} {
		code, out := post(tc.body)
		if code != http.StatusBadRequest || !strings.Contains(out, "invalid_argument") || !strings.Contains(out, tc.want) {
			t.Errorf("OpenSession with %s: %d %s; want 400 invalid_argument naming %q", tc.name, code, out, tc.want)
		}
	}
	// Binary protobuf: an unknown field number, and an enum number out of range.
	sc := salusv1connect.NewSchedulerServiceClient(hs.Client(), hs.URL)
	ctx := context.Background()
	m := &salusv1.OpenSessionRequest{Job: "b", PersistentMib: 1, EphemeralMib: 1}
	m.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
	if _, err := sc.OpenSession(ctx, connect.NewRequest(m)); connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "number 99") {
		t.Errorf("OpenSession (protobuf) with an unknown field: %v, want invalid_argument naming it", err)
	}
	if _, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "b", PersistentMib: 1, EphemeralMib: 1, Kind: 9})); connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "kind") {
		t.Errorf("OpenSession (protobuf) with kind 9: %v, want invalid_argument", err)
	}
	if n := len(d.Sessions()); n != 0 {
		t.Fatalf("refused requests opened %d sessions", n)
	}
	// What the API defines still works, in both.
	if code, out := post(`{"job":"a","persistentMib":1,"ephemeralMib":1,"kind":"JOB_KIND_INFERENCE"}`); code != http.StatusOK {
		t.Errorf("a valid JSON open: %d %s", code, out)
	}
	if _, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "b", PersistentMib: 1, EphemeralMib: 1, Kind: salusv1.JobKind_JOB_KIND_TRAINING})); err != nil {
		t.Errorf("a valid protobuf open: %v", err)
	}
}

// TestMetricsAnswersGetOnly: /metrics answered every method; now GET and HEAD,
// and 405 with Allow for the others.
func TestMetricsAnswersGetOnly(t *testing.T) {
	d := start(t, "pack", 14000, nil)
	hs := api(t, d)
	for method, want := range map[string]int{"GET": 200, "HEAD": 200, "POST": 405, "PUT": 405, "DELETE": 405, "PATCH": 405} {
		req, _ := http.NewRequest(method, hs.URL+"/metrics", strings.NewReader("x"))
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s /metrics: %d, want %d", method, resp.StatusCode, want)
		}
		if want == 405 && !strings.Contains(resp.Header.Get("Allow"), "GET") {
			t.Errorf("%s /metrics: Allow %q, want GET, HEAD", method, resp.Header.Get("Allow"))
		}
		if method == "GET" && !strings.Contains(string(body), "salus_sessions") {
			t.Errorf("GET /metrics: %s", body)
		}
	}
}
