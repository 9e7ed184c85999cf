package fakes

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/link"
)

// WithHTTPSAddr makes the server also serve the JSON and XML APIs over
// HTTPS (HTTP/1.1 and HTTP/2) on addr, with the same rules as
// [WithGRPCAddr] ("127.0.0.1:0": a free port on loopback), for clients
// that speak only HTTPS, such as gsutil's JSON mode. The certificate is
// one the server makes when it starts (self-signed, ECDSA P-256, for
// 127.0.0.1, ::1, localhost and the listening host, valid for a year):
// [Server.CertPEM] returns it for the client to trust. The HTTPS port
// serves the same store and handlers as the HTTP one, and the links and
// session URIs it hands out are https ones. Off by default.
func WithHTTPSAddr(addr string) Option {
	return optionFunc(func(c *config) { c.httpsAddr = addr })
}

// HTTPSURL returns the base URL of the HTTPS server that [WithHTTPSAddr]
// started, e.g. "https://127.0.0.1:40125", or "" without it.
func (s *Server) HTTPSURL() string { return s.httpsURL }

// CertPEM returns the HTTPS server's certificate, PEM-encoded, for a
// client to trust (a CA file: boto's ca_certificates_file, the Cloud SDK's
// core/custom_ca_certs_file, an x509.CertPool), or nil without
// [WithHTTPSAddr]. The caller may keep and modify the returned slice.
func (s *Server) CertPEM() []byte {
	if s.certPEM == nil {
		return nil
	}
	return append([]byte(nil), s.certPEM...)
}

// listenHTTPS opens the HTTPS listener on addr, behind the simulated link,
// and makes its certificate; s.http serves it once startHTTPS runs.
func (s *Server) listenHTTPS(addr string, l link.Config) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("fakes: HTTPS address %q: %w", addr, err)
	}
	lis, err := net.Listen("tcp", api.ListenAddr(addr))
	if err != nil {
		return nil, fmt.Errorf("fakes: HTTPS listener: %w", err)
	}
	host, _, _ := net.SplitHostPort(lis.Addr().String())
	cert, certPEM, err := api.SelfSignedCert(host, time.Now())
	if err != nil {
		lis.Close()
		return nil, fmt.Errorf("fakes: HTTPS certificate: %w", err)
	}
	s.certPEM = certPEM
	s.httpsURL = "https://" + api.DialAddr(lis.Addr())
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12}
	return tls.NewListener(link.Listen(lis, l), cfg), nil
}

// serveHTTPS serves the HTTP server's handler on the TLS listener lis
// until Close.
func (s *Server) serveHTTPS(lis net.Listener) {
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		if err := s.http.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
			s.noteServeErr(err)
		}
	}()
}
