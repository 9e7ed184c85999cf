package uploadertest_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"sync"
	"testing"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader"
)

// sentLog records every write message a client sends, as the codec sees it.
type sentLog struct {
	mu   sync.Mutex
	msgs []sentMsg
}

type sentMsg struct {
	method  string
	offset  int64
	size    int
	parts   int
	hasCRC  bool
	crcOK   bool
	finish  bool
	hasSpec bool
}

func (l *sentLog) add(method string, m any) {
	wm, ok := m.(*wire.WriteMsg)
	if !ok {
		return
	}
	var data []byte
	if wm.Data != nil {
		data = *wm.Data
	}
	if len(wm.More) > 0 {
		data = append([]byte(nil), data...)
		for _, p := range wm.More {
			data = append(data, *p.Data...)
		}
	}
	s := sentMsg{method: method, size: len(data), parts: 1 + len(wm.More), hasCRC: wm.HasCRC,
		crcOK: wm.HasCRC && wm.CRC32C == crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))}
	switch r := wm.Req.(type) {
	case *wire.WriteObjectRequest:
		s.offset, s.finish, s.hasSpec = r.GetWriteOffset(), r.GetFinishWrite(), r.GetWriteObjectSpec() != nil
	case *wire.BidiWriteObjectRequest:
		s.offset, s.finish = r.GetWriteOffset(), r.GetFinishWrite()
	}
	l.mu.Lock()
	l.msgs = append(l.msgs, s)
	l.mu.Unlock()
}

func (l *sentLog) take() []sentMsg {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.msgs
	l.msgs = nil
	return m
}

// options installs the log on a client's connection.
func (l *sentLog) options() []option.ClientOption {
	return []option.ClientOption{
		option.WithGRPCDialOption(grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			l.add(method, req)
			return invoker(ctx, method, req, reply, cc, opts...)
		})),
		option.WithGRPCDialOption(grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			cs, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil {
				return nil, err
			}
			return &loggedStream{ClientStream: cs, l: l, method: method}, nil
		})),
	}
}

type loggedStream struct {
	grpc.ClientStream
	l      *sentLog
	method string
}

func (s *loggedStream) SendMsg(m any) error {
	s.l.add(s.method, m)
	return s.ClientStream.SendMsg(m)
}

// checkMessages asserts what every upload must send: at most 2 MiB of
// content per message, and a correct CRC32C on every message with data.
func checkMessages(t *testing.T, msgs []sentMsg) {
	t.Helper()
	for i, m := range msgs {
		if m.size > 2<<20 {
			t.Errorf("message %d (%s at %d) carries %d bytes, over the 2 MiB limit", i, m.method, m.offset, m.size)
		}
		if m.size > 0 && !m.crcOK {
			t.Errorf("message %d (%s at %d, %d bytes): CRC32C present=%v, correct=%v", i, m.method, m.offset, m.size, m.hasCRC, m.crcOK)
		}
	}
}

// TestOneShotOver2MiB: with a chunk size over 2 MiB, an object that fits in
// the first chunk still goes out in one WriteObject call (no resumable
// session), as several messages of at most 2 MiB, each with its CRC32C.
func TestOneShotOver2MiB(t *testing.T) {
	for _, chunk := range []int{4 * mib, 8 * mib} {
		var log sentLog
		e := newEnv(t, append(log.options(), uploader.WithChunkSize(chunk))...)
		for _, size := range []int{2 * mib, 2*mib + 1, 3*mib + 1, chunk} {
			name := fmt.Sprintf("oneshot/%d/%s", chunk>>20, sizeName(size))
			t.Run(name, func(t *testing.T) {
				e.srv.ResetCalls()
				data := payload(size, uint64(size))
				if _, err := e.c.Upload(context.Background(), bucket, name, bytes.NewReader(data)); err != nil {
					t.Fatalf("Upload: %v", err)
				}
				sameBytes(t, name, e.content(name), data)
				if m := e.methods(); len(m) != 1 || m[0] != "WriteObject" {
					t.Fatalf("calls %v, want one WriteObject", m)
				}
				msgs := log.take()
				checkMessages(t, msgs)
				want := (size + 2<<20 - 1) / (2 << 20)
				if len(msgs) != want || !msgs[0].hasSpec || !msgs[len(msgs)-1].finish {
					t.Fatalf("%d messages (spec first: %v, finish last: %v), want %d", len(msgs), msgs[0].hasSpec, msgs[len(msgs)-1].finish, want)
				}
			})
		}
	}
}

