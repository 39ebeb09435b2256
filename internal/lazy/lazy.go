// Package lazy holds package-level values that are built on first use
// instead of at process start, so that a package's initializer does no work
// (docs/PERFORMANCE.md, "Start-up: no work in package initializers").
//
// Declared at package level with a constant expression or a named function,
//
//	var nameRe = lazy.NewRegexp(`^[a-z]+$`)
//	var table = lazy.New(buildTable)
//
// the variable is static data: the compiler emits no initialization code for
// it, where regexp.MustCompile, a map literal or sync.OnceValue would run (and
// allocate) at every start of every program that links the package. The
// value is built once, on the first Get, and is safe for concurrent use.
package lazy

import (
	"regexp"
	"sync"
)

// Value is a T built by a function on first use.
type Value[T any] struct {
	once  sync.Once
	build func() T
	v     T
}

// New returns a Value built by build on its first Get. Pass a named
// function: a function literal makes the declaration itself code that runs
// at start.
func New[T any](build func() T) *Value[T] { return &Value[T]{build: build} }

// Get returns the value, building it on the first call.
func (l *Value[T]) Get() T {
	l.once.Do(func() { l.v = l.build() })
	return l.v
}

// Regexp is a regular expression compiled on first use.
type Regexp struct {
	once sync.Once
	expr string
	re   *regexp.Regexp
}

// NewRegexp returns expr, to be compiled (regexp.MustCompile) on its first
// use: expr must be a valid expression, as for MustCompile.
func NewRegexp(expr string) *Regexp { return &Regexp{expr: expr} }

// Get returns the compiled expression.
func (r *Regexp) Get() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re
}

// MatchString reports whether s contains any match of the expression.
func (r *Regexp) MatchString(s string) bool { return r.Get().MatchString(s) }

// Wrap returns an error that wraps err with text, as
// fmt.Errorf("%w: "+text, err) would, for a package-level sentinel: declared
// at package level it is static data, where fmt.Errorf would format (and
// allocate) at start. Its message is made when asked for.
func Wrap(err error, text string) error { return &wrapped{err: err, text: text} }

type wrapped struct {
	err  error
	text string
}

func (w *wrapped) Error() string { return w.err.Error() + ": " + w.text }
func (w *wrapped) Unwrap() error { return w.err }
