package main

import "github.com/fatih/color"

// noColor turns colour off (non-terminal output, --no-color, NO_COLOR).
func noColor() { color.NoColor = true }
