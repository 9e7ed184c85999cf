package uploader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/telemetry"
)

// Defaults of a parallel composite upload (see ParallelUpload).
const (
	// DefaultPartSize is the size of a part: with the default parts in
	// flight (two per connection of the default pool), a parallel upload
	// holds at most 9 parts, 54 MiB, and keeps four connections busy at
	// 50 ms and 100 MB/s each.
	DefaultPartSize = 6 << 20
	// DefaultTempPrefix starts the names of the temporary objects.
	DefaultTempPrefix = "objup-tmp/"
	// maxComposeSources is the most objects one compose joins.
	maxComposeSources = 32
	// maxDeletes is how many deletes of temporary objects run at once:
	// small calls, which a connection carries by the dozen.
	maxDeletes = 64
	// cleanupTimeout bounds the deletion of the temporary objects after an
	// upload, whose own context may have ended.
	cleanupTimeout = time.Minute
	// resweepAfter is when the deletes of parts whose last answer was lost
	// are repeated: the service may have been committing such a part when
	// the first delete found nothing.
	resweepAfter = time.Second
)

// ParallelUpload configures a parallel composite upload (see
// WithParallelUpload). The zero value takes every default.
type ParallelUpload struct {
	// PartSize is the size of each part, rounded up to whole chunks
	// (0: DefaultPartSize). An object of at most one part is written in
	// one call under its own name: no temporary object, no compose.
	PartSize int64
	// Parts is how many parts upload at once (0: two per connection of the
	// client's pool, at least 4). A part holds its memory until the service
	// stored it, so up to Parts+1 parts of memory are in use at once,
	// within the client's pool budget.
	Parts int
	// TempPrefix starts the names of the temporary objects (""
	// DefaultTempPrefix). An upload's parts are named
	// TempPrefix + a random id + "/part-N", the objects of intermediate
	// composes TempPrefix + id + "/compose-R-N".
	TempPrefix string
}

// WithParallelUpload uploads the object as a parallel composite upload
// when it outgrows one part: the Writer cuts the data into parts of
// PartSize, uploads each part as a temporary object of the same bucket on
// its own stream (spread over the client's connections, Parts at once),
// joins them with ComposeObject (in rounds of at most 32), checks the final
// object's size and CRC32C against what was written, and deletes the
// temporary objects, whatever the outcome. Close returns once they are
// deleted, or, once the upload's context ended, at most about AfterContext
// later, leaving the rest to the background: Client.Close waits for it.
// When the upload fails or its context ends, no part starts, and a part
// whose last request is already out is awaited (bounded by the attempt
// timeout, at which its connection is cut) rather than abandoned: the
// service could store such a part after a delete had found nothing; its
// memory goes back to the pool then. A part whose last answer was lost
// (the service may have been committing it when the connection broke) is
// deleted once more a second later. A part whose answer was lost and
// whose retry meets the part's own write (412) is found stored, not
// failed. The final object gets the Writer's attributes and
// preconditions; it is never visible partially.
//
// A parallel upload costs, for an object of N parts: N writes, about
// N/31+1 composes and N+N/32 deletes, instead of one upload (operations
// are billed, class A for writes and composes). The result is a composite
// object: it has a CRC32C but no MD5 (so WithMD5 and WithSendMD5 are
// refused, and so is WithoutCRC32C, since the CRC32C is what checks the
// result), and readers that need an MD5 (gsutil's default download check,
// for one) must use the CRC32C. The temporary objects take the bucket's
// default storage class, so a bucket whose default is Nearline, Coldline
// or Archive bills their minimum storage duration, and a bucket with a
// retention policy or default event-based hold keeps them until it
// expires: give such buckets' temporary objects a prefix that a lifecycle
// rule deletes, or do not use parallel uploads there. A part that fails
// for good fails the upload with that part's cause. WithBuffer is
// refused: parts take their memory from the client's pool.
func WithParallelUpload(p ParallelUpload) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		switch {
		case p.PartSize < 0:
			return fmt.Errorf("WithParallelUpload: part size %d is negative", p.PartSize)
		case p.Parts < 0:
			return fmt.Errorf("WithParallelUpload: parts %d is negative", p.Parts)
		}
		if p.TempPrefix == "" {
			p.TempPrefix = DefaultTempPrefix
		}
		if err := validateObject(p.TempPrefix + "0123456789abcdef/compose-99-9999"); err != nil {
			return fmt.Errorf("WithParallelUpload: temporary prefix %q: %w", p.TempPrefix, err)
		}
		c.parallel = &parallel{cfg: p}
		return nil
	})
}

