package diff

import "github.com/mcpsign/mcpsign/internal/textdiff"

// TextOptions bound a text diff (internal/textdiff, mcpsign's one text
// diff). The zero value takes the defaults: 3 lines of context, 20000 lines
// and an edit distance of 1000 compared, 64 KiB of output.
type TextOptions = textdiff.Options

// Text returns the line-based unified diff of a and b: hunks
// ("@@ -l,n +l,n @@") of context, removed and added lines, without file
// headers; "" when a and b are equal. Lines are kept raw: escape them
// before showing them. truncated reports that the output was cut at
// opts.MaxBytes.
func Text(a, b string, opts TextOptions) (unified string, truncated bool) {
	return textdiff.Unified(a, b, opts)
}
