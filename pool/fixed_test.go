package pool_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/objup/objup/pool"
)

func mustFixed(t *testing.T, buf []byte) *pool.Fixed {
	t.Helper()
	f, err := pool.NewFixed(buf)
	if err != nil {
		t.Fatalf("NewFixed(len %d): %v", len(buf), err)
	}
	return f
}

func TestNewFixed(t *testing.T) {
	tests := []struct {
		name      string
		len       int
		wantSize  int
		wantSlots int
		wantErr   bool
	}{
		{name: "nil", len: -1, wantErr: true},
		{name: "empty", len: 0, wantErr: true},
		{name: "one byte", len: 1, wantSize: 1, wantSlots: 1},
		{name: "quantum-1", len: pool.Quantum - 1, wantSize: pool.Quantum - 1, wantSlots: 1},
		{name: "quantum", len: pool.Quantum, wantSize: pool.Quantum, wantSlots: 1},
		{name: "quantum+1", len: pool.Quantum + 1, wantSize: pool.Quantum, wantSlots: 1},
		{name: "three quanta and a bit", len: 3*pool.Quantum + 100, wantSize: pool.Quantum, wantSlots: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf []byte
			if tt.len >= 0 {
				buf = make([]byte, tt.len)
			}
			f, err := pool.NewFixed(buf)
			if tt.wantErr {
				if err == nil || f != nil {
					t.Fatalf("NewFixed = %v, %v; want an error", f, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewFixed: %v", err)
			}
			if f.BufferSize() != tt.wantSize || f.Slots() != tt.wantSlots {
				t.Fatalf("BufferSize %d Slots %d, want %d %d", f.BufferSize(), f.Slots(), tt.wantSize, tt.wantSlots)
			}
			// Every slot is a distinct, capacity-limited window of buf.
			var got []*[]byte
			for i := range tt.wantSlots {
				b := mustGet(t, f)
				if len(*b) != tt.wantSize || cap(*b) != tt.wantSize {
					t.Fatalf("slot %d: len %d cap %d", i, len(*b), cap(*b))
				}
				got = append(got, b)
			}
			seen := map[*byte]bool{}
			for _, b := range got {
				p := &(*b)[0]
				if seen[p] {
					t.Fatalf("two slots share memory")
				}
				seen[p] = true
				found := false
				for off := 0; off+tt.wantSize <= len(buf); off += tt.wantSize {
					found = found || p == &buf[off]
				}
				if !found {
					t.Fatalf("slot is not a window of the caller's buffer")
				}
			}
			for _, b := range got {
				f.Put(b)
			}
		})
	}
}

func TestFixedBlocksAndCancels(t *testing.T) {
	f := mustFixed(t, make([]byte, 2*pool.Quantum))
	a, b := mustGet(t, f), mustGet(t, f)

	// Exhausted: a Get with a done context fails at once, and one that is
	// cancelled while waiting fails too; neither takes a slot.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if x, err := f.Get(done); !errors.Is(err, context.Canceled) || x != nil {
		t.Fatalf("Get with done ctx = %v, %v", x, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := f.Get(ctx)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Get = %v", err)
	}

	// A blocked Get gets the slot that is put back.
	got := make(chan *[]byte, 1)
	go func() {
		x, err := f.Get(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- x
	}()
	f.Put(a)
	c := <-got
	if c != a {
		t.Fatalf("blocked Get returned another slot")
	}
	if len(*c) != pool.Quantum {
		t.Fatalf("len %d after re-Get", len(*c))
	}
	f.Put(b)
	f.Put(c)
	// Both slots are free again.
	f.Put(mustGet(t, f))
	x, y := mustGet(t, f), mustGet(t, f)
	f.Put(x)
	f.Put(y)
}

// TestFixedPutPanics checks each misuse of Put that a Fixed detects: Put
// panics with an error that wraps the right sentinel and says what went
// wrong, and the Fixed, recovered, still hands out both of its slots.
func TestFixedPutPanics(t *testing.T) {
	tests := []struct {
		name string
		// prepare returns what to Put into f, and a function that gives
		// back whatever it took.
		prepare func(t *testing.T, f *pool.Fixed) (b *[]byte, done func())
		want    error
		detail  string // in the panic message
	}{
		{"nil", func(*testing.T, *pool.Fixed) (*[]byte, func()) { return nil, func() {} },
			pool.ErrForeignBuffer, "nil"},
		{"stranger", func(*testing.T, *pool.Fixed) (*[]byte, func()) {
			b := make([]byte, pool.Quantum)
			return &b, func() {}
		}, pool.ErrForeignBuffer, "not one of the Fixed's slots"},
		{"another Fixed's slot", func(t *testing.T, _ *pool.Fixed) (*[]byte, func()) {
			other := mustFixed(t, make([]byte, pool.Quantum))
			b := mustGet(t, other)
			return b, func() { other.Put(b) }
		}, pool.ErrForeignBuffer, "not one of the Fixed's slots"},
		{"a Pool's buffer", func(t *testing.T, _ *pool.Fixed) (*[]byte, func()) {
			p := mustNew(t)
			b := mustGet(t, p)
			return b, func() { p.Put(b) }
		}, pool.ErrForeignBuffer, "not one of the Fixed's slots"},
		{"copy of the slot's *[]byte", func(t *testing.T, f *pool.Fixed) (*[]byte, func()) {
			b := mustGet(t, f)
			cp := *b
			return &cp, func() { f.Put(b) }
		}, pool.ErrForeignBuffer, "not one of the Fixed's slots"},
		{"double put", func(t *testing.T, f *pool.Fixed) (*[]byte, func()) {
			b := mustGet(t, f)
			f.Put(b)
			if len(*b) != 0 {
				t.Errorf("after Put the slot has len %d, want 0", len(*b))
			}
			return b, func() {}
		}, pool.ErrDoublePut, "which is free"},
		{"double put while the other slot is out", func(t *testing.T, f *pool.Fixed) (*[]byte, func()) {
			a, b := mustGet(t, f), mustGet(t, f)
			f.Put(b)
			return b, func() { f.Put(a) }
		}, pool.ErrDoublePut, "which is free"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFixed(t, make([]byte, 2*pool.Quantum))
			b, done := tt.prepare(t, f)
			err := putPanic(t, f, b)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Put panicked with %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.detail) {
				t.Errorf("panic message %q does not say %q", err, tt.detail)
			}
			done()
			// f is intact: both slots can be taken, and go back.
			x, y := mustGet(t, f), mustGet(t, f)
			if x == y {
				t.Fatalf("the same slot was handed out twice")
			}
			f.Put(x)
			f.Put(y)
		})
	}
}

