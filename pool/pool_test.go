package pool_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/objup/objup/pool"
)

// waitFor polls cond until it holds; it fails the test if it still does not
// after a bounded number of rounds. It never asserts on elapsed time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 20000 {
		if cond() {
			return
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatalf("gave up waiting for %s", what)
}

func mustNew(t *testing.T, opts ...pool.Option) *pool.Pool {
	t.Helper()
	p, err := pool.New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func mustGet(t *testing.T, a pool.Allocator) *[]byte {
	t.Helper()
	b, err := a.Get(context.Background())
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return b
}

// putPanic calls a.Put(b) and returns the error Put panicked with, or nil if
// it did not panic. A panic value that is not an error fails the test.
func putPanic(t *testing.T, a pool.Allocator, b *[]byte) (err error) {
	t.Helper()
	defer func() {
		switch v := recover().(type) {
		case nil:
		case error:
			err = v
		default:
			t.Fatalf("Put panicked with %T %v, want an error", v, v)
		}
	}()
	a.Put(b)
	return nil
}

func TestNewOptions(t *testing.T) {
	tests := []struct {
		name       string
		opts       []pool.Option
		wantSize   int
		wantBudget int64 // 0: no budget
		wantErr    bool
	}{
		{name: "default", wantSize: pool.Quantum},
		{name: "nil option", opts: []pool.Option{nil}, wantSize: pool.Quantum},
		{name: "one quantum", opts: []pool.Option{pool.WithBufferSize(pool.Quantum)}, wantSize: pool.Quantum},
		{name: "four quanta", opts: []pool.Option{pool.WithBufferSize(4 * pool.Quantum)}, wantSize: 4 * pool.Quantum},
		{name: "zero size", opts: []pool.Option{pool.WithBufferSize(0)}, wantErr: true},
		{name: "negative size", opts: []pool.Option{pool.WithBufferSize(-pool.Quantum)}, wantErr: true},
		{name: "quantum-1", opts: []pool.Option{pool.WithBufferSize(pool.Quantum - 1)}, wantErr: true},
		{name: "quantum+1", opts: []pool.Option{pool.WithBufferSize(pool.Quantum + 1)}, wantErr: true},
		{name: "last option wins", opts: []pool.Option{pool.WithBufferSize(1), pool.WithBufferSize(2 * pool.Quantum)}, wantSize: 2 * pool.Quantum},
		{name: "budget one buffer", opts: []pool.Option{pool.WithBudget(pool.Quantum)}, wantSize: pool.Quantum, wantBudget: pool.Quantum},
		{name: "budget not a multiple", opts: []pool.Option{pool.WithBudget(3*pool.Quantum + 7)}, wantSize: pool.Quantum, wantBudget: 3 * pool.Quantum},
		{name: "budget below one buffer", opts: []pool.Option{pool.WithBudget(pool.Quantum - 1)}, wantErr: true},
		{name: "budget below a big buffer", opts: []pool.Option{pool.WithBufferSize(2 * pool.Quantum), pool.WithBudget(pool.Quantum)}, wantErr: true},
		{name: "budget zero", opts: []pool.Option{pool.WithBudget(0)}, wantErr: true},
		{name: "budget negative", opts: []pool.Option{pool.WithBudget(-1)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := pool.New(tt.opts...)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("New succeeded, want an error")
				}
				if p != nil {
					t.Errorf("New returned a pool with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := p.BufferSize(); got != tt.wantSize {
				t.Errorf("BufferSize = %d, want %d", got, tt.wantSize)
			}
			if got, ok := p.Budget(); got != tt.wantBudget || ok != (tt.wantBudget > 0) {
				t.Errorf("Budget = %d, %v, want %d", got, ok, tt.wantBudget)
			}
			b := mustGet(t, p)
			if len(*b) != tt.wantSize || cap(*b) != tt.wantSize {
				t.Errorf("Get: len %d cap %d, want %d", len(*b), cap(*b), tt.wantSize)
			}
			p.Put(b)
		})
	}
}

func TestGetPutRecycles(t *testing.T) {
	p := mustNew(t)
	b := mustGet(t, p)
	(*b)[0], (*b)[len(*b)-1] = 1, 2
	if got := p.Stats(); got.InUseBytes != pool.Quantum || got.Gets != 1 || got.News != 1 {
		t.Errorf("Stats after Get = %+v", got)
	}
	p.Put(b)
	if len(*b) != 0 {
		t.Errorf("after Put the caller's slice has len %d, want 0", len(*b))
	}
	st := p.Stats()
	want := pool.Stats{Gets: 1, News: 1, Puts: 1}
	if st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	// Get after Put restores the full length; the memory is not zeroed and
	// may be the same buffer (sync.Pool gives no guarantee, so only the
	// shape is checked).
	b2 := mustGet(t, p)
	if len(*b2) != pool.Quantum {
		t.Errorf("second Get len %d", len(*b2))
	}
	p.Put(b2)
}

func TestZeroPool(t *testing.T) {
	var p pool.Pool
	if p.BufferSize() != pool.Quantum {
		t.Fatalf("zero Pool BufferSize = %d", p.BufferSize())
	}
	b := mustGet(t, &p)
	if len(*b) != pool.Quantum {
		t.Fatalf("zero Pool Get len %d", len(*b))
	}
	p.Put(b)
	if err := putPanic(t, &p, b); !errors.Is(err, pool.ErrDoublePut) {
		t.Errorf("double Put on zero Pool panicked with %v, want ErrDoublePut", err)
	}
}

func TestDefault(t *testing.T) {
	p := pool.Default()
	if p == nil || p != pool.Default() {
		t.Fatalf("Default is not one shared pool")
	}
	if p.BufferSize() != pool.Quantum {
		t.Fatalf("Default BufferSize = %d", p.BufferSize())
	}
	b := mustGet(t, p)
	p.Put(b)
}

// TestPutPanics checks each misuse of Put that the pool detects: Put panics
// with an error that wraps the right sentinel and says what went wrong, and
// the pool, recovered, is as it was (but for its Rejected count) and still
// works, with its budget intact.
func TestPutPanics(t *testing.T) {
	small := make([]byte, pool.Quantum-1)
	big := make([]byte, 2*pool.Quantum)
	strangerSameSize := make([]byte, pool.Quantum)
	tests := []struct {
		name string
		// prepare returns what to Put; it may Get from p first.
		prepare func(t *testing.T, p *pool.Pool) *[]byte
		want    error
		detail  string // in the panic message
	}{
		{name: "nil", prepare: func(*testing.T, *pool.Pool) *[]byte { return nil }, want: pool.ErrForeignBuffer, detail: "nil"},
		{name: "too small", prepare: func(*testing.T, *pool.Pool) *[]byte { return &small }, want: pool.ErrForeignBuffer, detail: "capacity 262143"},
		{name: "too big", prepare: func(*testing.T, *pool.Pool) *[]byte { return &big }, want: pool.ErrForeignBuffer, detail: "capacity 524288"},
		{name: "right size but nothing outstanding", prepare: func(*testing.T, *pool.Pool) *[]byte {
			return &strangerSameSize
		}, want: pool.ErrForeignBuffer, detail: "0 bytes are handed out"},
		{name: "resliced to another capacity", prepare: func(t *testing.T, p *pool.Pool) *[]byte {
			b := mustGet(t, p)
			s := (*b)[1:]
			return &s
		}, want: pool.ErrForeignBuffer, detail: "capacity 262143"},
		{name: "double put", prepare: func(t *testing.T, p *pool.Pool) *[]byte {
			b := mustGet(t, p)
			p.Put(b)
			return b
		}, want: pool.ErrDoublePut, detail: "length 0"},
		{name: "double put while another buffer is out", prepare: func(t *testing.T, p *pool.Pool) *[]byte {
			mustGet(t, p)
			b := mustGet(t, p)
			p.Put(b)
			return b
		}, want: pool.ErrDoublePut, detail: "length 0"},
	}
	for _, tt := range tests {
		for _, budget := range []bool{false, true} {
			name := tt.name
			if budget {
				name += "/budget"
			}
			t.Run(name, func(t *testing.T) {
				var opts []pool.Option
				if budget {
					opts = append(opts, pool.WithBudget(3*pool.Quantum))
				}
				p := mustNew(t, opts...)
				b := tt.prepare(t, p)
				var before []byte
				if b != nil {
					before = *b
				}
				stats := p.Stats()
				err := putPanic(t, p, b)
				if !errors.Is(err, tt.want) {
					t.Fatalf("Put panicked with %v, want %v", err, tt.want)
				}
				if !strings.Contains(err.Error(), tt.detail) {
					t.Errorf("panic message %q does not say %q", err, tt.detail)
				}
				if b != nil && (len(*b) != len(before) || cap(*b) != cap(before)) {
					t.Errorf("the panicking Put changed the buffer: len %d cap %d, was %d %d", len(*b), cap(*b), len(before), cap(before))
				}
				stats.Rejected++
				if got := p.Stats(); got != stats {
					t.Errorf("Stats after a panicking Put = %+v, want %+v", got, stats)
				}
				// The pool still works and its budget is intact: the
				// budget holds three buffers and prepare keeps at most
				// two, so one more is taken without waiting, and it
				// goes back.
				x := mustGet(t, p)
				if len(*x) != pool.Quantum || p.Stats().BudgetWaits != 0 {
					t.Fatalf("pool broken after a recovered panic: len %d, Stats %+v", len(*x), p.Stats())
				}
				p.Put(x)
				if got := p.Stats(); got.InUseBytes != stats.InUseBytes || got.Puts != stats.Puts+1 {
					t.Errorf("Stats after Get and Put = %+v, started from %+v", got, stats)
				}
			})
		}
	}
}

func TestPutAcceptsResliced(t *testing.T) {
	p := mustNew(t)
	b := mustGet(t, p)
	*b = (*b)[:10] // shorter, same capacity
	p.Put(b)
	b = mustGet(t, p)
	if len(*b) != pool.Quantum {
		t.Fatalf("Get after resliced Put: len %d", len(*b))
	}
	p.Put(b)
}

// TestForeignBufferNeverBreaksBudget puts a stranger while a real buffer is
// outstanding (it cannot be told apart, so it is adopted), then the real one:
// the pool must panic rather than release budget it does not hold.
func TestForeignBufferNeverBreaksBudget(t *testing.T) {
	p := mustNew(t, pool.WithBudget(pool.Quantum))
	ours := mustGet(t, p)
	stranger := make([]byte, pool.Quantum)
	p.Put(&stranger) // adopted
	if err := putPanic(t, p, ours); !errors.Is(err, pool.ErrForeignBuffer) {
		t.Fatalf("Put of the real buffer after an adopted stranger panicked with %v, want ErrForeignBuffer", err)
	}
	if st := p.Stats(); st.InUseBytes != 0 || st.Puts != 1 || st.Rejected != 1 {
		t.Fatalf("Stats = %+v", st)
	}
	// Exactly one buffer fits in the budget, as before.
	b := mustGet(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Get(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get beyond budget with cancelled ctx = %v", err)
	}
	p.Put(b)
}

func TestGetNilAndDoneContext(t *testing.T) {
	for _, budget := range []bool{false, true} {
		var opts []pool.Option
		if budget {
			opts = append(opts, pool.WithBudget(pool.Quantum))
		}
		p := mustNew(t, opts...)
		//lint:ignore SA1012 a nil context is what the test hands over
		if _, err := p.Get(nil); err == nil {
			t.Errorf("budget=%v: Get(nil) succeeded", budget)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if b, err := p.Get(ctx); !errors.Is(err, context.Canceled) || b != nil {
			t.Errorf("budget=%v: Get with done ctx = %v, %v", budget, b, err)
		}
		if st := p.Stats(); st != (pool.Stats{}) {
			t.Errorf("budget=%v: Stats after failed Gets = %+v", budget, st)
		}
	}
}

func TestBudgetBlocksUntilPut(t *testing.T) {
	p := mustNew(t, pool.WithBudget(2*pool.Quantum))
	a, b := mustGet(t, p), mustGet(t, p)

	type result struct {
		b   *[]byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		x, err := p.Get(context.Background())
		done <- result{x, err}
	}()
	waitFor(t, "Get to wait for the budget", func() bool { return p.Stats().BudgetWaits == 1 })
	select {
	case r := <-done:
		t.Fatalf("Get returned %v, %v while the budget was exhausted", r.b, r.err)
	default:
	}
	if got := p.Stats().InUseBytes; got != 2*pool.Quantum {
		t.Fatalf("InUseBytes = %d while blocked", got)
	}
	p.Put(a)
	r := <-done
	if r.err != nil || len(*r.b) != pool.Quantum {
		t.Fatalf("blocked Get = %v, %v", r.b, r.err)
	}
	if got := p.Stats().InUseBytes; got != 2*pool.Quantum {
		t.Fatalf("InUseBytes = %d", got)
	}
	p.Put(b)
	p.Put(r.b)
	if st := p.Stats(); st.InUseBytes != 0 || st.Gets != 3 || st.Puts != 3 || st.BudgetWaits != 1 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestBudgetCancel(t *testing.T) {
	p := mustNew(t, pool.WithBudget(2*pool.Quantum))
	a, b := mustGet(t, p), mustGet(t, p)
	before := p.Stats()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		x, err := p.Get(ctx)
		if x != nil {
			err = errors.New("got a buffer beyond the budget")
		}
		done <- err
	}()
	waitFor(t, "Get to wait for the budget", func() bool { return p.Stats().BudgetWaits == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Get = %v, want context.Canceled", err)
	}
	after := p.Stats()
	before.BudgetWaits++
	if after != before {
		t.Fatalf("Stats after cancelled Get = %+v, want %+v", after, before)
	}
	// The cancelled Get left the budget unchanged: after two Puts, two Gets
	// succeed at once and a third would wait.
	p.Put(a)
	p.Put(b)
	a, b = mustGet(t, p), mustGet(t, p)
	if got := p.Stats().BudgetWaits; got != 1 {
		t.Fatalf("BudgetWaits = %d, want 1", got)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := p.Get(ctx2); !errors.Is(err, context.Canceled) {
		t.Fatalf("third Get = %v", err)
	}
	p.Put(a)
	p.Put(b)
}

func TestBudgetDeadline(t *testing.T) {
	p := mustNew(t, pool.WithBudget(pool.Quantum))
	a := mustGet(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := p.Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get = %v, want DeadlineExceeded", err)
	}
	p.Put(a)
}

// TestConcurrentGetPut hammers one pool from many goroutines. Each goroutine
// stamps the buffer it holds and checks the stamp before putting it back, so
// a buffer handed to two holders at once is caught (and the race detector
// sees it too).
func TestConcurrentGetPut(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []pool.Option
	}{
		{"unbounded", nil},
		{"budget", []pool.Option{pool.WithBudget(3 * pool.Quantum)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNew(t, tc.opts...)
			const goroutines, rounds = 8, 200
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := range goroutines {
				wg.Go(func() {
					stamp := byte(g + 1)
					for r := range rounds {
						b, err := p.Get(context.Background())
						if err != nil {
							errs <- err
							return
						}
						buf := *b
						for i := 0; i < len(buf); i += 4096 {
							buf[i] = stamp
						}
						if r%8 == 0 {
							runtime.Gosched()
						}
						for i := 0; i < len(buf); i += 4096 {
							if buf[i] != stamp {
								errs <- errors.New("buffer shared by two holders")
								return
							}
						}
						p.Put(b)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			st := p.Stats()
			if st.Gets != goroutines*rounds || st.Puts != goroutines*rounds || st.InUseBytes != 0 || st.Rejected != 0 {
				t.Errorf("Stats = %+v", st)
			}
			if st.News > st.Gets {
				t.Errorf("News %d > Gets %d", st.News, st.Gets)
			}
		})
	}
}

func TestGetPutDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	for _, tc := range []struct {
		name string
		opts []pool.Option
	}{
		{"unbounded", nil},
		{"budget", []pool.Option{pool.WithBudget(pool.Quantum)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNew(t, tc.opts...)
			ctx := context.Background()
			p.Put(mustGet(t, p)) // warm up
			allocs := testing.AllocsPerRun(1000, func() {
				b, err := p.Get(ctx)
				if err != nil {
					panic(err)
				}
				p.Put(b)
			})
			if allocs != 0 {
				t.Errorf("Get+Put allocates %.1f times per run", allocs)
			}
		})
	}
}

func TestTryGet(t *testing.T) {
	p, err := pool.New(pool.WithBudget(2 * pool.Quantum))
	if err != nil {
		t.Fatal(err)
	}
	fx, err := pool.NewFixed(make([]byte, 2*pool.Quantum))
	if err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]interface {
		pool.Allocator
		TryGet() (*[]byte, bool)
	}{"Pool": p, "Fixed": fx} {
		t.Run(name, func(t *testing.T) {
			b1, ok1 := a.TryGet()
			b2, ok2 := a.TryGet()
			if !ok1 || !ok2 || len(*b1) != pool.Quantum || len(*b2) != pool.Quantum {
				t.Fatalf("TryGet within the limit: %v %v", ok1, ok2)
			}
			if b, ok := a.TryGet(); ok || b != nil {
				t.Fatal("TryGet beyond the limit handed out a buffer")
			}
			a.Put(b1)
			b3, ok := a.TryGet()
			if !ok {
				t.Fatal("TryGet after a Put found nothing")
			}
			a.Put(b2)
			a.Put(b3)
		})
	}
	if s := p.Stats(); s.InUseBytes != 0 || s.BudgetWaits != 0 {
		t.Fatalf("stats after TryGets: %+v", s)
	}
}
