package server_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A body the client sent malformed, a bad chunked encoding or one cut short, is
// the client's error: 400 (invalid_argument), never 500.
func TestMalformedBodyIs400(t *testing.T) {
	d := start(t, "fair", 14000, nil)
	hs := httptest.NewServer(d.Handler())
	defer hs.Close()
	const head = "POST /salus.v1.SchedulerService/OpenSession HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	for name, req := range map[string]string{
		"a chunk size that is not hex": head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
		"a chunk longer than said":     head + "Transfer-Encoding: chunked\r\n\r\n2\r\n{\"job\":\"a\"}\r\n0\r\n\r\n",
		"a chunked body cut short":     head + "Transfer-Encoding: chunked\r\n\r\n40\r\n{\"job\"",
	} {
		c, err := net.Dial("tcp", hs.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(c, req)
		if strings.HasSuffix(req, `"job"`) {
			c.(*net.TCPConn).CloseWrite()
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			c.Close()
			continue
		}
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d, want 400", name, resp.StatusCode)
		}
	}
}
