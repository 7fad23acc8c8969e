// Package session is a pod run's lifecycle, shared by every frontend
// (run, plan, bench, proxy, and the commands to come): the run's options
// and their checks, the runtime endpoint choice (Connect, Choose), the
// recording and trace of a run, the summary and its time split, teardown
// and the outcome and exit-code policy (Settle, Worst), and the exit codes
// with the error that carries one (Error, Code).
//
// cmd/podstep only turns flags into Options and calls in here; so can a
// test, without a binary.
package session
