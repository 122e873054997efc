package protocol

import "strconv"

// The replies the daemon sends most, once per iteration, appended without
// encoding/json's reflection and allocations; the bytes are json.Marshal's.

// AppendOK appends the body of a plain success reply, {"id":ID,"ok":true}.
func AppendOK(b []byte, id int64) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, `,"ok":true}`...)
}

// AppendBeginReply appends r's body, as json.Marshal would write it.
func AppendBeginReply(b []byte, r BeginReply) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, r.ID, 10)
	b = append(b, `,"ok":`...)
	b = strconv.AppendBool(b, r.OK)
	b = append(b, `,"lane":`...)
	b = strconv.AppendInt(b, int64(r.Lane), 10)
	b = append(b, `,"wait_us":`...)
	b = strconv.AppendInt(b, r.WaitUS, 10)
	if r.ReleaseCache {
		b = append(b, `,"release_cache":true`...)
	}
	if r.IdleYielded {
		b = append(b, `,"idle_yielded":true`...)
	}
	return append(b, '}')
}
