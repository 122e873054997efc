package server

import (
	"context"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/salusgo/salus/protocol"
)

// Bounds on every string a client sends (protocol.MaxName and the others; see
// protocol/bounds.go for why). The fast path checks its frames where it decodes
// them (protocol.Request.CheckStrings), the connect API every string field of
// every request message (boundStrings), and Open the request whatever the
// transport (checkNames), so that an embedder calling Open is bounded too.

// stringBound is the bound of a connect request's string field, by its name.
func stringBound(name protoreflect.Name) int {
	switch name {
	case "secret", "token":
		return protocol.MaxSecret
	case "reason":
		return protocol.MaxText
	}
	return protocol.MaxName
}

// boundStrings is the connect API's interceptor that refuses a request with a
// string field beyond its bound (bad_request, naming the field and the bound),
// before any handler sees it.
func boundStrings() connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if m, ok := req.Any().(proto.Message); ok {
				if err := checkMessageStrings(m.ProtoReflect()); err != nil {
					return nil, connectErr(errorf(protocol.CodeBadRequest, "%s: %v", req.Spec().Procedure, err))
				}
			}
			return next(ctx, req)
		}
	})
}

// checkMessageStrings checks every string field of m, and of the messages in it.
func checkMessageStrings(m protoreflect.Message) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.StringKind:
			l := v.List()
			for i := range l.Len() {
				if err = protocol.CheckString(string(fd.Name()), l.Get(i).String(), stringBound(fd.Name())); err != nil {
					return false
				}
			}
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				if err = checkMessageStrings(l.Get(i).Message()); err != nil {
					return false
				}
			}
		case fd.IsMap():
			// no request has one
		case fd.Kind() == protoreflect.StringKind:
			err = protocol.CheckString(string(fd.Name()), v.String(), stringBound(fd.Name()))
		case fd.Message() != nil:
			err = checkMessageStrings(v.Message())
		}
		return err == nil
	})
	return err
}

// checkNames bounds the strings of an open, whatever the transport.
func checkNames(req OpenRequest) error {
	for _, f := range [...]struct{ name, v string }{{"job", req.Job}, {"model", req.Model}, {"kind", req.Kind}, {"claim", req.Claim}} {
		if err := protocol.CheckString(f.name, f.v, protocol.MaxName); err != nil {
			// Not the job's name in the message: it may be the one too long.
			return errorf(protocol.CodeBadRequest, "open %.64q: %v", strings.ToValidUTF8(req.Job, "?"), err)
		}
	}
	return nil
}
