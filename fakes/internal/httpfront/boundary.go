package httpfront

import (
	"bufio"
	"bytes"
	"mime"
	"strings"
)

// maxBoundary is the longest boundary RFC 2046 allows.
const maxBoundary = 70

// boundaryPeek is how much of a multipart body the fake reads ahead to
// choose between two readings of an ambiguous boundary parameter.
const boundaryPeek = 4 << 10

// multipartBoundary returns the boundary of a multipart Content-Type, whose
// parts the caller then reads from body: only for an ambiguous value does
// it look ahead in body, up to boundaryPeek bytes, consuming nothing. It
// takes every form RFC 2046 allows, and those clients send:
//
//   - a quoted string, boundary="a b=c", and a token, boundary=abc (RFC 2045);
//   - a value in single quotes, boundary='===1234==', as Python's HTTP stack
//     (apitools, under gcloud and gsutil) writes it with %r;
//   - an unquoted value made of any of RFC 2046's boundary characters,
//     boundary====1234==, although '=' and the others outside a token should
//     have been quoted.
//
// A single quote is also a token character, so boundary='abc' may name the
// boundary abc or 'abc': the one whose delimiter line the body's first
// bytes hold wins, abc when neither is found. A value that is not a valid
// token or quoted string must be a boundary RFC 2046 allows (1 to 70 of its
// characters). It reports false when the Content-Type is not multipart or
// names no such boundary.
func multipartBoundary(contentType string, body *bufio.Reader) (string, bool) {
	mt, rest, _ := strings.Cut(contentType, ";")
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(mt)), "multipart/") {
		return "", false
	}
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if b := params["boundary"]; b != "" && !quotedIn(b, '\'') {
			return b, true
		}
	}
	raw, ok := boundaryParam(rest)
	if !ok {
		return "", false
	}
	var cands []string
	if quotedIn(raw, '\'') {
		cands = append(cands, raw[1:len(raw)-1])
	}
	cands = append(cands, raw)
	var valid []string
	for _, c := range cands {
		if validBoundary(c) {
			valid = append(valid, c)
		}
	}
	switch len(valid) {
	case 0:
		return "", false
	case 1:
		return valid[0], true
	}
	head, _ := body.Peek(boundaryPeek)
	first, at := valid[0], -1
	for _, c := range valid {
		if i := delimiterAt(head, c); i >= 0 && (at < 0 || i < at) {
			first, at = c, i
		}
	}
	return first, true
}

// boundaryParam returns the raw value of the boundary parameter in params
// (what follows the media type's ';'): a double-quoted value unquoted (its
// backslash escapes undone), any other value as written, up to the next
// ';'.
func boundaryParam(params string) (string, bool) {
	for {
		params = strings.TrimLeft(params, " \t;")
		if params == "" {
			return "", false
		}
		k, v, ok := strings.Cut(params, "=")
		if !ok {
			return "", false
		}
		if i := strings.IndexByte(k, ';'); i >= 0 { // a parameter without a value
			params = params[i+1:]
			continue
		}
		v = strings.TrimLeft(v, " \t")
		var val string
		if strings.HasPrefix(v, `"`) {
			var sb strings.Builder
			i := 1
			for ; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' && i+1 < len(v) {
					i++
				}
				sb.WriteByte(v[i])
			}
			if i == len(v) {
				return "", false
			}
			val, params = sb.String(), v[i+1:]
		} else {
			val, params, _ = strings.Cut(v, ";")
			val = strings.TrimRight(val, " \t")
		}
		if strings.EqualFold(strings.TrimSpace(k), "boundary") {
			return val, true
		}
	}
}

// quotedIn reports whether s is wrapped in the quote q.
func quotedIn(s string, q byte) bool { return len(s) >= 2 && s[0] == q && s[len(s)-1] == q }

// validBoundary reports whether b is a boundary RFC 2046 allows: 1 to 70 of
// its characters, not ending with a space.
func validBoundary(b string) bool {
	if b == "" || len(b) > maxBoundary || b[len(b)-1] == ' ' {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("'()+_,-./:=? ", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// delimiterAt returns where the delimiter line of boundary b starts in
// head, or -1: "--b" at the start of the body or of a line, followed by
// the end of the line (or by "--", the closing delimiter).
func delimiterAt(head []byte, b string) int {
	d := "--" + b
	for off := 0; off < len(head); {
		i := bytes.Index(head[off:], []byte(d))
		if i < 0 {
			return -1
		}
		i += off
		after := head[i+len(d):]
		atLine := i == 0 || head[i-1] == '\n'
		endLine := len(after) == 0 || after[0] == '\r' || after[0] == '\n' || after[0] == ' ' || after[0] == '\t' || bytes.HasPrefix(after, []byte("--"))
		if atLine && endLine {
			return i
		}
		off = i + 1
	}
	return -1
}