// TestEveryMessageHasItsCRC32C: chunks over 2 MiB, resumed in the middle of
// a message, send every message with its own correct CRC32C, the resent
// tail included.
func TestEveryMessageHasItsCRC32C(t *testing.T) {
	var log sentLog
	e := newEnv(t, append(log.options(), uploader.WithChunkSize(5*mib))...)
	for _, brk := range []int64{0, 3*mib + 5, 7*mib + 3} {
		name := fmt.Sprintf("crc/%d", brk)
		if brk > 0 {
			e.srv.BreakStream("BidiWriteObject", brk, codes.Unavailable)
		}
		data := payload(12*mib+7, 3)
		if _, err := e.c.Upload(context.Background(), bucket, name, bytes.NewReader(data)); err != nil {
			t.Fatalf("break at %d: %v", brk, err)
		}
		sameBytes(t, name, e.content(name), data)
		msgs := log.take()
		checkMessages(t, msgs)
		resentMidPiece := false
		for _, m := range msgs {
			if m.size > 0 && m.offset%(2<<20) != 0 && m.offset%(5<<20) != 0 {
				resentMidPiece = true
			}
		}
		if brk > 0 && !resentMidPiece {
			t.Errorf("break at %d: no message resent from the middle of a piece; the test does not cover the resent tail", brk)
		}
	}
}

// TestCRC32COncePerByte: on the fault-free path, objup checksums every byte
// of the object exactly once, whatever the size and chunk size.
func TestCRC32COncePerByte(t *testing.T) {
	e := newEnv(t)
	big := newEnvClient(t, e, uploader.WithChunkSize(4*mib))
	for _, tc := range []struct {
		c    *uploader.Client
		size int
	}{{e.c, 0}, {e.c, kib}, {e.c, 300 * kib}, {e.c, 3*mib + 1}, {big, 3*mib + 1}, {big, 9*mib + 5}} {
		data := payload(tc.size, 9)
		stop := crc32c.Counting()
		_, err := tc.c.Upload(context.Background(), bucket, "once", bytes.NewReader(data))
		n := stop()
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(tc.size) {
			t.Errorf("%s: %d bytes checksummed for a %d-byte object", sizeName(tc.size), n, tc.size)
		}
	}
}

// newEnvClient is another client on e's fake.
func newEnvClient(t *testing.T, e *env, opts ...option.ClientOption) *uploader.Client {
	t.Helper()
	c, err := uploader.NewClient(context.Background(), append(append(dialOptions(e.srv), uploader.WithRetry(fastRetry)), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestCoalescedMessages: consecutive 256 KiB chunks go out together, eight
// to a 2 MiB message, each chunk a part of it (no copy); a stream broken
// inside such a message resumes byte-exact.
func TestCoalescedMessages(t *testing.T) {
	var log sentLog
	e := newEnv(t, log.options()...)
	for _, brk := range []int64{0, 1*mib + 3, 2 * mib, 9*mib + q + 5} {
		name := fmt.Sprintf("coalesced/%d", brk)
		if brk > 0 {
			e.srv.BreakStream("BidiWriteObject", brk, codes.Unavailable)
		}
		data := payload(20*mib+5, uint64(brk))
		if _, err := e.c.Upload(context.Background(), bucket, name, bytes.NewReader(data)); err != nil {
			t.Fatalf("break at %d: %v", brk, err)
		}
		sameBytes(t, name, e.content(name), data)
		msgs := log.take()
		checkMessages(t, msgs)
		full := 0
		for _, m := range msgs {
			if m.size == 2*mib && m.parts == 8 {
				full++
			}
		}
		if brk == 0 && full != 10 {
			t.Errorf("%d messages of eight 256 KiB chunks, want 10 for 20 MiB", full)
		}
		if brk > 0 && full < 8 {
			t.Errorf("break at %d: only %d full messages", brk, full)
		}
	}
}
