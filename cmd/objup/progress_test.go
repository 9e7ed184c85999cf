package main

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/objup/objup/cmd/objup/tree"
)

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestProgressLines(t *testing.T) {
	var out syncBuffer
	p := newProgress(&out, false, 5*time.Millisecond)
	for _, e := range []tree.Event{
		{Kind: tree.Skipped, Path: "link", Reason: tree.SkipSymlink},
		{Kind: tree.Walked, Files: 4, Size: 3 << 20},
		{Kind: tree.Started, Path: "big", Size: 2 << 20},
		{Kind: tree.Progressed, Path: "big", Size: 2 << 20, Bytes: 1 << 20},
		{Kind: tree.Progressed, Path: "big", Size: 2 << 20, Bytes: 3 << 19},
		{Kind: tree.Skipped, Path: "same", Size: 1 << 19, Reason: tree.SkipUnchanged},
		{Kind: tree.Started, Path: "bad", Size: 100, Err: errors.New("refused")},
		{Kind: tree.Failed, Path: "bad", Size: 100, Err: errors.New("boom")},
	} {
		p.event(e)
	}
	p.mu.Lock()
	files, finished, bytes := p.files, p.finished, p.bytes
	p.mu.Unlock()
	if files != 4 || finished != 2 || bytes != 3<<19+1<<19 {
		t.Errorf("files %d finished %d bytes %d", files, finished, bytes)
	}
	p.event(tree.Event{Kind: tree.Done, Path: "big", Size: 2 << 20})
	time.Sleep(30 * time.Millisecond)
	p.close()
	s := out.String()
	for _, want := range []string{
		"skipping link (a symbolic link",
		"bad: the earlier upload could not be continued (refused)",
		"objup: 3/4 files, 2.5 MiB/3.0 MiB",
		"1 failed",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("progress output lacks %q:\n%s", want, s)
		}
	}
	// No line after close.
	n := len(out.String())
	time.Sleep(20 * time.Millisecond)
	if len(out.String()) != n {
		t.Error("a progress line after close")
	}
}
