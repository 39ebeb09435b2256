package options

import (
	"io"

	"github.com/mcpsign/mcpsign/source/progress"
)

// TerminalProgress is progress.Terminal (registry.go calls it by this name).
func TerminalProgress(w io.Writer) (func(stage string, page int), func()) {
	return progress.Terminal(w)
}
