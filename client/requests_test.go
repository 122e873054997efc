package client

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/salusgo/salus/protocol"
)

// TestRequests: the hand-written requests decode to the protocol's Request, and
// pass the daemon's checks.
func TestRequests(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		body []byte
		want protocol.Request
	}{
		{beginRequest(2), protocol.Request{Op: protocol.OpBegin, ID: 2}},
		{endRequest(3, 0, 0, false, false), protocol.Request{Op: protocol.OpEnd, ID: 3}},
		{endRequest(4, 50*time.Millisecond, 1536.5, true, false), protocol.Request{Op: protocol.OpEnd, ID: 4, DurationS: 0.05, PeakMiB: 1536.5, Next: true}},
		{endRequest(5, 123456789*time.Second, 1e-7, false, false), protocol.Request{Op: protocol.OpEnd, ID: 5, DurationS: 123456789, PeakMiB: 1e-7}},
		{endRequest(6, 0, 0, false, true), protocol.Request{Op: protocol.OpEnd, ID: 6, Release: true}},
		{closeRequest(6, true), protocol.Request{Op: protocol.OpClose, ID: 6, Finished: &yes}},
		{closeRequest(7, false), protocol.Request{Op: protocol.OpClose, ID: 7, Finished: &no}},
	} {
		var got protocol.Request
		if !protocol.IsObject(tc.body) {
			t.Errorf("%s: not a JSON object", tc.body)
		}
		if err := json.Unmarshal(tc.body, &got); err != nil {
			t.Errorf("%s: %v", tc.body, err)
		}
		if err := protocol.CheckText(tc.body); err != nil {
			t.Errorf("%s: %v", tc.body, err)
		}
		if _, err := protocol.CheckKeys(tc.body); err != nil {
			t.Errorf("%s: %v", tc.body, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s decodes to %+v, want %+v", tc.body, got, tc.want)
		}
	}
}
