package trace

import (
	"strings"
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		env  map[string]string
		want *Config
		err  string
	}{
		{name: "off: nothing set", want: nil},
		{name: "flag: http base URL gets /v1/traces", opts: Options{Endpoint: "http://127.0.0.1:4318"},
			want: &Config{URL: "http://127.0.0.1:4318/v1/traces", Protocol: ProtocolHTTP, Timeout: 10 * time.Second}},
		{name: "flag: a path is a base", opts: Options{Endpoint: "https://otel.example:443/otlp/"},
			want: &Config{URL: "https://otel.example:443/otlp/v1/traces", Protocol: ProtocolHTTP, Timeout: 10 * time.Second}},
		{name: "flag: already /v1/traces", opts: Options{Endpoint: "http://h:4318/v1/traces"},
			want: &Config{URL: "http://h:4318/v1/traces", Protocol: ProtocolHTTP, Timeout: 10 * time.Second}},
		{name: "generic env, grpc from env", env: map[string]string{EnvEndpoint: "http://127.0.0.1:4317", EnvProtocol: "grpc"},
			want: &Config{URL: "http://127.0.0.1:4317", Protocol: ProtocolGRPC, Timeout: 10 * time.Second}},
		{name: "traces env is the full URL", env: map[string]string{EnvTracesEndpoint: "http://c:9/custom", EnvEndpoint: "http://other:1"},
			want: &Config{URL: "http://c:9/custom", Protocol: ProtocolHTTP, Timeout: 10 * time.Second}},
		{name: "flag beats env", opts: Options{Endpoint: "http://flag:1"}, env: map[string]string{EnvTracesEndpoint: "http://env:2"},
			want: &Config{URL: "http://flag:1/v1/traces", Protocol: ProtocolHTTP, Timeout: 10 * time.Second}},
		{name: "protocol flag beats env", opts: Options{Endpoint: "http://h:1", Protocol: "grpc"}, env: map[string]string{EnvProtocol: "http/protobuf"},
			want: &Config{URL: "http://h:1", Protocol: ProtocolGRPC, Timeout: 10 * time.Second}},
		{name: "traces protocol beats generic", env: map[string]string{EnvEndpoint: "http://h:1", EnvTracesProtocol: "grpc", EnvProtocol: "http/protobuf"},
			want: &Config{URL: "http://h:1", Protocol: ProtocolGRPC, Timeout: 10 * time.Second}},
		{name: "timeout from env", env: map[string]string{EnvEndpoint: "http://h:1", EnvTimeout: "1500"},
			want: &Config{URL: "http://h:1/v1/traces", Protocol: ProtocolHTTP, Timeout: 1500 * time.Millisecond}},
		{name: "sdk disabled", env: map[string]string{EnvEndpoint: "http://h:1", EnvSDKDisabled: "true"}, want: nil},
		{name: "bad protocol", env: map[string]string{EnvEndpoint: "http://h:1", EnvProtocol: "http/json"},
			err: `$OTEL_EXPORTER_OTLP_PROTOCOL "http/json": expected http/protobuf or grpc`},
		{name: "bad scheme", opts: Options{Endpoint: "127.0.0.1:4318"},
			err: `--otlp-endpoint "127.0.0.1:4318": expected a URL such as http://127.0.0.1:4318`},
		{name: "bad env URL", env: map[string]string{EnvEndpoint: "grpc://h:1"},
			err: `$OTEL_EXPORTER_OTLP_ENDPOINT "grpc://h:1": expected a URL`},
		{name: "query", opts: Options{Endpoint: "http://h:1/?x=1"}, err: "without user, query or fragment"},
		{name: "bad timeout", env: map[string]string{EnvEndpoint: "http://h:1", EnvTracesTimeout: "10s"},
			err: `$OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="10s": expected a timeout in milliseconds`},
		{name: "bad disabled", env: map[string]string{EnvSDKDisabled: "maybe"}, err: "expected true or false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.opts.Resolve(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
