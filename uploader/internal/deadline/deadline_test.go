package deadline

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAttemptContext checks Attempt against the context contract: a child
// made with context.WithCancel ends at the attempt's deadline or with the
// parent, Done and Err agree, Deadline reports the earlier deadline, and a
// disarmed attempt cancels nothing.
func TestAttemptContext(t *testing.T) {
	var a Attempt
	bg := context.Background()

	// The deadline ends the child.
	a.Arm(bg, 20*time.Millisecond)
	child, cancel := context.WithCancel(&a)
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the child outlived the attempt's deadline")
	}
	if !errors.Is(child.Err(), context.DeadlineExceeded) && !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("child error %v", child.Err())
	}
	if !errors.Is(a.Err(), context.DeadlineExceeded) {
		t.Fatalf("attempt error %v, want DeadlineExceeded", a.Err())
	}
	select {
	case <-a.Done():
	default:
		t.Fatal("Done is open although Err is set")
	}
	cancel()
	a.Disarm()

	// The next attempt starts afresh, and the parent's cancellation ends it.
	parent, cancelParent := context.WithCancel(bg)
	a.Arm(parent, time.Hour)
	if a.Err() != nil {
		t.Fatalf("a new attempt starts with error %v", a.Err())
	}
	if d, ok := a.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Fatalf("Deadline = %v, %v", d, ok)
	}
	child, cancel = context.WithCancel(&a)
	second, cancel2 := context.WithCancel(&a) // a second registration is chained
	cancelParent()
	for _, c := range []context.Context{child, second} {
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("a child outlived the parent")
		}
	}
	if !errors.Is(a.Err(), context.Canceled) {
		t.Fatalf("attempt error %v, want the parent's Canceled", a.Err())
	}
	cancel()
	cancel2()
	a.Disarm()

	// A parent deadline earlier than the attempt's is the one reported.
	soon, cancelSoon := context.WithTimeout(bg, time.Minute)
	defer cancelSoon()
	a.Arm(soon, time.Hour)
	if d, _ := a.Deadline(); time.Until(d) > 2*time.Minute {
		t.Fatalf("Deadline %v is not the parent's", d)
	}
	// A child cancelled by its owner unregisters; the attempt ends quietly.
	_, cancel = context.WithCancel(&a)
	cancel()
	a.Disarm()
	if a.f != nil {
		t.Fatal("a cancelled child stayed registered")
	}
}
