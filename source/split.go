package source

import (
	"errors"
	"fmt"
	"strings"
)

// shellMeta are the characters that a POSIX shell would treat as operators
// or expansions when unquoted. mcpsign never runs a shell, so an unquoted one
// is refused rather than silently passed on as a literal: a user who wrote
// `server > log` or `server $TOKEN` expected a shell and would get a
// surprise.
const shellMeta = "|&;<>()$`"

// SplitCommand splits a command line into words the way a POSIX shell does,
// without running one and without any expansion:
//
//   - unquoted blanks (space, tab, newline) separate words;
//   - 'single quotes' keep everything literally up to the next single quote;
//   - "double quotes" keep everything literally except \" \\ \$ \` and
//     backslash-newline (removed);
//   - outside quotes a backslash keeps the next character literally, and
//     backslash-newline is removed;
//   - quotes can be adjacent to other text ("a"'b'c is one word abc), and ”
//     or "" is an empty word.
//
// Unquoted shell operators and expansions (| & ; < > ( ) $ `) and a # that
// starts a word (a comment in a shell) are refused with an error, as are an
// unterminated quote and a trailing backslash. The result has at least one
// word unless err is non-nil.
func SplitCommand(line string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool // cur holds a word in progress (possibly empty, from "")
	)
	endWord := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			endWord()
		case c == '\\':
			if i+1 >= len(line) {
				return nil, errors.New("command line ends with a backslash")
			}
			i++
			if line[i] == '\n' {
				continue // line continuation: removed, does not start a word
			}
			cur.WriteByte(line[i])
			inWord = true
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote at offset %d", i)
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			start := i
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					switch line[i+1] {
					case '"', '\\', '$', '`':
						i++
					case '\n':
						i++
						continue
					}
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated double quote at offset %d", start)
			}
			inWord = true
		case strings.IndexByte(shellMeta, c) >= 0:
			return nil, fmt.Errorf("unquoted '%c' at offset %d: mcpsign does not run a shell; quote it, or give the command after --", c, i)
		case c == '#' && !inWord:
			return nil, fmt.Errorf("unquoted # at offset %d would start a comment in a shell; quote it, or give the command after --", i)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	endWord()
	if len(words) == 0 {
		return nil, errors.New("empty command line")
	}
	return words, nil
}

// QuoteCommand is the inverse of [SplitCommand]: it joins words into a
// command line that SplitCommand splits back into the same words. Words made
// only of safe characters are left bare; any other word is single-quoted.
func QuoteCommand(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteWord(w))
	}
	return b.String()
}

func quoteWord(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
