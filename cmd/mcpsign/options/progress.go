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
