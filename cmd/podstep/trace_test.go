package main

import (
	"strings"
	"testing"
)

// TestTraceUsageErrors: a bad tracing flag or variable is one error naming
// it, exit 2, and nothing sent: the runtime named does not exist, so
// contacting it would be exit 3.
func TestTraceUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		env   map[string]string
		want  string
	}{
		{"flag without scheme", []string{"--otlp-endpoint", "127.0.0.1:4318"}, nil, `error: --otlp-endpoint "127.0.0.1:4318": expected a URL such as http://127.0.0.1:4318`},
		{"flag protocol", []string{"--otlp-endpoint", "http://127.0.0.1:1", "--otlp-protocol", "thrift"}, nil, `error: --otlp-protocol "thrift": expected http/protobuf or grpc`},
		{"env endpoint", nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost"}, `error: $OTEL_EXPORTER_OTLP_ENDPOINT "localhost": expected a URL`},
		{"env protocol", nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, `error: $OTEL_EXPORTER_OTLP_PROTOCOL "http/json": expected http/protobuf or grpc`},
		{"env timeout", nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TIMEOUT": "5s"}, `error: $OTEL_EXPORTER_OTLP_TIMEOUT="5s": expected a timeout in milliseconds`},
		{"env resource", nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_RESOURCE_ATTRIBUTES": "no-equals-sign"}, `error: $OTEL_SERVICE_NAME or $OTEL_RESOURCE_ATTRIBUTES: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			root, logs := dirs(t)
			args := append([]string{"run", "--auto", "-f", "../../testdata/pods/hello.yaml", "-r", "unix:///nonexistent/podstep.sock", "--root-dir", root, "--log-dir", logs}, tc.flags...)
			code, out, errOut := run(t, args...)
			if code != ExitUsage || !strings.HasPrefix(errOut, tc.want) || strings.Count(errOut, "\n") != 1 || out != "" {
				t.Errorf("exit %d stdout %q stderr %q, want exit 2 and one line starting %q", code, out, errOut, tc.want)
			}
		})
	}
}
