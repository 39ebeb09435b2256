//go:build !unix

package proxycmd

import "os"

// PollableStdio returns os.Stdin and os.Stdout: only Unix systems get
// pollable standard streams.
func PollableStdio() (stdin, stdout *os.File, restore func()) {
	return os.Stdin, os.Stdout, func() {}
}
