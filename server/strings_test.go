package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/server"
)

// TestStringsAreBounded: every string a client sends is bounded, on the fast
// path and on the connect API, and the refusal says the bound; a name of the
// bound's length is taken. (Before, a 65,000-character job name was taken, and
// written with every iteration.)
func TestStringsAreBounded(t *testing.T) {
	d := start(t, "pack", 14000, func(c *server.Config) { c.AdminToken = "admin" })
	long := strings.Repeat("n", 65000)
	for _, field := range []string{"job", "model", "kind", "claim", "token"} {
		body := fmt.Sprintf(`{"op":"open","id":1,"version":1,"job":"j","persistent_mib":1,"ephemeral_mib":1,%q:%q}`, field, long)
		if field == "job" {
			body = strings.Replace(body, `"job":"j",`, "", 1)
		}
		rep := rawConn(t, d).call(body)
		msg, _ := rep["error"].(string)
		if rep["code"] != "bad_request" || !strings.Contains(msg, "field "+field+" is 65000 bytes") || !strings.Contains(msg, "at most") || len(msg) > 400 {
			t.Errorf("open with a long %s: %.300v", field, rep)
		}
	}
	name := strings.Repeat("j", 256)
	c := rawConn(t, d)
	if rep := c.call(`{"op":"open","id":1,"version":1,"job":"` + name + `","persistent_mib":1,"ephemeral_mib":1}`); rep["ok"] != true {
		t.Errorf("open with a name of 256 bytes: %v", rep)
	}
	hs := httptest.NewServer(d.Handler())
	defer hs.Close()
	for _, tc := range []struct{ proc, body, want string }{
		{salusv1connect.SchedulerServiceOpenSessionProcedure, `{"job":"` + long + `","persistentMib":1}`, "field job is 65000 bytes long: at most 256"},
		{salusv1connect.SchedulerServiceBeginIterationProcedure, `{"session":"` + long + `"}`, "field session is 65000 bytes long: at most 256"},
		{salusv1connect.SchedulerServiceHeartbeatProcedure, `{"session":"s","secret":"` + long + `"}`, "field secret is 65000 bytes long: at most 1024"},
		{salusv1connect.AdminServiceEvictSessionProcedure, `{"job":"x","reason":"` + long + `"}`, "field reason is 65000 bytes long: at most 1024"},
	} {
		req, _ := http.NewRequest("POST", hs.URL+tc.proc, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer admin")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), tc.want) || len(out) > 600 {
			t.Errorf("%s: %d %.300s, want %q", tc.proc, resp.StatusCode, out, tc.want)
		}
	}
}
