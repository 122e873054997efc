package protocol

import "fmt"

// The bounds of the strings a client sends (docs/protocol.md, "Strings"). A job's
// name goes into every event of its iterations, so without a bound one client
// could make the daemon write its journal at hundreds of MB/s; the frame's length
// (MaxFrame) is no bound for that. Both transports check every string field
// against them where the request is decoded, and the daemon checks an open again.
const (
	// MaxName bounds a name: job, model, kind, claim, op, session.
	MaxName = 256
	// MaxSecret bounds a token or a session's secret.
	MaxSecret = 1024
	// MaxText bounds free text: an operator's reason for an eviction.
	MaxText = 1024
)

// CheckString refuses s when it is longer than max bytes, naming the field and
// the bound.
func CheckString(field, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("field %s is %d bytes long: at most %d are allowed (docs/protocol.md, Strings): give a shorter one", field, len(s), max)
	}
	return nil
}

// CheckStrings refuses a request with a string field beyond its bound (every
// string field of Request; a test checks that none is left out).
func (r *Request) CheckStrings() error {
	for _, f := range [...]struct {
		name, v string
		max     int
	}{{"op", r.Op, MaxName}, {"job", r.Job, MaxName}, {"model", r.Model, MaxName}, {"kind", r.Kind, MaxName},
		{"token", r.Token, MaxSecret}, {"claim", r.Claim, MaxName}, {"resume_token", r.ResumeToken, MaxSecret},
		{"claim_secret", r.ClaimSecret, MaxSecret}} {
		if err := CheckString(f.name, f.v, f.max); err != nil {
			return err
		}
	}
	return nil
}