// checkParallel refuses the options a parallel upload cannot honour.
func (c *writerConfig) checkParallel() error {
	switch {
	case c.parallel == nil:
		return nil
	case c.hasBuffer:
		return errors.New("WithParallelUpload and WithBuffer exclude each other: parts take their memory from the client's pool")
	case c.md5 || c.sendMD5 != nil:
		return errors.New("WithParallelUpload cannot send an MD5: a composed object has none")
	case c.noCRC32C:
		return errors.New("WithParallelUpload needs the CRC32C that WithoutCRC32C turns off: it checks the composed object")
	}
	return nil
}

// parallel is the state of a parallel composite upload: the part being
// filled, on the Writer's goroutine, and the parts uploading, each on a
// goroutine of its own.
type parallel struct {
	cfg      ParallelUpload
	w        *Writer // nil until the first chunk is full
	tr       transport
	partSize int64
	id       string // the random part of the temporary objects' names
	prefix   string // TempPrefix + id + "/"

	g      *errgroup.Group
	slots  *semaphore.Weighted // Parts at once
	ctx    context.Context     // ends when a part failed for good, or the upload's context ends
	cancel context.CancelFunc

	cur      *part   // the part being filled; nil before its first chunk
	parts    []*part // the parts handed to goroutines, in order
	inflight atomic.Int32
	temps    []source // intermediate composes' objects

	waitOnce sync.Once
	allDone  chan struct{} // closed once every part's goroutine ended
	err      error         // the first part's failure, once allDone is closed

	stored atomic.Int64 // bytes of parts stored

	// life holds the parts' chunks, apart from the Writer's: they go back
	// when the parts end, which may be after the Writer's call returned
	// (see cleanup).
	life lifetime
}

// part is one temporary object of a parallel upload: its chunks (whose
// owner references it drops once the service stored it or the upload gave
// up), its own call state and its own retry episode.
type part struct {
	upload
	index int
	refs  []*chunkRef
	size  int64       // its CRC32C is scratch.crc, which its checksums point to
	gen   int64       // the generation stored; 0 until then
	sent  atomic.Bool // a write of it may have reached the service
	retry retrier
	ev    uploadEvents
}

