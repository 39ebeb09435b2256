//go:build unix

package boundedfile

import (
	"os"
	"syscall"
)

// openFlags opens without blocking on a FIFO that has no writer yet;
// O_NONBLOCK changes nothing for regular files, and Go's runtime poller
// still waits for a pipe's data when there is a writer.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
