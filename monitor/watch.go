package monitor

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/verify"
)

// Errors of Setup.Prepare, for a caller to explain.
var (
	// ErrNothingWatched: neither an identity nor a key to watch.
	ErrNothingWatched = errors.New("nothing to watch")
	// ErrNoState: there is no state file, and no new one was asked for.
	ErrNoState = errors.New("no state file")
	// ErrStateExists: a new state was asked for where one exists.
	ErrStateExists = errors.New("it already holds a state")
	// ErrSeveralLogs: no log was named and the trusted root has more than
	// one (or none).
	ErrSeveralLogs = errors.New("no log named")
	// ErrReport: a finding could not be reported; the state was not
	// written, so that the next run reports it.
	ErrReport = errors.New("writing the findings")
)

// Setup is what a command or a host chooses for a watch: what to watch,
// what was released, the state, the log.
type Setup struct {
	// Identity is the watched certificate identity (zero: none), matched
	// as verify's sigstore method does.
	Identity verify.Identity
	// PublicKey is the watched key (nil: none).
	PublicKey crypto.PublicKey
	// Identities are more watched certificate identities, and KeyIDs more
	// watched keys ("sha256:HEX"): those of a policy's servers
	// (policy.File.Watchlist), watched with Identity and PublicKey.
	Identities []verify.Identity
	KeyIDs     []string
	// ReleasedDirs are directories of released bundles; ReleasedDigests
	// released artifact digests ("sha256:HEX").
	ReleasedDirs, ReleasedDigests []string
	// StatePath is the state file; with Init it must not exist yet and
	// the run creates it, reading from FromIndex when that is not
	// negative.
	StatePath string
	Init      bool
	FromIndex int64
	// LogURL is the log to read; empty: the state's, else the trusted
	// root's only log.
	LogURL          string
	TrustedMaterial root.TrustedMaterial
	// HTTPClient reads the log (nil: a default client), with Timeout per
	// request when it is not zero.
	HTTPClient *http.Client
	Timeout    time.Duration
	// OnSkipped, when set, is told of each file of ReleasedDirs that
	// released nothing and was skipped, and why (Released.AddDir).
	OnSkipped func(SkippedFile)
}

// Prepare checks s and loads what it names: the Options and the previous
// state (nil for a first run) for Run or Watch. The bundles of
// ReleasedDirs are verified (Released.AddBundle) under the watched
// signers and the trusted material.
func (s Setup) Prepare(ctx context.Context) (Options, *State, error) {
	opts := Options{TrustedMaterial: s.TrustedMaterial, LogURL: s.LogURL, HTTPClient: s.HTTPClient}
	if s.PublicKey != nil {
		kid, err := verify.KeyID(s.PublicKey)
		if err != nil {
			return opts, nil, fmt.Errorf("the watched key: %w", err)
		}
		opts.KeyIDs = []string{kid}
	}
	for _, kid := range s.KeyIDs {
		if !slices.Contains(opts.KeyIDs, kid) {
			opts.KeyIDs = append(opts.KeyIDs, kid)
		}
	}
	ids := slices.Clone(s.Identities)
	if s.Identity != (verify.Identity{}) {
		ids = append(ids, s.Identity)
	}
	if len(ids) > 0 {
		var err error
		if opts.Identities, err = verify.NewCertificateMatcher(verify.MethodSigstore, ids); err != nil {
			return opts, nil, err
		}
	}
	if opts.Identities == nil && opts.KeyIDs == nil {
		return opts, nil, ErrNothingWatched
	}
	var err error
	if opts.Released, err = NewReleased(ReleaseCheck{TrustedMaterial: s.TrustedMaterial, Identities: ids, KeyIDs: opts.KeyIDs}); err != nil {
		return opts, nil, err
	}
	for _, d := range s.ReleasedDirs {
		_, skipped, err := opts.Released.AddDir(ctx, d)
		if s.OnSkipped != nil {
			for _, sk := range skipped {
				s.OnSkipped(sk)
			}
		}
		if err != nil {
			return opts, nil, fmt.Errorf("released bundles %s: %w", d, err)
		}
	}
	for _, d := range s.ReleasedDigests {
		if err := opts.Released.AddDigest(d); err != nil {
			return opts, nil, fmt.Errorf("released digest: %w", err)
		}
	}
	prev, err := OpenState(s.StatePath, s.Init)
	if err != nil {
		return opts, nil, err
	}
	if s.Init && s.FromIndex >= 0 {
		n := uint64(s.FromIndex)
		opts.StartIndex = &n
	}
	if err := ChooseLog(&opts, prev); err != nil {
		return opts, nil, err
	}
	if s.Timeout > 0 {
		c := &http.Client{}
		if s.HTTPClient != nil {
			*c = *s.HTTPClient
		}
		c.Timeout = s.Timeout
		opts.HTTPClient = c
	}
	return opts, prev, nil
}

