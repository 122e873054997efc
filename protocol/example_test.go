package protocol_test

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/salusgo/salus/protocol"
)

// A client writes a request as one frame; the daemon reads the frame back and
// decodes it.
func Example() {
	var conn bytes.Buffer // a connection, for the example

	body, _ := json.Marshal(protocol.Request{Op: protocol.OpOpen, ID: 1, Version: protocol.Version, Job: "j1", DeclaredS: 12})
	if err := protocol.WriteFrame(&conn, body); err != nil {
		panic(err)
	}
	fmt.Printf("header % x\n", conn.Bytes()[:protocol.HeaderLen])

	frame, err := protocol.ReadFrame(&conn, nil, protocol.MaxFrame)
	if err != nil {
		panic(err)
	}
	var req protocol.Request
	if err := json.Unmarshal(frame, &req); err != nil {
		panic(err)
	}
	fmt.Println(string(frame))
	fmt.Println(req.Op, req.Job, req.DeclaredS)

	// An error reply, as the daemon sends it.
	body, _ = json.Marshal(protocol.ErrorReply{ID: 2, Code: protocol.CodeWrongPhase, Error: "begin an iteration before ending one"})
	protocol.WriteFrame(&conn, body)
	frame, _ = protocol.ReadFrame(&conn, frame, 0)
	fmt.Println(string(frame))
	fmt.Println("session over:", protocol.Ends(protocol.CodeWrongPhase))
	// Output:
	// header 00 00 00 3b
	// {"op":"open","id":1,"version":1,"job":"j1","declared_s":12}
	// open j1 12
	// {"id":2,"ok":false,"code":"wrong_phase","error":"begin an iteration before ending one"}
	// session over: false
}
