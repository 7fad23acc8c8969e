package main

import "github.com/podstep/podstep/internal/session"

// Exit codes (internal/session), documented in the README.
const (
	ExitOK          = session.ExitOK
	ExitPodFailed   = session.ExitPodFailed
	ExitUsage       = session.ExitUsage
	ExitRuntime     = session.ExitRuntime
	ExitLeftBehind  = session.ExitLeftBehind
	ExitInterrupted = session.ExitInterrupted
)