func TestFixedZeroValue(t *testing.T) {
	var f pool.Fixed
	if _, err := f.Get(context.Background()); err == nil {
		t.Fatal("Get on a zero Fixed succeeded")
	}
	b := make([]byte, 1)
	if err := putPanic(t, &f, &b); !errors.Is(err, pool.ErrForeignBuffer) {
		t.Fatalf("Put on a zero Fixed panicked with %v, want ErrForeignBuffer", err)
	}
}

// TestFixedLeavesMemoryAlone checks that Fixed never writes the caller's
// memory: only holders of slots do.
func TestFixedLeavesMemoryAlone(t *testing.T) {
	buf := bytes.Repeat([]byte{0xA5}, 2*pool.Quantum+3)
	want := bytes.Clone(buf)
	f := mustFixed(t, buf)
	for range 10 {
		a, b := mustGet(t, f), mustGet(t, f)
		f.Put(b)
		f.Put(a)
	}
	if !bytes.Equal(buf, want) {
		t.Fatal("Fixed wrote into the caller's buffer")
	}
}

func TestFixedDoesNotAllocate(t *testing.T) {
	f := mustFixed(t, make([]byte, 2*pool.Quantum))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		b, err := f.Get(ctx)
		if err != nil {
			panic(err)
		}
		f.Put(b)
	})
	if allocs != 0 {
		t.Errorf("Fixed Get+Put allocates %.1f times per run", allocs)
	}
}

func TestFixedConcurrent(t *testing.T) {
	const slots, goroutines, rounds = 3, 8, 200
	f := mustFixed(t, make([]byte, slots*pool.Quantum))
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			stamp := byte(g + 1)
			for range rounds {
				b, err := f.Get(context.Background())
				if err != nil {
					errs <- err
					return
				}
				(*b)[0], (*b)[len(*b)-1] = stamp, stamp
				runtime.Gosched()
				if (*b)[0] != stamp || (*b)[len(*b)-1] != stamp {
					errs <- errors.New("slot shared by two holders")
					return
				}
				f.Put(b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for range slots { // all slots came back
		_ = mustGet(t, f)
	}
}
