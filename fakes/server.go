package fakes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/grpcfront"
	"github.com/objup/objup/fakes/internal/httpfront"
	"github.com/objup/objup/fakes/internal/retrytest"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/link"
)

// Server is a running fake GCS: a storage v2 gRPC server and a JSON API
// server over HTTP on one object store. Create it with [New] or [NewTest];
// the zero value is not usable. All methods are safe for concurrent use.
type Server struct {
	core      *core.Core        // what GCS does, below both fronts
	calls     *calls.Layer      // the request log, fault rules, roles and retry tests
	grpcFront *grpcfront.Server // the storage v2 gRPC API
	httpFront *httpfront.Server // the JSON and XML APIs

	tmpDir   string // the store's directory, to remove at Close (DataEnv); "" if none
	dataDir  string // WithDataDir
	grpc     *grpc.Server
	http     *http.Server
	grpcAddr string
	httpURL  string
	httpsURL string // WithHTTPSAddr; "" without
	certPEM  []byte // the HTTPS certificate; nil without

	mu        sync.Mutex
	conns     grpcfront.Conns
	httpConns atomic.Int64 // TCP connections the JSON API ports accepted

	serving   sync.WaitGroup
	serveErr  error // first unexpected error of a Serve loop; guarded by mu
	closeOnce sync.Once
	closeErr  error
}

// New starts a fake GCS with its buckets created and both servers listening,
// and returns it. The caller must call [Server.Close]. On error nothing is
// left running.
func New(opts ...Option) (*Server, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	limiter, err := cfg.newLimiter()
	if err != nil {
		return nil, fmt.Errorf("fakes: %w", err)
	}
	st, tmpDir, err := openStore(cfg.dataDir)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		st.Close()
		if tmpDir != "" {
			os.RemoveAll(tmpDir)
		}
		return nil, err
	}
	grpcLis, err := net.Listen("tcp", api.ListenAddr(cfg.grpcAddr))
	if err != nil {
		return fail(fmt.Errorf("fakes: gRPC listener: %w", err))
	}
	httpLis, err := net.Listen("tcp", api.ListenAddr(cfg.httpAddr))
	if err != nil {
		grpcLis.Close()
		return fail(fmt.Errorf("fakes: HTTP listener: %w", err))
	}
	s := &Server{
		core:     &core.Core{Store: st},
		calls:    &calls.Layer{},
		tmpDir:   tmpDir,
		dataDir:  cfg.dataDir,
		grpcAddr: api.DialAddr(grpcLis.Addr()),
		httpURL:  "http://" + api.DialAddr(httpLis.Addr()),
	}
	var httpsLis net.Listener
	if cfg.httpsAddr != "" {
		if httpsLis, err = s.listenHTTPS(cfg.httpsAddr, cfg.link); err != nil {
			grpcLis.Close()
			httpLis.Close()
			return fail(err)
		}
	}
	s.core.Commits.Fixed, s.core.Commits.Draw, s.core.Commits.Drop = cfg.commitDelay, cfg.commitDraw, cfg.deadlineDrop
	s.core.Commits.Wait = cfg.commitWait
	s.core.Limiter = limiter
	s.calls.Creds = cfg.creds
	s.calls.Log.Init(cfg.callLog)
	s.core.Resumables.Init(cfg.sessionExpiry, cfg.maxSessions)
	err = s.core.RestoreSessions()
	if err == nil {
		err = s.core.OpenMultipart()
	}
	if err != nil {
		grpcLis.Close()
		httpLis.Close()
		if httpsLis != nil {
			httpsLis.Close()
		}
		return fail(err)
	}
	for _, b := range cfg.buckets {
		s.core.Store.CreateBucket(b, false, true) // names were validated
	}
	for _, b := range cfg.zonal {
		s.core.Store.CreateZonalBucket(b, true) // names were validated, none is also plain
	}
	s.calls.Faults.Stop = make(chan struct{})
	s.grpcFront = grpcfront.New(s.core, s.calls)
	s.httpFront = httpfront.New(s.core, s.calls, s.grpcAddr)
	s.calls.Retry = retrytest.New(retryHost{RetryHTTP: httpfront.RetryHTTP{S: s.httpFront}, RetryGRPC: grpcfront.RetryGRPC{S: s.grpcFront}, stop: s.calls.Faults.Stop}, grpcfront.RetryMethods())
	s.grpc = grpc.NewServer(append(append([]grpc.ServerOption{
		// Above any sane message, so that an oversized one gets the
		// fake's clear InvalidArgument rather than gRPC's
		// ResourceExhausted, which clients retry.
		grpc.MaxRecvMsgSize(64 << 20),
	}, s.grpcFront.Options()...), s.conns.ServerOptions(cfg.maxStreams, cfg.link)...)...)
	s.grpcFront.Register(s.grpc)
	s.http = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 30 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.httpConns.Add(1)
			}
		}}

	grpcLis, httpLis = link.Listen(grpcLis, cfg.link), link.Listen(httpLis, cfg.link)
	s.serving.Add(2)
	go func() {
		defer s.serving.Done()
		// ErrServerStopped: Close ran before Serve started.
		if err := s.grpc.Serve(grpcLis); !errors.Is(err, grpc.ErrServerStopped) {
			s.noteServeErr(err)
		}
	}()
	go func() {
		defer s.serving.Done()
		if err := s.http.Serve(httpLis); !errors.Is(err, http.ErrServerClosed) {
			s.noteServeErr(err)
		}
	}()
	if httpsLis != nil {
		s.serveHTTPS(httpsLis)
	}
	return s, nil
}

