package sign

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// ErrPasswordMismatch: the password asked for twice (PromptPassword with
// confirm) was not the same.
var ErrPasswordMismatch = errors.New("the passwords do not match")

// PromptPassword asks for the password of what (a key file's name) on the
// terminal tty, the prompt on w, without echo; with confirm (a new key) it
// asks again and refuses two passwords that differ (ErrPasswordMismatch).
// The second copy is cleared; so is the first on a mismatch.
func PromptPassword(tty *os.File, w io.Writer, what string, confirm bool) ([]byte, error) {
	fmt.Fprintf(w, "Password for %s: ", what)
	pw, err := term.ReadPassword(int(tty.Fd()))
	fmt.Fprintln(w)
	if err != nil {
		return nil, fmt.Errorf("reading the password: %w", err)
	}
	if !confirm {
		return pw, nil
	}
	fmt.Fprintf(w, "Password again: ")
	again, err := term.ReadPassword(int(tty.Fd()))
	fmt.Fprintln(w)
	if err != nil {
		return nil, fmt.Errorf("reading the password: %w", err)
	}
	same := bytes.Equal(pw, again)
	clear(again)
	if !same {
		clear(pw)
		return nil, ErrPasswordMismatch
	}
	return pw, nil
}
