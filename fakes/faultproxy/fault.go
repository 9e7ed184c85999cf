package faultproxy

import (
	"fmt"
	"time"
)

// Direction names one direction of the bytes of a connection.
type Direction int

const (
	// Up is the bytes from the client (who dialed the proxy) to the server
	// (the target).
	Up Direction = iota
	// Down is the bytes from the server to the client.
	Down
)

// String returns "up" or "down".
func (d Direction) String() string {
	switch d {
	case Up:
		return "up"
	case Down:
		return "down"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// Kind is the kind of a fault. See the package documentation for what
// each models.
type Kind int

const (
	// Reset closes both sockets of the connection abortively: each
	// endpoint receives an RST, and the bytes the proxy holds are dropped.
	Reset Kind = iota
	// Cut closes both sockets of the connection cleanly: each endpoint
	// reads io.EOF after the bytes forwarded before the fault, and the
	// bytes the proxy holds are dropped.
	Cut
	// Stall stops the connection's path in both directions for a while:
	// the proxy keeps reading but holds what it reads, and delivers it in
	// order when the stall ends.
	Stall
)

// String returns "reset", "cut" or "stall".
func (k Kind) String() string {
	switch k {
	case Reset:
		return "reset"
	case Cut:
		return "cut"
	case Stall:
		return "stall"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Fault describes one fault on one connection.
type Fault struct {
	// Kind is what happens.
	Kind Kind
	// Dir is the direction whose bytes are counted: the fault fires in
	// the stream of Dir, after exactly After of its bytes.
	Dir Direction
	// After is how many bytes of Dir the proxy forwards, counted from when
	// the connection takes the fault, before the fault fires. 0 fires it
	// before the next byte of Dir. A fault fires as soon as its byte count
	// is reached; it does not wait for a further byte.
	After int64
	// Stall is how long a Stall stops the path. It must be positive for a
	// Stall and zero for the other kinds.
	Stall time.Duration
}

// String describes f, such as "stall 200ms after 1024 bytes up".
func (f Fault) String() string {
	if f.Kind == Stall {
		return fmt.Sprintf("%v %v after %d bytes %v", f.Kind, f.Stall, f.After, f.Dir)
	}
	return fmt.Sprintf("%v after %d bytes %v", f.Kind, f.After, f.Dir)
}

// check panics if f is not a valid fault.
func (f Fault) check() {
	switch {
	case f.Kind < Reset || f.Kind > Stall:
		panic(fmt.Sprintf("faultproxy: invalid fault kind %d", int(f.Kind)))
	case f.Dir != Up && f.Dir != Down:
		panic(fmt.Sprintf("faultproxy: invalid fault direction %d", int(f.Dir)))
	case f.After < 0:
		panic(fmt.Sprintf("faultproxy: negative After %d", f.After))
	case f.Kind == Stall && f.Stall <= 0:
		panic(fmt.Sprintf("faultproxy: stall of %v: a Stall needs a positive duration", f.Stall))
	case f.Kind != Stall && f.Stall != 0:
		panic(fmt.Sprintf("faultproxy: %v with a stall duration of %v", f.Kind, f.Stall))
	}
}

// Held is what becomes of the bytes the proxy holds from a sender (the
// bytes it read from one endpoint and has not written to the other yet:
// read ahead, or held by a stall) when that sender resets its socket.
type Held int

const (
	// Drop loses them, as TCP does with bytes still unacknowledged in
	// the sender's own retransmission queue: they are never delivered,
	// and the other endpoint is reset at once. A request stuck in a
	// stalled path and abandoned never lands. This is the default.
	Drop Held = iota
	// Deliver delivers them all the same, in order, once the path flows
	// (when a stall ends), and then resets the other endpoint, as a
	// network queue or a front end that already read the bytes does: the
	// sender's reset reaches the other side after what it sent. The
	// other endpoint reads every byte, then the reset (Linux hands a
	// reader the bytes it received before an RST). What the other
	// endpoint sends back in the meantime is dropped: its sender is gone.
	Deliver
)

// String returns "drop" or "deliver".
func (h Held) String() string {
	switch h {
	case Drop:
		return "drop"
	case Deliver:
		return "deliver"
	}
	return fmt.Sprintf("Held(%d)", int(h))
}