// openStore opens the store: on disk in dir if dir is not "", else in a
// temporary directory (returned, for Close to remove) if DataEnv is "1",
// else in memory.
func openStore(dir string) (st *store.Store, tmpDir string, err error) {
	if dir == "" && os.Getenv(DataEnv) == "1" {
		if tmpDir, err = os.MkdirTemp("", "fakegcs-data-"); err != nil {
			return nil, "", fmt.Errorf("fakes: %s: %w", DataEnv, err)
		}
		dir = tmpDir
	}
	if dir == "" {
		return store.New(), "", nil
	}
	if st, err = store.Open(dir); err != nil {
		if tmpDir != "" {
			os.RemoveAll(tmpDir)
		}
		return nil, "", fmt.Errorf("fakes: %w", err)
	}
	return st, tmpDir, nil
}

func (s *Server) noteServeErr(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	if s.serveErr == nil {
		s.serveErr = err
	}
	s.mu.Unlock()
}

// GRPCAddr returns the host:port of the gRPC server, e.g. "127.0.0.1:40123",
// for grpc.NewClient or option.WithEndpoint. The server speaks plaintext
// HTTP/2: dial it with insecure transport credentials.
func (s *Server) GRPCAddr() string { return s.grpcAddr }

// HTTPURL returns the base URL of the JSON API server, e.g.
// "http://127.0.0.1:40124". The JSON API lives under HTTPURL()+"/storage/v1/"
// (the endpoint to give the official HTTP client, or HTTPURL without its
// scheme as STORAGE_EMULATOR_HOST), uploads under
// HTTPURL()+"/upload/storage/v1/", and path-style reads at
// HTTPURL()+"/BUCKET/OBJECT".
func (s *Server) HTTPURL() string { return s.httpURL }

// Close shuts both servers down: it stops accepting connections, ends the
// waits of [Server.Delay] rules, waits up to 5 seconds for calls in flight to
// finish, then cancels those left (a client stream that is never closed
// costs those 5 seconds). It
// returns only once every goroutine the server started has ended. Close is
// idempotent: later calls return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.calls.Faults.Stop)
		done := make(chan struct{})
		go func() {
			s.grpc.GracefulStop()
			close(done)
		}()
		timer := time.NewTimer(api.CloseGrace)
		select {
		case <-done:
		case <-timer.C:
			s.grpc.Stop()
			<-done
		}
		timer.Stop()

		ctx, cancel := context.WithTimeout(context.Background(), api.CloseGrace)
		if err := s.http.Shutdown(ctx); err != nil {
			s.http.Close()
		}
		cancel()
		s.serving.Wait()

		s.core.Resumables.Reset()
		s.mu.Lock()
		s.closeErr = s.serveErr
		s.mu.Unlock()
		if err := s.core.Store.Close(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
		if s.tmpDir != "" {
			os.RemoveAll(s.tmpDir)
		}
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("fakes: serve: %w", s.closeErr)
		}
	})
	return s.closeErr
}
