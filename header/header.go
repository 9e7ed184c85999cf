// Package header carries request metadata (the tenant, request IDs, routing
// headers) in a context as an append-only linked chain, and turns it into
// gRPC metadata or HTTP headers once per RPC.
//
// grpc-go's metadata.AppendToOutgoingContext copies every earlier append on
// each call, so n appends cost O(n²). Append instead adds one immutable node
// {pairs, prev} to the chain: O(1) in the depth of the chain, earlier nodes
// are never copied or modified. A context is a tree, so each branch sees only
// its own ancestry, and any number of goroutines may read a chain at once.
//
// The transport flattens the chain with [OutgoingContext] once per RPC, or
// writes it into an http.Header with [SetHTTP]. A server reads one
// key with [FromIncoming], without copying the rest of the incoming metadata.
//
// # Order
//
// The pairs a context carries are, in this order:
//
//  1. the gRPC outgoing metadata already in it (metadata.NewOutgoingContext,
//     then metadata.AppendToOutgoingContext, as metadata.FromOutgoingContext
//     merges them),
//  2. the chain's pairs, earlier appends before later ones,
//  3. the extra pairs given to [OutgoingContext].
//
// This is what grpc-go gives for the same calls when the gRPC metadata was
// attached before the first Append. Metadata attached with grpc's functions
// after an Append still comes first: the two mechanisms are not ordered by
// time, and metadata.NewOutgoingContext replaces the gRPC metadata but not
// the chain. [Tenant] and [SetHTTP] follow the same order.
//
// # Validation
//
// [Append] is for pairs the program controls, such as literal keys. Like
// metadata.AppendToOutgoingContext it panics on an odd number of strings and
// does not inspect keys or values, so it stays cheap; a pair gRPC does not
// allow makes the RPC fail with codes.Internal when the stream is created, and
// net/http refuses to send an invalid header value. For input from outside
// the program use [AppendChecked] or [WithTenant], which validate each pair
// once and return an error.
package header

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"google.golang.org/grpc/metadata"
)

// chainKey is the context key of the newest node. Its only value is a *node.
type chainKey struct{}

// node is one immutable link of the chain. It is also the context returned
// by Append: embedding the parent context saves an allocation per Append
// compared with a node stored through context.WithValue.
//
// A node with no pairs ends the chain: OutgoingContext puts one on top of a
// context whose chain it has already flattened into gRPC metadata, so that
// flattening that context again does not repeat the pairs.
//
// A node takes 80 bytes; counts of the chain's nodes or pairs would make it
// 96 and save flatten nothing, as it visits every node anyway.
type node struct {
	context.Context // the parent: every other key, deadline and cancellation

	kv   []string // key, value, ...; keys lower-cased; never modified
	prev *node    // the previous node, nil at the start of the chain

	one [2]string // storage for kv when a single pair is appended
}

// Value returns n for chainKey and asks the parent context for anything else.
func (n *node) Value(key any) any {
	if key == (chainKey{}) {
		return n
	}
	return n.Context.Value(key)
}

// String describes the context without printing its values, which may be
// secrets.
func (n *node) String() string {
	var parent string
	if s, ok := n.Context.(fmt.Stringer); ok {
		parent = s.String()
	} else {
		parent = fmt.Sprintf("%T", n.Context)
	}
	return fmt.Sprintf("%s.WithHeaders(%d pairs)", parent, len(n.kv)/2)
}

// chain returns the newest node of ctx's chain, or nil when the chain is
// empty.
func chain(ctx context.Context) *node {
	n, ok := ctx.(*node)
	if !ok {
		n, _ = ctx.Value(chainKey{}).(*node)
	}
	if n == nil || len(n.kv) == 0 {
		return nil
	}
	return n
}

// Append returns a copy of ctx whose header chain ends with the pairs kv
// (key, value, key, value, ...). Keys are lower-cased; values are kept as
// they are. Append copies kv, so the caller may reuse it. It takes O(1) time
// in the depth of the chain (finding the newest node passes only the context
// layers added since) and allocates once for one pair, twice for more. With
// no pairs it returns ctx itself.
//
// Append panics if len(kv) is odd, as metadata.AppendToOutgoingContext does.
// It does not validate keys or values: see the package documentation, and
// use [AppendChecked] for input from outside the program.
func Append(ctx context.Context, kv ...string) context.Context {
	if len(kv)%2 == 1 {
		panic(fmt.Sprintf("header: Append got an odd number of strings (%d); want key, value pairs", len(kv)))
	}
	if len(kv) == 0 {
		return ctx
	}
	return appendPairs(ctx, kv)
}

