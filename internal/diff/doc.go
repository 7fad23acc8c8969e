// Package diff compares two recordings (internal/record) of the same pod:
// `podstep diff A B`. It serves, for example, a `podstep run --record` and
// a real kubelet recorded through `podstep proxy --record`, or two runs on
// two runtimes.
//
// Three parts:
//
//   - the call order, aligned: each recording's CRI calls become a sequence
//     of (method, attributed container) keys, consecutive identical calls
//     (polling) folded into one entry with a count, and the two sequences
//     are aligned by a longest common subsequence, shown like a unified diff;
//   - the request fields that differ in each aligned pair: both requests are
//     decoded as their CRI messages (cri-api, by protobuf reflection),
//     flattened to field paths, and normalised ([Normalisations]: the IDs,
//     UIDs, directories, timestamps and hashes that differ between any two
//     runs) before they are compared; a different gRPC code is a difference
//     too;
//   - the time per stage side by side (A, B and the change).
//
// Responses are not compared field by field: they are the runtime's, and
// differ between any two runs (times, PIDs, IPs). Recordings are masked
// when written; nothing here unmasks or reads Secret values.
package diff
