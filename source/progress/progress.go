// Package progress shows what a live listing of a server is doing, through
// the source.Options.Progress hook: one line a step (Lines), a spinner at a
// terminal (Terminal), or, elsewhere, one line when the listing is slow
// (SlowNotice); For picks one as a command line's flags say. Nothing of it
// is written but to the writer it is given.
package progress

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/mcpsign/mcpsign/source"
)

// Func is a source.Options.Progress hook.
type Func = func(stage string, page int)

// Lines returns a hook that writes one line to w for every stage and page
// of a listing.
func Lines(w io.Writer) Func {
	return func(stage string, page int) {
		if page > 0 {
			fmt.Fprintf(w, "mcpsign: %s page %d\n", stage, page)
		} else {
			fmt.Fprintf(w, "mcpsign: %s\n", stage)
		}
	}
}

// terminalDelay is how long a listing runs before the spinner shows: a
// quick one (a snapshot file, a local server) shows nothing.
const terminalDelay = 300 * time.Millisecond

// Terminal returns a hook that shows what a live listing is doing
// (starting the server, waiting for initialize, page N of a kind) as a
// spinner on w, which must be a terminal, and a function that clears it.
// Call done exactly once, when the listing ended.
func Terminal(w io.Writer) (progress Func, done func()) {
	var (
		mu      sync.Mutex
		bar     *progressbar.ProgressBar
		pending string // what to show once the delay is over
		ended   bool
	)
	timer := time.AfterFunc(terminalDelay, func() {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			return
		}
		bar = progressbar.NewOptions(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetDescription(pending),
		)
		bar.RenderBlank()
	})
	progress = func(stage string, page int) {
		mu.Lock()
		defer mu.Unlock()
		pending = stageText(stage, page)
		if bar != nil {
			bar.Describe(pending)
		}
	}
	done = func() {
		timer.Stop()
		mu.Lock()
		defer mu.Unlock()
		ended = true
		if bar != nil {
			bar.Finish()
			bar = nil
		}
	}
	return progress, done
}

// SlowNoticeDelay is how long a listing runs, when stderr is not a
// terminal, before SlowNotice's line says what it waits for: a hung server
// is not met with the time limit's silence.
const SlowNoticeDelay = 5 * time.Second

// SlowNotice returns a hook for a writer that is not a terminal: when the
// listing still runs after delay (SlowNoticeDelay), it writes one line to w
// saying what it waits for and the time limit, with setting (what sets the
// limit, e.g. a flag's name) after it, and nothing more. Only a live
// listing has stages: a source that reports none gets no line. Call done
// exactly once, when the listing ended.
func SlowNotice(w io.Writer, limit, delay time.Duration, setting string) (progress Func, done func()) {
	var (
		mu      sync.Mutex
		timer   *time.Timer
		pending string
		ended   bool
	)
	progress = func(stage string, page int) {
		mu.Lock()
		defer mu.Unlock()
		pending = stageText(stage, page)
		if timer != nil || ended {
			return
		}
		timer = time.AfterFunc(delay, func() {
			mu.Lock()
			defer mu.Unlock()
			if !ended {
				fmt.Fprintf(w, "%s: no answer after %s (the limit is %s, %s)\n", pending, delay, limit, setting)
			}
		})
	}
	done = func() {
		mu.Lock()
		defer mu.Unlock()
		ended = true
		if timer != nil {
			timer.Stop()
		}
	}
	return progress, done
}

// Display is how a listing's progress is shown (For).
type Display struct {
	// Verbose shows one line a step (Lines), whatever Quiet says.
	Verbose bool
	// Quiet shows nothing.
	Quiet bool
	// Terminal says the writer is a terminal: a spinner (Terminal); on
	// any other writer one line when the listing is slow (SlowNotice),
	// saying the time limit Limit and Setting, what sets it.
	Terminal bool
	Limit    time.Duration
	Setting  string
}

// For returns the hook that shows a listing's progress on w as d says
// (nil: none), and the function to call exactly once, when the listing
// ended.
func For(w io.Writer, d Display) (progress Func, done func()) {
	switch {
	case d.Verbose:
		return Lines(w), func() {}
	case d.Quiet:
		return nil, func() {}
	case d.Terminal:
		return Terminal(w)
	}
	return SlowNotice(w, d.Limit, SlowNoticeDelay, d.Setting)
}

// stageText says what a listing stage waits for.
func stageText(stage string, page int) string {
	switch stage {
	case source.StageStart:
		return "mcpsign: starting the server"
	case source.StageInitialize:
		return "mcpsign: waiting for the server to answer initialize"
	}
	if page > 0 {
		return fmt.Sprintf("mcpsign: %s, page %d", stage, page)
	}
	return "mcpsign: " + stage
}
