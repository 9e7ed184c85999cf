package retrytest

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/httpcode"
)

// The instructions of a retry test: their kinds and how they are parsed.

// instrKind is a kind of retry test instruction.
type instrKind uint8

const (
	// instrStatus, "return-N": the call fails at once with HTTP status N
	// (over gRPC, the code the testbench maps N to).
	instrStatus instrKind = iota
	// instrReset, "return-reset-connection": over HTTP the server resets
	// the TCP connection; over gRPC the call fails with UNAVAILABLE.
	instrReset
	// instrBroken, "return-broken-stream" (after 4 bytes) and
	// "return-broken-stream-after-NK": the response stops after that many
	// bytes of content; over HTTP the connection is closed, over gRPC the
	// read fails with UNAVAILABLE.
	instrBroken
	// instrStatusAfter, "return-N-after-MK": an upload that reaches M KiB
	// keeps its first M KiB and fails with status N.
	instrStatusAfter
	// instrStall, "stall-for-Ss-after-MK": the request or response waits S
	// seconds once M KiB have gone through.
	instrStall
	// instrRedirect, "redirect-send-token-T": a BidiWriteObject stream
	// fails once its first message is read, with codes.Aborted and a
	// BidiWriteObjectRedirectedError that carries the routing token T.
	instrRedirect
	// instrRedirectHandle, "redirect-send-handle-and-token-T": an
	// appendable write fails as soon as its first message opened the
	// object (before its data), with codes.Aborted and a
	// BidiWriteObjectRedirectedError that carries T, the write handle and
	// the generation.
	instrRedirectHandle
	// instrExpectToken, "redirect-expect-token-T": consumed by a
	// BidiWriteObject call whose x-goog-request-params carry
	// routing_token=T; a call without it leaves it in place.
	instrExpectToken
)

// instruction is one parsed retry test instruction.
type instruction struct {
	kind   instrKind
	status int           // instrStatus, instrStatusAfter: the HTTP status
	bytes  int64         // instrBroken, instrStatusAfter, instrStall
	stall  time.Duration // instrStall
	token  string        // the redirect instructions' routing token
	seq    int           // its position among the test's instructions
}

var (
	reStatus      = regexp.MustCompile(`^return-([0-9]{3})$`)
	reStatusAfter = regexp.MustCompile(`^return-([0-9]{3})-after-([0-9]+)K$`)
	reBrokenAfter = regexp.MustCompile(`^return-broken-stream-after-([0-9]+)K$`)
	reStall       = regexp.MustCompile(`^stall-for-([0-9]+)s-after-([0-9]+)K$`)
	reRedirect    = regexp.MustCompile(`^redirect-send-token-([a-z-]+)$`)
	reRedirectH   = regexp.MustCompile(`^redirect-send-handle-and-token-([a-z-]+)$`)
	reExpectToken = regexp.MustCompile(`^redirect-expect-token-([a-z-]+)$`)
	// Instructions the testbench knows and the fake does not implement,
	// for features the fake does not have.
	reUnsupported = regexp.MustCompile(`^(return-broken-stream-final-chunk-after-[0-9]+B|return-[0-9]+-if-dp-enforced|return-unreachable-buckets-.*)$`)
)

// brokenStreamBytes is how much a plain "return-broken-stream" lets
// through, as in the testbench.
const brokenStreamBytes = 4

// maxStall bounds the stall an instruction may ask for.
const maxStall = 10 * time.Minute

// parseInstruction parses one instruction. An instruction the testbench
// knows but the fake does not implement is a kindUnimplemented error, any
// other it cannot parse a kindInvalid one.
func parseInstruction(s string) (instruction, error) {
	switch {
	case s == "return-reset-connection":
		return instruction{kind: instrReset}, nil
	case s == "return-broken-stream":
		return instruction{kind: instrBroken, bytes: brokenStreamBytes}, nil
	}
	if m := reStatus.FindStringSubmatch(s); m != nil {
		st, _ := strconv.Atoi(m[1])
		if st < 400 {
			return instruction{}, store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: the status must be 400 or above", s)
		}
		return instruction{kind: instrStatus, status: st}, nil
	}
	if m := reStatusAfter.FindStringSubmatch(s); m != nil {
		st, _ := strconv.Atoi(m[1])
		kib, err := strconv.ParseInt(m[2], 10, 32)
		if st < 400 || err != nil || kib == 0 {
			return instruction{}, store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: want a status of 400 or above after 1 KiB or more", s)
		}
		return instruction{kind: instrStatusAfter, status: st, bytes: kib << 10}, nil
	}
	if m := reBrokenAfter.FindStringSubmatch(s); m != nil {
		kib, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil || kib == 0 {
			return instruction{}, store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: want 1 KiB or more", s)
		}
		return instruction{kind: instrBroken, bytes: kib << 10}, nil
	}
	if m := reStall.FindStringSubmatch(s); m != nil {
		sec, err1 := strconv.ParseInt(m[1], 10, 32)
		kib, err2 := strconv.ParseInt(m[2], 10, 32)
		d := time.Duration(sec) * time.Second
		if err1 != nil || err2 != nil || d > maxStall {
			return instruction{}, store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: want at most %v after at most 2^31 KiB", s, maxStall)
		}
		return instruction{kind: instrStall, bytes: kib << 10, stall: d}, nil
	}
	for _, r := range []struct {
		re   *regexp.Regexp
		kind instrKind
	}{{reRedirect, instrRedirect}, {reRedirectH, instrRedirectHandle}, {reExpectToken, instrExpectToken}} {
		if m := r.re.FindStringSubmatch(s); m != nil {
			return instruction{kind: r.kind, token: m[1]}, nil
		}
	}
	if reUnsupported.MatchString(s) {
		return instruction{}, store.Errorf(store.KindUnimplemented, "fakes: retry test instruction %q is not implemented by the fake", s)
	}
	return instruction{}, store.Errorf(store.KindInvalid, "fakes: retry test instruction %q is not one the retry test API knows", s)
}

// instructionText is how error messages name an instruction.
func instructionText(in instruction) string {
	switch in.kind {
	case instrStatus:
		return fmt.Sprintf("return-%d", in.status)
	case instrReset:
		return "return-reset-connection"
	case instrBroken:
		return fmt.Sprintf("return-broken-stream after %d bytes", in.bytes)
	case instrStatusAfter:
		return fmt.Sprintf("return-%d-after-%dK", in.status, in.bytes>>10)
	case instrRedirect:
		return "redirect-send-token-" + in.token
	case instrRedirectHandle:
		return "redirect-send-handle-and-token-" + in.token
	case instrExpectToken:
		return "redirect-expect-token-" + in.token
	}
	return fmt.Sprintf("stall-for-%ds-after-%dK", int64(in.stall/time.Second), in.bytes>>10)
}

// grpcCode is the gRPC code a status instruction fails a gRPC call with:
// httpcode.Answer's, except 408, which the testbench maps to Unavailable;
// false for a status with no gRPC equivalent.
func grpcCode(httpStatus int) (codes.Code, bool) {
	if httpStatus == http.StatusRequestTimeout { // the testbench's choice, pending a better one
		return codes.Unavailable, true
	}
	return httpcode.Answer(httpStatus)
}
