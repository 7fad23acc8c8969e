package trace

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// The standard OpenTelemetry environment podstep reads
// (opentelemetry.io/docs/specs/otel/protocol/exporter/).
const (
	EnvEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvTimeout         = "OTEL_EXPORTER_OTLP_TIMEOUT"
	EnvTracesTimeout   = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
	EnvServiceName     = "OTEL_SERVICE_NAME"
	EnvResourceAttrs   = "OTEL_RESOURCE_ATTRIBUTES"
	EnvSDKDisabled     = "OTEL_SDK_DISABLED"
	ProtocolGRPC       = "grpc"
	ProtocolHTTP       = "http/protobuf"
	defaultTimeout     = 10 * time.Second
	tracesPath         = "/v1/traces"
	defaultServiceName = "podstep"
	flagEndpoint       = "otlp-endpoint"
	flagProtocol       = "otlp-protocol"
)

// Options are the tracing flags of a command (run; proxy can add them the
// same way with AddFlags).
type Options struct {
	// Endpoint is --otlp-endpoint: the collector's base URL, as
	// OTEL_EXPORTER_OTLP_ENDPOINT ("" = from the environment).
	Endpoint string
	// Protocol is --otlp-protocol: grpc or http/protobuf ("" = from the
	// environment, else http/protobuf).
	Protocol string
}

// AddFlags adds --otlp-endpoint and --otlp-protocol to a command's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Endpoint, flagEndpoint, "", "export the run as OpenTelemetry traces to this OTLP collector, e.g. http://127.0.0.1:4318 (default: $"+EnvTracesEndpoint+" or $"+EnvEndpoint+"; none: no tracing)")
	fs.StringVar(&o.Protocol, flagProtocol, "", "OTLP protocol: http/protobuf or grpc (default: $"+EnvTracesProtocol+" or $"+EnvProtocol+", else http/protobuf)")
}

// Config is where and how spans are exported, resolved from the flags and
// the environment.
type Config struct {
	// URL is the exporter's endpoint URL: for http/protobuf the full URL
	// spans are POSTed to (…/v1/traces), for grpc scheme://host:port.
	URL string
	// Protocol is ProtocolGRPC or ProtocolHTTP.
	Protocol string
	// Timeout bounds one export, and the flush at the end.
	Timeout time.Duration
}

// Resolve works out the Config from the flags, then the environment
// (getenv; nil: os.Getenv). It returns nil when tracing is off: no endpoint
// anywhere, or OTEL_SDK_DISABLED=true. A bad value is an error naming the
// flag or variable, what is wrong and what is expected.
func (o Options) Resolve(getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(EnvSDKDisabled); v != "" && o.Endpoint == "" {
		if off, err := strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("$%s=%q: expected true or false", EnvSDKDisabled, v)
		} else if off {
			return nil, nil
		}
	}
	c := &Config{Timeout: defaultTimeout}

	var protoSrc string
	c.Protocol, protoSrc = first(o.Protocol, "--"+flagProtocol, getenv(EnvTracesProtocol), "$"+EnvTracesProtocol, getenv(EnvProtocol), "$"+EnvProtocol)
	if c.Protocol == "" {
		c.Protocol = ProtocolHTTP
	}
	if c.Protocol != ProtocolGRPC && c.Protocol != ProtocolHTTP {
		return nil, fmt.Errorf("%s %q: expected %s or %s", protoSrc, c.Protocol, ProtocolHTTP, ProtocolGRPC)
	}

	// The signal-specific variable is the full URL; the flag and the
	// generic variable are a base URL, to which /v1/traces is added for HTTP.
	var raw, src string
	full := false
	switch {
	case o.Endpoint != "":
		raw, src = o.Endpoint, "--"+flagEndpoint
	case getenv(EnvTracesEndpoint) != "":
		raw, src, full = getenv(EnvTracesEndpoint), "$"+EnvTracesEndpoint, true
	case getenv(EnvEndpoint) != "":
		raw, src = getenv(EnvEndpoint), "$"+EnvEndpoint
	default:
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, fmt.Errorf("%s %q: expected a URL such as http://127.0.0.1:4318 (scheme http or https, a host and port)", src, raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%s %q: expected a URL without user, query or fragment", src, raw)
	}
	if c.Protocol == ProtocolHTTP && !full && !strings.HasSuffix(u.Path, tracesPath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + tracesPath
	}
	if c.Protocol == ProtocolGRPC {
		u.Path = ""
	}
	c.URL = u.String()

	if v, src := first(getenv(EnvTracesTimeout), "$"+EnvTracesTimeout, getenv(EnvTimeout), "$"+EnvTimeout); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s=%q: expected a timeout in milliseconds > 0, e.g. 10000", src, v)
		}
		c.Timeout = time.Duration(ms) * time.Millisecond
	}
	return c, nil
}

// first returns the first non-empty value of (value, source) pairs, and its source.
func first(pairs ...string) (value, source string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			return pairs[i], pairs[i+1]
		}
	}
	return "", ""
}