// OpenState reads the state at path for a run. With create, it must not
// exist (a first run, which creates it); without, it must.
func OpenState(path string, create bool) (*State, error) {
	st, err := ReadState(path)
	switch {
	case err == nil && create:
		return nil, fmt.Errorf("%s exists: %w", path, ErrStateExists)
	case err == nil:
		return st, nil
	case errors.Is(err, fs.ErrNotExist) && create:
		return nil, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w %s", ErrNoState, path)
	}
	return nil, err
}

// ChooseLog sets opts.LogURL when it is empty: the URL of the state, else
// the trusted root's only log.
func ChooseLog(opts *Options, prev *State) error {
	if opts.LogURL == "" && prev != nil {
		opts.LogURL = prev.Log.URL
	}
	if opts.LogURL != "" {
		return nil
	}
	urls := TrustedLogURLs(opts.TrustedMaterial)
	if len(urls) != 1 {
		return fmt.Errorf("%w: the trusted root has %d transparency logs", ErrSeveralLogs, len(urls))
	}
	opts.LogURL = urls[0]
	return nil
}

// WatchOptions configure Watch.
type WatchOptions struct {
	// StatePath is where each run's new state is written (atomically,
	// only after the whole range was checked).
	StatePath string
	// Follow keeps running every Interval until ctx ends; otherwise Watch
	// runs once.
	Follow   bool
	Interval time.Duration
	// Reported returns the first error of reporting the findings (nil:
	// none); a run whose findings were not all reported writes no state.
	Reported func() error
	// OnRun receives each run's result once its state is written.
	OnRun func(*Result)
	// OnError receives, with Follow, a failed run's error before the next
	// run (an inconsistent log ends Watch instead).
	OnError func(error)
	// BeforeRun, when set, is called before each run, e.g. to add to
	// opts.Released what a registry lists now (ReleasedFromRegistry). Its
	// error fails that run as a log error does.
	BeforeRun func(ctx context.Context) error
}

// Watch runs Run from prev, writing each run's state, once or until ctx
// ends, and returns the number of alerts. An inconsistent log ends it with
// an error wrapping ErrInconsistent, a registry's bundle that does not
// verify with one wrapping ErrUnverifiedListing (no state written for
// either); without Follow, so does any failed run. A cancelled ctx ends a Follow with no error.
func Watch(ctx context.Context, opts Options, prev *State, w WatchOptions) (alerts int, err error) {
	for {
		var res *Result
		var err error
		if w.BeforeRun != nil {
			err = w.BeforeRun(ctx)
		}
		if err == nil {
			res, err = Run(ctx, opts, prev)
		}
		if res != nil {
			alerts += res.Alerts
		}
		if err == nil && w.Reported != nil {
			if rerr := w.Reported(); rerr != nil {
				return alerts, fmt.Errorf("%w: %w (state not written)", ErrReport, rerr)
			}
		}
		if err == nil {
			if err = WriteState(w.StatePath, res.State); err == nil {
				prev = res.State
				if w.OnRun != nil {
					w.OnRun(res)
				}
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrInconsistent), errors.Is(err, ErrUnverifiedListing):
			return alerts, err
		case ctx.Err() != nil && w.Follow:
			return alerts, nil
		case !w.Follow:
			return alerts, err
		case w.OnError != nil:
			w.OnError(err)
		}
		if !w.Follow {
			return alerts, nil
		}
		opts.StartIndex = nil
		select {
		case <-ctx.Done():
			return alerts, nil
		case <-time.After(w.Interval):
		}
	}
}
