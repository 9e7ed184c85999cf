package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/uploader/internal/mono"
)

func TestRetryable(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "down")
	exhausted := status.Error(codes.ResourceExhausted, "slow down")
	invalid := status.Error(codes.InvalidArgument, "bad header")
	internal := status.Error(codes.Internal, "oops")
	never := func(error) bool { return false }
	tests := []struct {
		name             string
		rules            Rules
		err              error
		sent, idempotent bool
		want             bool
	}{
		{"transient, idempotent", Rules{}, unavailable, true, true, true},
		{"transient, not idempotent", Rules{}, unavailable, true, false, false},
		{"transient, not idempotent, Always", Rules{Policy: Always}, unavailable, true, false, true},
		{"Never", Rules{Policy: Never}, unavailable, true, true, false},
		{"refused for load, not idempotent", Rules{}, exhausted, true, false, true},
		{"refused for load, Never", Rules{Policy: Never}, exhausted, true, false, false},
		{"not sent, network code", Rules{}, unavailable, false, true, true},
		{"not sent, other code", Rules{}, internal, false, true, false},
		{"permanent", Rules{}, invalid, true, true, false},
		{"broken stream", Rules{}, fmt.Errorf("recv: %w", io.ErrUnexpectedEOF), true, true, true},
		{"custom function decides", Rules{ShouldRetry: never}, unavailable, true, true, false},
		{"custom function, not idempotent", Rules{ShouldRetry: func(error) bool { return true }}, invalid, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rules.Retryable(tt.err, tt.sent, tt.idempotent); got != tt.want {
				t.Fatalf("Retryable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestShouldRetry(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{status.Error(codes.Unavailable, ""), true},
		{status.Error(codes.ResourceExhausted, ""), true},
		{status.Error(codes.Internal, ""), true},
		{status.Error(codes.DeadlineExceeded, ""), true},
		{status.Error(codes.NotFound, ""), false},
		{io.ErrUnexpectedEOF, true},
		{context.Canceled, false},
	} {
		if got := ShouldRetry(tt.err); got != tt.want {
			t.Errorf("ShouldRetry(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestEpisode(t *testing.T) {
	cause := status.Error(codes.Unavailable, "down")
	t.Run("attempts", func(t *testing.T) {
		l := Limits{Backoff: gax.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 2}, MaxAttempts: 3, Deadline: time.Hour, AttemptTimeout: time.Minute}
		var e Episode
		e.Init(&l)
		for i := 1; i < 3; i++ {
			pause, err := e.Fail(&l, cause)
			if err != nil || pause > time.Millisecond {
				t.Fatalf("failure %d: pause %v, error %v", i, pause, err)
			}
		}
		_, err := e.Fail(&l, cause)
		if !errors.Is(err, ErrExhausted) || status.Code(err) != codes.Unavailable {
			t.Fatalf("third failure: %v, want exhausted with the cause's code", err)
		}
		e.Progress(&l)
		if _, err := e.Fail(&l, cause); err != nil {
			t.Fatalf("progress did not start a new episode: %v", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		l := Limits{Backoff: gax.Backoff{Initial: time.Hour, Max: time.Hour, Multiplier: 2}, Deadline: 10 * time.Second, AttemptTimeout: 8 * time.Second}
		var e Episode
		e.Init(&l)
		if got := e.AttemptTimeout(&l); got != 8*time.Second {
			t.Fatalf("attempt timeout outside an episode %v, want 8s", got)
		}
		pause, err := e.Fail(&l, cause)
		// The pause is cut to leave MinAttempt (1s) of the deadline.
		if err != nil || pause > 9*time.Second {
			t.Fatalf("pause %v, error %v", pause, err)
		}
		e.start -= mono.Time(9500 * time.Millisecond) // the episode began 9.5s ago
		if got := e.AttemptTimeout(&l); got != time.Second {
			t.Fatalf("attempt timeout near the deadline %v, want MinAttempt", got)
		}
		if _, err := e.Fail(&l, cause); !errors.Is(err, ErrExhausted) {
			t.Fatalf("past the deadline: %v, want exhausted", err)
		}
	})
	t.Run("min attempt", func(t *testing.T) {
		for _, tt := range []struct {
			deadline, attempt, want time.Duration
		}{
			{32 * time.Second, 32 * time.Second, time.Second},
			{2 * time.Second, 32 * time.Second, 200 * time.Millisecond},
			{32 * time.Second, 400 * time.Millisecond, 100 * time.Millisecond},
		} {
			l := Limits{Deadline: tt.deadline, AttemptTimeout: tt.attempt}
			if got := l.MinAttempt(); got != tt.want {
				t.Errorf("MinAttempt(%v, %v) = %v, want %v", tt.deadline, tt.attempt, got, tt.want)
			}
		}
	})
}
