// Package cri is podstep's one CRI client. Every call podstep sends to a
// container runtime passes through Client, which times it, records it as a
// Call (method, request, response or error) for the frontends, and redacts
// credentials and Secret-derived values before anything is recorded.
//
// Endpoint handling follows crictl: a flag, then CONTAINER_RUNTIME_ENDPOINT /
// IMAGE_SERVICE_ENDPOINT, then the well-known sockets of containerd and CRI-O.
package cri
