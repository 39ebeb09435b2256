// Package procgroup starts an MCP server as the leader of its own process
// group, with plain pipes for its standard streams, and signals or watches
// the whole group, so that neither the server nor any child it started
// outlives mcpsign. The source (listing a stdio server) and the proxy share
// it.
package procgroup

import (
	"errors"
	"os"
	"os/exec"
)

// Piped is a started process and mcpsign's ends of its standard streams.
type Piped struct {
	Cmd    *exec.Cmd
	Stdin  *os.File // write end of the server's stdin
	Stdout *os.File // read end of the server's stdout
	Stderr *os.File // read end of the server's stderr
}

// Start starts argv in a new process group with env added to the inherited
// environment (when not nil) and dir as its working directory (when not
// empty). The pipes are plain os.Pipe files, not exec's goroutine-backed
// ones, so that Wait returns when the process exits even if a child of it
// still holds a pipe, and a pending read is unblocked by closing our end.
func Start(argv []string, env []string, dir string) (_ *Piped, err error) {
	if len(argv) == 0 {
		return nil, errors.New("no server command given")
	}
	var toClose []*os.File
	defer func() {
		if err != nil {
			for _, f := range toClose {
				f.Close()
			}
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			toClose = append(toClose, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// The child has its ends now; ours must go so that EOF can be seen.
	inR.Close()
	outW.Close()
	errW.Close()
	return &Piped{Cmd: cmd, Stdin: inW, Stdout: outR, Stderr: errR}, nil
}
