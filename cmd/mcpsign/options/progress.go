package options

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/mcpsign/mcpsign/source"
)

// progressDelay is how long a listing runs before the spinner shows: a
// quick one (a snapshot file, a local server) shows nothing.
const progressDelay = 300 * time.Millisecond

// TerminalProgress returns a source.Options.Progress hook that shows what a
// live listing is doing (starting the server, waiting for initialize, page
// N of a kind) as a spinner on w, which must be a terminal, and a function
// that clears it. Call done exactly once, when the listing ended.
func TerminalProgress(w io.Writer) (progress func(stage string, page int), done func()) {
	var (
		mu      sync.Mutex
		bar     *progressbar.ProgressBar
		pending string // what to show once the delay is over
		ended   bool
	)
	timer := time.AfterFunc(progressDelay, func() {
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

// slowNoticeDelay is how long a listing runs, when stderr is not a
// terminal, before one line on stderr says what it waits for: a hung server
// is not met with the time limit's silence.
const slowNoticeDelay = 5 * time.Second

// SlowNotice returns a source.Options.Progress hook for a stderr that is not
// a terminal: when the listing still runs after a few seconds, it writes
// one line to w saying what it waits for and the time limit, and nothing
// more. Call done exactly once, when the listing ended.
func SlowNotice(w io.Writer, limit time.Duration) (progress func(stage string, page int), done func()) {
	return slowNotice(w, limit, slowNoticeDelay)
}

func slowNotice(w io.Writer, limit, delay time.Duration) (progress func(stage string, page int), done func()) {
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
		// From the first stage on: only a live listing has stages.
		timer = time.AfterFunc(delay, func() {
			mu.Lock()
			defer mu.Unlock()
			if !ended {
				fmt.Fprintf(w, "%s: no answer after %s (the limit is %s, --timeout)\n", pending, delay, limit)
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
