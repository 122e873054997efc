package protocol

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The daemon's checks of a request's body, beyond what encoding/json does
// (docs/protocol.md, Frames): a request is decoded with encoding/json into a
// Request, then CheckText and CheckKeys refuse what encoding/json would let
// through.

// IsObject reports whether body, after leading JSON white space, starts a JSON
// object (what every frame's body must be).
func IsObject(body []byte) bool {
	for _, c := range body {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{'
	}
	return false
}

// CheckText refuses a request's body that is not valid UTF-8, or whose strings
// escape a lone UTF-16 surrogate: encoding/json would silently replace either
// with U+FFFD, and two job names would collide.
func CheckText(b []byte) error {
	plain := true
	for _, c := range b {
		if c >= utf8.RuneSelf || c == '\\' {
			plain = false
			break
		}
	}
	if plain { // the common case: ASCII without escapes
		return nil
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 {
				return fmt.Errorf("frame body is not valid UTF-8: byte %d (%#x) does not start a character: send strings as UTF-8", i, c)
			}
			i += size
			continue
		}
		if c != '\\' {
			i++
			continue
		}
		if i+1 < len(b) && b[i+1] == 'u' {
			r, ok := hex4(b, i+2)
			if ok && r >= 0xd800 && r < 0xdc00 { // a high surrogate needs a low one next
				if lo, ok := hex4(b, i+8); ok && i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' && lo >= 0xdc00 && lo < 0xe000 {
					i += 12
					continue
				}
			}
			if ok && r >= 0xd800 && r < 0xe000 {
				return fmt.Errorf("frame body is not valid UTF-8: the escape %s at byte %d is half a UTF-16 surrogate pair: send strings as UTF-8", b[i:i+6], i)
			}
			i += 6
			continue
		}
		i += 2 // an escaped character: a backslash does not start the next escape
	}
	return nil
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
	return rune(n), err == nil
}

// requestKeys are the keys of Request, as docs/protocol.md spells them.
var requestKeys = func() []string {
	t := reflect.TypeFor[Request]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return keys
}()

// CheckKeys refuses a key that differs from one of the protocol's only in case,
// which encoding/json would take for it (it also folds the Kelvin sign into k and
// the long s into s). It returns the request's id when its key is spelled right.
func CheckKeys(b []byte) (int64, error) {
	suspect := false
	for _, c := range b {
		if c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf || c == '\\' {
			suspect = true
			break
		}
	}
	if !suspect { // keys of lower-case ASCII without escapes are the protocol's or unknown
		return 0, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return 0, nil // the frame decoded before: cannot happen
	}
	var id int64
	if raw, ok := m["id"]; ok {
		json.Unmarshal(raw, &id)
	}
	for k := range m {
		for _, want := range requestKeys {
			if k != want && strings.EqualFold(k, want) {
				return id, fmt.Errorf("key %q: keys are case-sensitive: write %q", k, want)
			}
		}
	}
	return id, nil
}