// appendPairs returns a new node holding a lower-cased copy of kv, which has
// an even, non-zero length.
func appendPairs(ctx context.Context, kv []string) *node {
	if len(kv) == 2 {
		return appendPair(ctx, strings.ToLower(kv[0]), kv[1])
	}
	n := &node{Context: ctx, kv: make([]string, len(kv))}
	for i := 0; i < len(kv); i += 2 {
		n.kv[i] = strings.ToLower(kv[i])
		n.kv[i+1] = kv[i+1]
	}
	n.prev = chain(ctx)
	return n
}

// appendPair returns a new node holding the pair k, v; k is lower-case.
func appendPair(ctx context.Context, k, v string) *node {
	n := &node{Context: ctx, one: [2]string{k, v}}
	n.kv = n.one[:]
	n.prev = chain(ctx)
	return n
}

// AppendChecked is Append for input from outside the program. It appends
// nothing and returns ctx unchanged with an error if len(kv) is odd or if a
// pair would be refused by gRPC or is reserved:
//
//   - a key must be non-empty and made of 0-9 a-z A-Z - _ . (gRPC's set;
//     upper case is lower-cased);
//   - a key must not start with "grpc-", which gRPC reserves for itself;
//   - a value must be printable ASCII (0x20 to 0x7E), so no CR, LF, tab or
//     other control character, and no bytes above 0x7E;
//   - except that the value of a key ending in "-bin" may hold any bytes, as
//     in gRPC, which sends it base64-encoded ([SetHTTP] does the same).
//
// The error names the position and key of the first bad pair, never a value.
func AppendChecked(ctx context.Context, kv ...string) (context.Context, error) {
	if len(kv)%2 == 1 {
		return ctx, fmt.Errorf("header: odd number of strings (%d); want key, value pairs", len(kv))
	}
	if len(kv) == 0 {
		return ctx, nil
	}
	for i := 0; i < len(kv); i += 2 {
		if err := checkPair(kv[i], kv[i+1]); err != nil {
			return ctx, fmt.Errorf("header: pair %d: %w", i/2, err)
		}
	}
	return appendPairs(ctx, kv), nil
}

// Validate checks every pair of ctx's header chain against the rules of
// [AppendChecked] and returns an error naming the first bad pair (its key,
// never its value), or nil. An uploader calls it once when an upload starts,
// so a value that gRPC would refuse (say a newline added with [Append]) is
// reported as bad input before anything is sent, instead of failing every
// RPC inside gRPC. It walks the chain once and does not allocate unless it
// fails.
func Validate(ctx context.Context) error {
	for n := chain(ctx); n != nil; n = n.prev {
		for i := 0; i < len(n.kv); i += 2 {
			if err := checkPair(n.kv[i], n.kv[i+1]); err != nil {
				return fmt.Errorf("header: %w", err)
			}
		}
	}
	return nil
}

// flatten returns the pairs ctx carries as a new gRPC metadata map: the
// outgoing gRPC metadata already in ctx, then the chain's pairs from the
// oldest append to the newest, then extra (key, value, ...; keys
// lower-cased). The values of each key keep that order, which is the order
// grpc-go gives for the same appends (see the package documentation).
//
// The caller owns the result and may modify it. flatten walks the chain once,
// sizes the map and the value storage, then fills them. It panics if
// len(extra) is odd.
//
// [OutgoingContext] sends the result, and keeps a second flattening of the
// returned context from repeating the chain.
func flatten(ctx context.Context, extra ...string) metadata.MD {
	if len(extra)%2 == 1 {
		panic(fmt.Sprintf("header: flatten got an odd number of extra strings (%d); want key, value pairs", len(extra)))
	}
	var stack [32]*node
	nodes, pairs := walk(ctx, stack[:0])
	pairs += len(extra) / 2
	base, _ := metadata.FromOutgoingContext(ctx)
	// base is a new map, so it can be the result, unless it would have to
	// grow: a map made for at most 8 entries holds 8 without growing.
	md := base
	if len(base)+pairs > 8 {
		md = make(metadata.MD, len(base)+pairs)
		for k, v := range base {
			md[k] = v
		}
	} else if md == nil {
		md = make(metadata.MD, pairs)
	}
	f := flattener{md: md, vals: make([]string, pairs)}
	for i := len(nodes) - 1; i >= 0; i-- {
		kv := nodes[i].kv
		for j := 0; j < len(kv); j += 2 {
			f.add(kv[j], kv[j+1])
		}
	}
	for j := 0; j < len(extra); j += 2 {
		f.add(strings.ToLower(extra[j]), extra[j+1])
	}
	return md
}

