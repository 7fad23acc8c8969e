package cri

import (
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Call is one CRI request as it crossed the wire: what was asked, what came
// back and how long it took. Request and Response are redacted copies.
type Call struct {
	// Seq numbers calls in the order they were sent, from 1.
	Seq int
	// Method is the CRI method name, e.g. "RunPodSandbox".
	Method string
	// Request is the redacted request message.
	Request proto.Message
	// Response is the redacted response message; nil on error.
	Response proto.Message
	// Err is the error the runtime answered with, if any, its text redacted.
	Err error
	// Start is when the call was sent.
	Start time.Time
	// Duration is how long the runtime took to answer.
	Duration time.Duration
}

// Code returns the gRPC status code of the call's error (codes.OK when none).
func (c Call) Code() codes.Code {
	return status.Code(c.Err)
}

// ErrorMessage returns the runtime's own error text, without the gRPC
// "rpc error: code = X desc =" wrapping, or "" when the call succeeded.
func (c Call) ErrorMessage() string {
	return Message(c.Err)
}

// Message returns the runtime's own text for a CRI error (the gRPC status
// description when there is one).
func Message(err error) string {
	if err == nil {
		return ""
	}
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}
