package objupblob

import (
	"fmt"
	"strconv"
)

// escapeKey escapes key as gcsblob does before it names an object: carriage
// returns, line feeds and the slash of "../" become "__0x<hex>__", and so
// does the first underscore of anything that reads as such an escape, so
// unescapeKey (gcsblob's, on reads and lists) gives key back.
func escapeKey(key string) string {
	return hexEscape(key, func(r []rune, i int) bool {
		switch {
		case r[i] == 10 || r[i] == 13:
			return true
		case i > 1 && r[i] == '/' && r[i-1] == '.' && r[i-2] == '.':
			return true
		}
		return false
	})
}

// hexEscape replaces each rune of s for which shouldEscape, or which
// starts an escape sequence, with "__%#x__" of the rune: the Go CDK's
// escaping of blob keys.
func hexEscape(s string, shouldEscape func(s []rune, i int) bool) string {
	runes := []rune(s)
	var toEscape []int
	for i := range runes {
		if shouldEscape(runes, i) || isEscapeSequence(runes, i) {
			toEscape = append(toEscape, i)
		}
	}
	if len(toEscape) == 0 {
		return s
	}
	escaped := make([]rune, 0, len(runes)+13*len(toEscape))
	n := 0
	for i, r := range runes {
		if n < len(toEscape) && i == toEscape[n] {
			escaped = append(escaped, []rune(fmt.Sprintf("__%#x__", r))...)
			n++
			continue
		}
		escaped = append(escaped, r)
	}
	return string(escaped)
}

// isEscapeSequence reports whether r[i:] starts with "__0x<hex>__".
func isEscapeSequence(r []rune, i int) bool {
	if i+4 >= len(r) || r[i] != '_' || r[i+1] != '_' || r[i+2] != '0' || r[i+3] != 'x' {
		return false
	}
	j := i + 4
	start := j
	for j < len(r) && r[j] != '_' {
		j++
	}
	if j+1 >= len(r) || r[j+1] != '_' {
		return false
	}
	_, err := strconv.ParseInt(string(r[start:j]), 16, 32)
	return err == nil
}
