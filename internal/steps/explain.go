package steps

import (
	"github.com/podstep/podstep/internal/explain"
	"github.com/podstep/podstep/internal/reason"
)

// explain matches a failed step's result with the table of known failures
// (internal/explain) and fills in the entry's commands with the pod's names;
// log is the last lines of the container's log for a container that exited.
// Nil when no entry matches.
func (e *Engine) explain(container string, res Result, log []string) *explain.Explanation {
	entry := explain.Find(explain.Failure{Reason: res.Reason, Message: res.Message, Log: log})
	if entry == nil {
		return nil
	}
	v := explain.Values{Pod: e.pod.Name, Namespace: e.pod.Namespace, Container: container}
	e.mu.Lock()
	if c := e.rt.containers[container]; c != nil {
		v.Image, v.ContainerID = c.spec.Image, c.id
	}
	e.mu.Unlock()
	return entry.Explain(v)
}

// exitLogLines is how many of an exited container's last log lines the
// explanation reads (runc writes an exec failure as the last line).
const exitLogLines = 5

// explainExit explains a container's non-zero exit, reading its last log
// lines: runc writes a failed exec (exec format error) there.
func (e *Engine) explainExit(x exit, message string) *explain.Explanation {
	var log []string
	if lines, err := e.ContainerLog(x.c.spec.Name, exitLogLines); err == nil {
		for _, l := range lines {
			log = append(log, l.Text)
		}
	}
	return e.explain(x.c.spec.Name, Result{Reason: reasonOr(x.reason, reason.Error), Message: message}, log)
}
