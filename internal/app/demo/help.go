package demo

import (
	"fmt"
	"os"
	"strings"
)

// EnvServer overrides the example server the demo runs (a command line,
// split on spaces): tests set it, as a test binary has no example-server
// command.
const EnvServer = "MCPSIGN_DEMO_SERVER"

// ServerCommand is the example server's command for Options.Server: this
// executable's hidden example-server command, or $MCPSIGN_DEMO_SERVER
// (EnvServer) as getenv reads it.
func ServerCommand(getenv func(string) string) ([]string, error) {
	if s := getenv(EnvServer); s != "" {
		return strings.Fields(s), nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the mcpsign executable to run the example server: %w", err)
	}
	return []string{self, "example-server"}, nil
}

// StepList is Steps as the numbered list of 'mcpsign demo --help': two
// spaces, the number, and each continuation line under the step's text.
func StepList() string {
	var b strings.Builder
	for i, step := range Steps {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "  %d. %s", i+1, strings.ReplaceAll(step, "\n", "\n     "))
	}
	return b.String()
}
