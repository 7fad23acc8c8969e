// Package record writes and reads recordings of podstep runs
// (`podstep run --record FILE`, `podstep replay FILE`).
//
// A recording is JSON lines, like asciinema's asciicast v2: line 1 is a
// [Header] (format name and version, podstep version, when and where, the
// runtime, the flags, the manifest without Secret values, the node), then
// one line per engine event in the order the run made them, each an object
// with a "type":
//
//	start         the first line `run --auto -o json` prints
//	plan          the plan, from step "from" on (all of it at first; again when it changes)
//	step-started  a step began, with the exact requests it is about to send
//	call-sent     a CRI request went out
//	call          a CRI call returned (method, request, response, code, error, start, duration)
//	step          the step object `-o json` prints (result, calls, the pod after it or what changed in it, kubelet events)
//	log           a line a container wrote to its log, read after a step
//	summary       the summary object `-o json` prints; the last line
//
// The start, step and summary lines are written by the same
// [report.Printer] that `-o json` uses, so a replay prints them again
// byte for byte. Every line is flushed (through gzip, for a name ending in
// .gz) as it is written: a run that is killed leaves a recording that reads
// up to its last line. Nothing in it holds a Secret value: requests,
// results, events and logs come masked from the engine's redactor, and the
// header's manifest is masked again here ([ManifestOf]).
//
// Versions: a reader accepts its own [Version] and every older one; a newer
// one is refused with a message to upgrade. Within a version, lines may
// gain fields and new line types may appear; readers ignore both. Version
// 2 writes a step's pod as what changed ("pod_delta") but on the first
// step and now and then; the [Reader] folds it back, so every reader's
// Event.Step.Pod is the whole pod after the step, as in version 1.
package record