// walk appends the nodes of ctx's chain to nodes, newest first, and counts
// their pairs. The chain links newest to oldest, so callers collect it to
// size their result, then add the oldest pairs first.
func walk(ctx context.Context, nodes []*node) ([]*node, int) {
	pairs := 0
	for n := chain(ctx); n != nil; n = n.prev {
		nodes = append(nodes, n)
		pairs += len(n.kv) / 2
	}
	return nodes, pairs
}

// flattener adds pairs to md. The first value of each new key goes into one
// shared array, vals, as a slice of capacity 1, so a later append to it (by
// flatten or by the caller) copies instead of overwriting a neighbour.
type flattener struct {
	md   metadata.MD
	vals []string
}

func (f *flattener) add(k, v string) {
	if s, ok := f.md[k]; ok {
		f.md[k] = append(s, v)
		return
	}
	f.vals[0] = v
	f.md[k] = f.vals[:1:1]
	f.vals = f.vals[1:]
}

// OutgoingContext returns a copy of ctx to pass to one RPC, whose gRPC
// outgoing metadata holds the pairs of flatten(ctx, extra...) in the same
// order: metadata.FromOutgoingContext returns an MD equal to flatten's, as
// with metadata.NewOutgoingContext(ctx, flatten(ctx, extra...)). But instead
// of building that map, OutgoingContext adds the chain's pairs and extra to
// the gRPC metadata in one metadata.AppendToOutgoingContext, which the gRPC
// transport sends without merging: about five allocations whatever the
// depth of the chain.
//
// The returned context's chain is empty, since its pairs are now in the gRPC
// metadata: flattening it again, or appending to it and flattening, sends
// each pair once. If ctx carries no chain and extra is empty, it returns ctx
// itself. It panics if len(extra) is odd.
func OutgoingContext(ctx context.Context, extra ...string) context.Context {
	if len(extra)%2 == 1 {
		panic(fmt.Sprintf("header: OutgoingContext got an odd number of extra strings (%d); want key, value pairs", len(extra)))
	}
	var stack [32]*node
	nodes, pairs := walk(ctx, stack[:0])
	if pairs == 0 && len(extra) == 0 {
		return ctx
	}
	var buf [64]string // AppendToOutgoingContext copies kv, which stays here
	kv := buf[:0]
	if n := 2*pairs + len(extra); n > len(buf) {
		kv = make([]string, 0, n)
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		kv = append(kv, nodes[i].kv...)
	}
	kv = append(kv, extra...)
	md := metadata.AppendToOutgoingContext(ctx, kv...)
	if pairs == 0 {
		// No chain to hide: the context has none, so it needs no empty
		// node on top, which spares an allocation per RPC.
		return md
	}
	return &node{Context: md}
}

// SetHTTP writes the pairs ctx carries (those OutgoingContext sends) into h: for
// each key, h's values under the canonical form of the key are replaced by
// the key's values, in order. Other keys of h are left alone. Values of keys
// ending in "-bin" are base64-encoded without padding, as gRPC sends them.
// The context comes first, as everywhere in Go.
//
// SetHTTP does not validate: net/http refuses to send a header value that
// holds CR, LF or other control characters.
func SetHTTP(ctx context.Context, h http.Header) {
	for k, vs := range flatten(ctx) {
		if strings.HasSuffix(k, "-bin") {
			for i, v := range vs {
				vs[i] = base64.RawStdEncoding.EncodeToString([]byte(v))
			}
		}
		h[textproto.CanonicalMIMEHeaderKey(k)] = vs
	}
}
