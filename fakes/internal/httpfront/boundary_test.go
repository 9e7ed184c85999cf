package httpfront

import (
	"bufio"
	"strings"
	"testing"
)

// TestMultipartBoundary reads the boundary of Content-Types in every form
// multipartBoundary takes, with the body's first bytes where the value is
// ambiguous, and refuses the rest.
func TestMultipartBoundary(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body string
		want           string // "" : refused
	}{
		{"token", "multipart/related; boundary=abc", "", "abc"},
		{"quoted", `multipart/related; boundary="a b:c"`, "", "a b:c"},
		{"quoted, with a semicolon", `multipart/related; boundary="a;b"; charset=x`, "", "a;b"},
		{"single-quoted", "multipart/related; boundary='==12=='", "", "==12=="},
		{"single-quoted, then another parameter", "multipart/related; boundary='==12=='; x=y", "", "==12=="},
		{"unquoted boundary characters", "multipart/mixed; boundary=a=b?c", "", "a=b?c"},
		{"a parameter without a value first", "multipart/related; flag; boundary='=x='", "", "=x="},
		{"quotes that belong to the token", "multipart/related; boundary='abc'", "preamble\r\n--'abc'\r\n", "'abc'"},
		{"quotes that do not", "multipart/related; boundary='abc'", "--abc\r\n", "abc"},
		{"neither delimiter in the body", "multipart/related; boundary='abc'", "nothing", "abc"},
		{"upper-case media type", "Multipart/Related; Boundary='=q='", "", "=q="},
		{"not multipart", "text/plain; boundary=abc", "", ""},
		{"no boundary", "multipart/related", "", ""},
		{"two single quotes: a token, not an empty value", "multipart/related; boundary=''", "", "''"},
		{"unterminated quote", `multipart/related; boundary="abc`, "", ""},
		{"a character RFC 2046 does not allow", "multipart/related; boundary='a<b'", "", ""},
		{"unquoted, it would end with a space", "multipart/related; boundary='=ab '", "", "'=ab '"},
		{"quoted, ending with a space, as Go's mime reads it", `multipart/related; boundary="=ab "`, "", "=ab "},
		{"71 characters", "multipart/related; boundary==" + strings.Repeat("a", 70), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := multipartBoundary(tc.ct, bufio.NewReader(strings.NewReader(tc.body)))
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("multipartBoundary(%q) = %q, %v; want %q", tc.ct, got, ok, tc.want)
			}
		})
	}
}
