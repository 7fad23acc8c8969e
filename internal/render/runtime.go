package render

// Runtime describes the runtime a run talks to, as frontends name it in
// their first line (the --auto start line and JSON object, the TUI header).
type Runtime struct {
	Endpoint  string `json:"endpoint"`
	Simulated bool   `json:"simulated"`
	// Why says how the endpoint was chosen (flag, env, well-known socket, fallback).
	Why string `json:"why"`
}