// start starts p as w's parallel upload.
func (p *parallel) start(w *Writer) {
	cfg := &p.cfg
	size := cfg.PartSize
	if size == 0 {
		size = DefaultPartSize
	}
	q := int64(w.ch.ChunkSize())
	size = (size + q - 1) / q * q
	parts := cfg.Parts
	if parts == 0 {
		parts = max(4, 2*w.c.conns)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	p.w, p.tr, p.partSize, p.id = w, w.c.tr, size, hex.EncodeToString(rnd[:])
	p.life.alloc, p.life.ev = w.life.alloc, &w.ev
	p.prefix = cfg.TempPrefix + p.id + "/"
	ctx, cancel := context.WithCancel(w.ctx)
	p.g, p.ctx = errgroup.WithContext(ctx)
	p.cancel = cancel
	p.slots = semaphore.NewWeighted(int64(parts))
}

// push takes a full chunk into the part being filled, and hands the part
// to a goroutine once it has PartSize bytes.
func (p *parallel) push(c chunker.Chunk) error {
	if p.cur == nil {
		p.cur = p.newPart(len(p.parts))
	}
	pt := p.cur
	r := p.life.newRef(c)
	pt.refs = append(pt.refs, r)
	pt.scratch.crc = crc32c.Combine(pt.scratch.crc, r.CRC32C, int64(len(r.Data)))
	pt.size += int64(len(r.Data))
	if pt.size >= p.partSize {
		return p.dispatch()
	}
	return nil
}

// newPart returns part i, an object of its own under the upload's prefix,
// written only if it does not exist yet (so a retried write is harmless).
func (p *parallel) newPart(i int) *part {
	w := p.w
	pt := &part{index: i}
	pt.target = target{c: w.c, ctx: p.ctx, bucket: w.bucket, object: p.prefix + "part-" + strconv.Itoa(i), params: w.params}
	pt.initSpec(w)
	pt.ev = telemetry.NewEvents(&pt.target, w.ev.Span())
	pt.life.ev = &pt.ev
	pt.retry.init(w.cfg.retry, &pt.ev)
	return pt
}

// initSpec makes u's spec that of a temporary object of w's upload.
func (u *upload) initSpec(w *Writer) {
	u.scratch.spec.Resource = &u.scratch.object
	u.scratch.object.Name, u.scratch.object.Bucket = u.object, w.resource()
	u.scratch.object.ContentType = "application/octet-stream"
	u.scratch.spec.IfGenerationMatch = new(int64)
	u.scratch.settle = true
}

// dispatch hands the part being filled to a goroutine of its own. It waits
// while Parts parts are uploading, as the upload's context allows: a part
// that does not get its turn is dropped, and the upload fails.
func (p *parallel) dispatch() error {
	pt := p.cur
	p.cur = nil
	if err := p.slots.Acquire(p.ctx, 1); err != nil {
		for _, r := range pt.refs {
			r.unref()
		}
		pt.refs = nil
		return p.failure(err)
	}
	pt.scratch.checksums.Crc32C = &pt.scratch.crc
	pt.scratch.hasSums = true
	p.parts = append(p.parts, pt)
	p.inflight.Add(1)
	p.g.Go(func() error {
		defer p.inflight.Add(-1)
		err := p.send(pt)
		if err != nil {
			// Cancelled before the turn frees, so no part starts after a
			// failure.
			p.cancel()
		}
		p.slots.Release(1)
		return err
	})
	if err := p.ctx.Err(); err != nil {
		return p.failure(err)
	}
	return nil
}

// send uploads part pt in one WriteObject call, retried as a whole, and
// drops its chunks once done.
func (p *parallel) send(pt *part) error {
	if err := p.ctx.Err(); err != nil {
		// Another part failed while this one waited for its turn.
		for _, r := range pt.refs {
			r.unref()
		}
		pt.refs = nil
		return err
	}
	start := time.Now()
	names := p.tr.names()
	var o *wire.Object
	lost := false
	want := &expect{size: pt.size, crc: pt.scratch.crc, hasCRC: true, since: p.w.ev.Start().Wall()}
	err := pt.retry.do(&pt.target, names.write, true, nil, func() (string, bool, error) {
		if err := p.ctx.Err(); err != nil {
			// No attempt starts once the upload is cancelled.
			return "", false, err
		}
		var sent bool
		var err error
		o, sent, err = p.tr.writeObject(&pt.upload, pt.refs, pt.retry.attemptTimeout())
		if sent {
			pt.sent.Store(true)
		}
		switch {
		case err == nil:
		case lost && IsPreconditionFailed(err):
			// The part's own earlier attempt, applied although its
			// answer was lost, is what the precondition met.
			if stored := pt.resolve(p.tr, want, pt.retry.cfg); stored != nil {
				o = stored
				return "", sent, nil
			}
		case sent && answerLost(err):
			lost = true
		}
		return "", sent, err
	})
	for _, r := range pt.refs {
		r.unref()
	}
	pt.refs = nil
	if err == nil {
		err = pt.check(o)
	}
	p.event(pt, start, err)
	if err != nil {
		w := p.w
		return &Error{Op: names.write, Bucket: w.bucket, Object: w.object, Code: codeOf(err),
			Err: &partError{index: pt.index, name: pt.object, err: err}}
	}
	p.w.cfg.progress.report(p.stored.Add(pt.size))
	return nil
}

// check checks the stored part against what was sent.
func (pt *part) check(o *wire.Object) error {
	if o == nil {
		return errors.New("the service stored the part without returning it")
	}
	pt.gen = o.GetGeneration()
	if o.GetSize() != pt.size {
		return &Error{Op: "WriteObject", Bucket: pt.bucket, Object: pt.object, Code: codes.DataLoss,
			Err: fmt.Errorf("the service stored %d bytes of the part, %d were sent", o.GetSize(), pt.size)}
	}
	if cs := o.GetChecksums(); cs != nil && cs.Crc32C != nil && cs.GetCrc32C() != pt.scratch.crc {
		return &Error{Op: "WriteObject", Bucket: pt.bucket, Object: pt.object, Code: codes.DataLoss,
			Err: fmt.Errorf("the service reports CRC32C %08x for the part, %08x was sent", cs.GetCrc32C(), pt.scratch.crc)}
	}
	return nil
}

// partError is the failure of one part, which fails the upload with the
// part's cause.
type partError struct {
	index int
	name  string
	err   error
}

func (e *partError) Error() string {
	return fmt.Sprintf("part %d (%s): %v", e.index, e.name, e.err)
}

func (e *partError) Unwrap() error { return e.err }

// event records a part's end on the upload's span, and in the log.
func (p *parallel) event(pt *part, start time.Time, err error) {
	if s := p.w.ev.Span(); s != nil {
		attrs := []attribute.KeyValue{
			attribute.Int("part", pt.index), attribute.String("object", pt.object),
			attribute.Int64("bytes", pt.size), attribute.Int64("retries", int64(pt.ev.Retries())),
			attribute.Int64("duration_ms", time.Since(start).Milliseconds()),
		}
		if err != nil {
			attrs = append(attrs, attribute.String("error", err.Error()))
		}
		s.AddEvent("part", trace.WithAttributes(attrs...))
	}
	if l := p.w.c.tel.Logger(); l != nil {
		l.LogAttrs(p.w.ctx, slog.LevelDebug, "objup: uploaded a part", p.w.ev.LogAttrs(
			slog.Int("part", pt.index), slog.String("temporary", pt.object), slog.Int64("generation", pt.gen),
			slog.Bool("sent", pt.sent.Load()), slog.Bool("open", pt.scratch.open),
			slog.Int64("bytes", pt.size), slog.Duration("took", time.Since(start)), slog.Any("error", err))...)
	}
}

// buffer takes an empty buffer for the part being filled. When it must
// wait and no part is uploading, the part is sent as it is, smaller than
// PartSize: the pool budget is then held by the part itself, and nothing
// else would give a buffer back.
func (p *parallel) buffer() (*[]byte, error) {
	w := p.w
	if b, ok := w.tryBuffer(); ok {
		return b, nil
	}
	defer w.waited(time.Now())
	if p.inflight.Load() == 0 && p.cur != nil && len(p.cur.refs) > 0 {
		if err := p.dispatch(); err != nil {
			return nil, err
		}
	}
	b, err := w.waitBuffer(p.ctx)
	if err != nil {
		return nil, p.failure(err)
	}
	return b, nil
}

// failure returns the error that ended the upload: a part's, which ended
// p.ctx, rather than the wait it interrupted.
func (p *parallel) failure(err error) error {
	if p.ctx.Err() != nil && p.w.ctx.Err() == nil {
		if gerr := p.wait(); gerr != nil {
			return gerr
		}
	}
	return err
}

// wait waits for every part's goroutine and returns the first failure,
// or the context's error if w's context ends first: a part whose
// finishing request went out runs to its answer (see attemptCtx), and the
// Writer does not wait for that past its context (cleanup does).
func (p *parallel) wait() error {
	p.waitOnce.Do(func() {
		p.allDone = make(chan struct{})
		go func() {
			p.err = p.g.Wait()
			// What gRPC still holds of the parts' messages is released
			// with the parts' chunks (see lifetime.wait).
			for _, pt := range p.parts {
				for _, h := range pt.life.holds {
					if !h.done.Load() {
						p.life.holds = append(p.life.holds, h)
					}
				}
				pt.life.holds = nil
			}
			close(p.allDone)
		}()
	})
	select {
	case <-p.allDone:
		return p.err
	case <-p.w.ctx.Done():
		return p.w.ctx.Err()
	}
}

// finish uploads the last part, waits for every part and composes them
// into the object; last is the data after the parts handed out so far.
func (p *parallel) finish(last chunker.Chunk) (*wire.Object, error) {
	w := p.w
	if len(last.Data) > 0 {
		if err := p.push(last); err != nil {
			return nil, err
		}
	} else {
		w.life.putBuffer(last.Buf)
	}
	if p.cur != nil && len(p.cur.refs) > 0 {
		if err := p.dispatch(); err != nil {
			return nil, err
		}
	}
	if err := p.wait(); err != nil {
		return nil, err
	}
	srcs := make([]source, len(p.parts))
	for i, pt := range p.parts {
		srcs[i] = source{name: pt.object, gen: pt.gen}
	}
	for round := 0; len(srcs) > maxComposeSources; round++ {
		next, err := p.composeRound(round, srcs)
		if err != nil {
			return nil, err
		}
		srcs = next
	}
	w.spec(nil, w.ch.Size())
	w.scratch.hasSums = w.checksums() != nil
	var o *wire.Object
	names := p.tr.names()
	lost := false
	err := w.retry.do(&w.target, names.compose, w.idempotent(), nil, func() (string, bool, error) {
		var err error
		o, err = p.tr.composeObject(&w.upload, srcs, w.retry.attemptTimeout())
		switch {
		case err == nil:
		case lost && IsPreconditionFailed(err):
			if stored := w.resolve(p.tr, w.expect(), w.cfg.retry); stored != nil {
				o = stored
				return "", true, nil
			}
		case answerLost(err):
			lost = true
		}
		return "", true, err
	})
	if err != nil {
		return w.settled(p.tr, w.expect(), lost, w.cfg.retry, err)
	}
	return o, nil
}

// composeRound joins srcs 32 at a time into temporary objects, all at
// once, and returns those.
func (p *parallel) composeRound(round int, srcs []source) ([]source, error) {
	n := (len(srcs) + maxComposeSources - 1) / maxComposeSources
	next := make([]source, n)
	us := make([]*part, n)
	for i := range us {
		us[i] = p.newPart(0)
		// The parts' context ended with them; a compose runs in the
		// upload's.
		us[i].ctx = p.w.ctx
		us[i].object = p.prefix + "compose-" + strconv.Itoa(round) + "-" + strconv.Itoa(i)
		us[i].initSpec(p.w)
		next[i].name = us[i].object
	}
	var g errgroup.Group
	for i, u := range us {
		group := srcs[i*maxComposeSources : min((i+1)*maxComposeSources, len(srcs))]
		g.Go(func() error {
			var o *wire.Object
			err := u.retry.do(&u.target, p.tr.names().compose, true, nil, func() (string, bool, error) {
				var err error
				o, err = p.tr.composeObject(&u.upload, group, u.retry.attemptTimeout())
				return "", true, err
			})
			next[i].gen = o.GetGeneration()
			return err
		})
	}
	err := g.Wait()
	for _, s := range next {
		// An intermediate whose compose may have run is deleted with the
		// parts; one that surely did not exist is not found, which is fine.
		p.temps = append(p.temps, s)
	}
	return next, err
}

// abort stops the parts: none starts any more (see send).
func (p *parallel) abort(error) { p.cancel() }

func (*parallel) path() string { return pathParallel }

// close ends a parallel upload, in the background: it stops the parts
// still uploading and waits for them (a part whose finishing request went
// out runs to its answer, see attemptCtx), releases their chunks and the
// part being filled, fences the parts' attempts that were abandoned uncut
// (see transport.fence), and deletes every temporary object that may exist,
// maxDeletes at a time, with a context of its own bounded by
// cleanupTimeout. The Writer waits for it while the upload's context
// lasts; Client.Close waits for it in any case.
func (p *parallel) close() {
	p.cancel()
	w := p.w
	tr, cfg := p.tr, w.cfg.retry
	base := w.upload.detached(context.WithoutCancel(w.ctx))
	done := make(chan struct{})
	w.c.background(func() {
		defer close(done)
		p.wait() // starts the wait, if no one did
		<-p.allDone
		if p.cur != nil {
			for _, r := range p.cur.refs {
				r.unref()
			}
			p.cur = nil
		}
		type temporary struct {
			source
			via  *grpcConn
			open bool // an attempt was abandoned uncut: fence it first
		}
		var doomed []temporary
		for _, pt := range p.parts {
			if pt.gen != 0 || pt.sent.Load() {
				doomed = append(doomed, temporary{source: source{name: pt.object, gen: pt.gen}, via: pt.via, open: pt.scratch.open})
			}
		}
		for _, s := range p.temps {
			doomed = append(doomed, temporary{source: s})
		}
		ctx, cancel := context.WithTimeout(base.ctx, cleanupTimeout)
		defer cancel()
		del := func(d temporary) {
			u := &part{}
			u.target = target{c: base.c, ctx: ctx, bucket: base.bucket, object: d.name, params: base.params}
			u.ev = telemetry.NewEvents(&u.target, w.ev.Span())
			u.retry.init(cfg, &u.ev)
			if d.open {
				// An abandoned attempt of the part may still be on its
				// way: it must arrive, or be cut, before the delete.
				u.via, u.scratch.open = d.via, true
				tr.fence(&u.upload, u.retry.attemptTimeout())
			}
			err := u.retry.do(&u.target, tr.names().delete, true, nil, func() (string, bool, error) {
				err := tr.deleteObject(&u.upload, d.name, d.gen, u.retry.attemptTimeout())
				if IsNotFound(err) {
					err = nil
				}
				return "", true, err
			})
			if err != nil {
				p.leftBehind(d.name, err)
			} else if l := w.c.tel.Logger(); l != nil {
				l.LogAttrs(ctx, slog.LevelDebug, "objup: deleted a temporary object", slog.String("temporary", d.name), slog.Int64("generation", d.gen), slog.Bool("fenced", d.open))
			}
		}
		var g errgroup.Group
		g.SetLimit(maxDeletes)
		for _, d := range doomed {
			g.Go(func() error { del(d); return nil })
		}
		_ = g.Wait()
		// A part whose last answer was lost may still be committing on the
		// service (it received the whole write before the connection
		// broke): its delete is repeated once, a moment later.
		var unknown []temporary
		for _, d := range doomed {
			if d.gen == 0 {
				d.open = false
				unknown = append(unknown, d)
			}
		}
		if len(unknown) > 0 {
			t := time.NewTimer(resweepAfter)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			for _, d := range unknown {
				g.Go(func() error { del(d); return nil })
			}
			_ = g.Wait()
		}
		_ = g.Wait()
		p.life.wait()
	})
	select {
	case <-done:
	case <-w.ctx.Done():
	}
}

// leftBehind reports a temporary object that could not be deleted.
func (p *parallel) leftBehind(name string, err error) {
	w := p.w
	if s := w.ev.Span(); s != nil {
		s.AddEvent("temporary object left", trace.WithAttributes(attribute.String("object", name), attribute.String("error", err.Error())))
	}
	if l := w.c.tel.Logger(); l != nil {
		l.LogAttrs(context.WithoutCancel(w.ctx), slog.LevelWarn, "objup: could not delete a temporary object", w.ev.LogAttrs(slog.String("temporary", name), slog.Any("error", err))...)
	}
}
