package admit

import "time"

// waiter is one write waiting for its turn.
type waiter struct {
	prio    int64
	ch      chan struct{} // closed when granted
	granted bool
	q       *queue
	index   int // in q's heap; -1 once out
}

// queue is one tenant's waiting writes, a min-heap by priority.
type queue struct {
	tenant string
	heap   []*waiter
	inRing bool
	served int // writes granted in the tenant's current turn
}

// grantLocked lets waiting writes go while there are tokens, a tenant at a
// time in turn, each tenant's oldest first, and sets the timer for the
// next turn.
func (b *Bucket) grantLocked(now time.Time) {
	b.refillLocked(now)
	for len(b.ring) > 0 && b.tokens >= 1 {
		if b.next >= len(b.ring) {
			b.next = 0
		}
		q := b.ring[b.next]
		w := q.pop()
		if b.onGrant != nil {
			b.onGrant(q.tenant, w.prio)
		}
		w.granted = true
		close(w.ch)
		b.tokens--
		if q.served++; q.served >= b.s.weightOf(q.tenant) || len(q.heap) == 0 {
			q.served = 0
			b.next++
		}
		b.dropEmptyLocked()
	}
	b.scheduleLocked()
}

// dropEmptyLocked takes the tenants without waiting writes out of the ring.
func (b *Bucket) dropEmptyLocked() {
	kept := b.ring[:0]
	for i, q := range b.ring {
		if len(q.heap) > 0 {
			kept = append(kept, q)
			continue
		}
		q.inRing = false
		if i < b.next {
			b.next--
		}
	}
	clear(b.ring[len(kept):])
	b.ring = kept
}

// scheduleLocked sets the timer for when the next waiting write's token
// is earned.
func (b *Bucket) scheduleLocked() {
	if len(b.ring) == 0 || b.armed {
		return
	}
	d := time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
	if d < 0 {
		d = 0
	}
	b.armed = true
	if b.timer == nil {
		b.timer = time.AfterFunc(d, b.tick)
	} else {
		b.timer.Reset(d)
	}
}

// tick is the timer: it grants the turns that are due.
func (b *Bucket) tick() {
	b.mu.Lock()
	b.armed = false
	b.grantLocked(b.s.now())
	b.mu.Unlock()
}

func (q *queue) less(i, j int) bool { return q.heap[i].prio < q.heap[j].prio }

func (q *queue) swap(i, j int) {
	q.heap[i], q.heap[j] = q.heap[j], q.heap[i]
	q.heap[i].index, q.heap[j].index = i, j
}

func (q *queue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q *queue) down(i int) {
	n := len(q.heap)
	for {
		l, m := 2*i+1, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r := l + 1; r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		q.swap(i, m)
		i = m
	}
}

func (q *queue) push(w *waiter) {
	w.index = len(q.heap)
	q.heap = append(q.heap, w)
	q.up(w.index)
}

func (q *queue) pop() *waiter {
	w := q.heap[0]
	q.remove(w)
	return w
}

func (q *queue) remove(w *waiter) {
	i := w.index
	if i < 0 {
		return
	}
	last := len(q.heap) - 1
	q.swap(i, last)
	q.heap[last] = nil
	q.heap = q.heap[:last]
	w.index = -1
	if i < last {
		q.down(i)
		q.up(i)
	}
}
