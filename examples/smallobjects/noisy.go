package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
)

// noisyTenant is the tenant of -noisy-tenant's uploads.
const noisyTenant = "noisy"

// errNoisyDone abandons a noisy upload once its bytes went out: the noisy
// tenant loads the client and the service, and stores nothing.
var errNoisyDone = errors.New("noisy upload done")

// noisySummary is what the noisy tenant did while the objects were uploaded.
type noisySummary struct {
	// Size and Concurrency are -noisy-tenant and -noisy-concurrency.
	Size        int64 `json:"size"`
	Concurrency int   `json:"concurrency"`
	// Budget is -budget, the pool's byte budget all tenants share; Fair
	// says whether tenants were served in turn when it was spent (-fair).
	Budget int64 `json:"budget"`
	Fair   bool  `json:"fair"`
	// Uploads counts the noisy uploads that sent all their bytes; Bytes
	// the bytes the service acknowledged, MBPerSecond their rate.
	Uploads     int64   `json:"uploads"`
	Bytes       int64   `json:"bytes"`
	MBPerSecond float64 `json:"mb_per_second"`
}

// noise runs -noisy-concurrency uploads of -noisy-tenant bytes each, in a
// loop, as tenant "noisy", until stop is called. Each upload sends all its
// bytes but the last chunk's and is then abandoned, so nothing is stored
// (the fake keeps no generations of it, and a listing does not see it).
type noise struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	start  time.Time
	sum    noisySummary
	bytes  atomic.Int64
	done   atomic.Int64
	err    atomic.Value
}

func startNoise(ctx context.Context, c *uploader.Client, cfg *config) (*noise, error) {
	ctx, err := header.WithTenant(ctx, noisyTenant)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	n := &noise{cancel: cancel, start: time.Now(), sum: noisySummary{
		Size: cfg.noisySize, Concurrency: cfg.noisyConcurrency, Budget: cfg.budget, Fair: cfg.fair}}
	data := make([]byte, cfg.noisySize)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for i := range cfg.noisyConcurrency {
		n.wg.Go(func() {
			for ctx.Err() == nil {
				if err := n.upload(ctx, c, cfg.bucket, fmt.Sprintf("objup-noisy-tenant/%d", i), data); err != nil {
					n.err.Store(err)
					return
				}
			}
		})
	}
	return n, nil
}

// upload sends data as one noisy upload and abandons it.
func (n *noise) upload(ctx context.Context, c *uploader.Client, bucket, name string, data []byte) error {
	var acked atomic.Int64
	w, err := c.NewWriter(ctx, bucket, name, uploader.WithProgress(func(p int64) {
		for {
			old := acked.Load()
			if p <= old {
				return
			}
			if acked.CompareAndSwap(old, p) {
				n.bytes.Add(p - old)
				return
			}
		}
	}))
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	_ = w.CloseWithError(errNoisyDone)
	switch {
	case err == nil:
		n.done.Add(1)
	case ctx.Err() == nil:
		return err
	}
	return nil
}

// stop ends the noise and returns what it did.
func (n *noise) stop() (*noisySummary, error) {
	elapsed := time.Since(n.start)
	n.cancel()
	n.wg.Wait()
	s := n.sum
	s.Uploads, s.Bytes = n.done.Load(), n.bytes.Load()
	s.MBPerSecond = float64(s.Bytes) / elapsed.Seconds() / 1e6
	if err, _ := n.err.Load().(error); err != nil {
		return &s, fmt.Errorf("noisy tenant: %w", err)
	}
	return &s, nil
}
