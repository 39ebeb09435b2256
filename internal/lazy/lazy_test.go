package lazy_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mcpsign/mcpsign/internal/lazy"
)

var builds int

func buildTable() map[string]int { builds++; return map[string]int{"a": 1} }

var (
	table  = lazy.New(buildTable)
	nameRe = lazy.NewRegexp(`^[a-z]+$`)
)

func TestValueBuildsOnce(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if table.Get()["a"] != 1 {
				t.Error("wrong value")
			}
		})
	}
	wg.Wait()
	if builds != 1 {
		t.Fatalf("built %d times, want 1", builds)
	}
}

func TestRegexp(t *testing.T) {
	for s, want := range map[string]bool{"abc": true, "aB": false, "": false} {
		if got := nameRe.MatchString(s); got != want {
			t.Errorf("MatchString(%q) = %v, want %v", s, got, want)
		}
	}
	if nameRe.Get() != nameRe.Get() {
		t.Error("compiled twice")
	}
}

func TestInvalidPanicsOnUse(t *testing.T) {
	bad := lazy.NewRegexp(`(`)
	defer func() {
		if recover() == nil {
			t.Error("an invalid expression did not panic on use")
		}
	}()
	bad.Get()
}

var (
	errParent = errors.New("parent")
	errChild  = lazy.Wrap(errParent, "child")
)

func TestWrap(t *testing.T) {
	want := fmt.Errorf("%w: child", errParent)
	if errChild.Error() != want.Error() {
		t.Errorf("Error() = %q, want %q", errChild.Error(), want.Error())
	}
	if !errors.Is(errChild, errParent) || errors.Unwrap(errChild) != errParent {
		t.Error("does not wrap its parent")
	}
}
