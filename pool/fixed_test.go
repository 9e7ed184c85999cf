package pool_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
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
				mustPut(t, f, b)
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
	mustPut(t, f, a)
	c := <-got
	if c != a {
		t.Fatalf("blocked Get returned another slot")
	}
	if len(*c) != pool.Quantum {
		t.Fatalf("len %d after re-Get", len(*c))
	}
	mustPut(t, f, b)
	mustPut(t, f, c)
	// Both slots are free again.
	mustPut(t, f, mustGet(t, f))
	x, y := mustGet(t, f), mustGet(t, f)
	mustPut(t, f, x)
	mustPut(t, f, y)
}

func TestFixedPutRejects(t *testing.T) {
	f := mustFixed(t, make([]byte, 2*pool.Quantum))
	other := mustFixed(t, make([]byte, pool.Quantum))
	p := mustNew(t)

	if err := f.Put(nil); !errors.Is(err, pool.ErrForeignBuffer) {
		t.Errorf("Put(nil) = %v", err)
	}
	stranger := make([]byte, pool.Quantum)
	if err := f.Put(&stranger); !errors.Is(err, pool.ErrForeignBuffer) {
		t.Errorf("Put(stranger) = %v", err)
	}
	ob := mustGet(t, other)
	if err := f.Put(ob); !errors.Is(err, pool.ErrForeignBuffer) {
		t.Errorf("Put(other Fixed's slot) = %v", err)
	}
	pb := mustGet(t, p)
	if err := f.Put(pb); !errors.Is(err, pool.ErrForeignBuffer) {
		t.Errorf("Put(pool buffer) = %v", err)
	}
	// A copy of the slice header is not the slot handle.
	b := mustGet(t, f)
	cp := *b
	if err := f.Put(&cp); !errors.Is(err, pool.ErrForeignBuffer) {
		t.Errorf("Put(copy of handle) = %v", err)
	}
	mustPut(t, f, b)
	if len(*b) != 0 {
		t.Errorf("after Put the slot has len %d, want 0", len(*b))
	}
	if err := f.Put(b); !errors.Is(err, pool.ErrDoublePut) {
		t.Errorf("double Put = %v", err)
	}
	// The rejected Puts left f intact: both slots can be taken.
	x, y := mustGet(t, f), mustGet(t, f)
	if x == y {
		t.Fatalf("the same slot was handed out twice")
	}
	mustPut(t, f, x)
	mustPut(t, f, y)
	mustPut(t, other, ob)
	mustPut(t, p, pb)
}

func TestFixedZeroValue(t *testing.T) {
	var f pool.Fixed
	if _, err := f.Get(context.Background()); err == nil {
		t.Fatal("Get on a zero Fixed succeeded")
	}
	b := make([]byte, 1)
	if err := f.Put(&b); !errors.Is(err, pool.ErrForeignBuffer) {
		t.Fatalf("Put on a zero Fixed = %v", err)
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
		mustPut(t, f, b)
		mustPut(t, f, a)
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
		if err := f.Put(b); err != nil {
			panic(err)
		}
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
				if err := f.Put(b); err != nil {
					errs <- err
					return
				}
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
