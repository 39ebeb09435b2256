package proxy

import (
	"bufio"
	"errors"
	"io"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// maxStderrLine is the longest stretch of a server's stderr escaped and
// written at once; a longer line is cut into pieces of this size.
const maxStderrLine = 16 << 10

// copyEscapedLines copies r to w line by line, every line escaped with
// textsafe.EscapeKeepLayout and prefixed. It returns at the end of r; write
// errors are ignored (a failing log must not stop the drain).
func copyEscapedLines(w io.Writer, r io.Reader, prefix string) {
	br := bufio.NewReaderSize(r, maxStderrLine)
	for {
		frag, err := br.ReadSlice('\n')
		if len(frag) > 0 {
			w.Write([]byte(prefix + textsafe.EscapeKeepLayout(string(frag))))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
