package uploader

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"

	"google.golang.org/api/option"

	"github.com/objup/objup/uploader/internal/grpcx"
	"github.com/objup/objup/uploader/internal/httpx"
	"github.com/objup/objup/uploader/internal/xfer"
)

// WithXMLEndpoint sets the XML API's endpoint that the multipart uploads
// of a gRPC client go to (see WithParallelUpload and ViaMultipart): a URL
// with a scheme and a host, such as "https://storage.googleapis.com" (the
// default) or an emulator's "http://127.0.0.1:9000". The client's
// credentials go with them as with its gRPC calls. A client made WithHTTP
// takes the host of its JSON API's endpoint, and a gRPC client dialled to
// an emulator (STORAGE_EMULATOR_HOST_GRPC) takes STORAGE_EMULATOR_HOST's.
func WithXMLEndpoint(url string) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.xmlEndpoint = url })
}

// isBaseURL reports whether s is an http or https URL with a host and no
// path, query or fragment.
func isBaseURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		(u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == ""
}

// grpcEmulatorEnv names the environment variable that dials a gRPC client
// to an emulator.
const grpcEmulatorEnv = "STORAGE_EMULATOR_HOST_GRPC"

// xmlAPI is a client's way to the XML API's multipart upload: the JSON
// API's HTTP client for a client made WithHTTP, else one made on first use
// with the gRPC client's credentials.
type xmlAPI struct {
	apiOpts  []option.ClientOption
	endpoint string         // WithXMLEndpoint
	json     xfer.Transport // the JSON API's transport (WithHTTP), before admission
	grpc     xfer.Transport // the gRPC transport, before admission

	once sync.Once
	mp   xfer.Multipart
	err  error
}

// noXMLEndpoint is the failure of a multipart upload of a gRPC client
// dialled to an endpoint other than GCS's whose XML endpoint it does not
// know.
func noXMLEndpoint(target string) error {
	return fmt.Errorf("the client is dialled to %q and knows no XML endpoint there: set WithXMLEndpoint (or STORAGE_EMULATOR_HOST for an emulator)", target)
}

// gcsTarget reports whether a gRPC target is GCS's own endpoint, whose
// XML endpoint is DefaultXMLEndpoint.
func gcsTarget(target string) bool {
	if i := strings.LastIndex(target, "/"); i >= 0 {
		target = target[i+1:]
	}
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		host = target
	}
	return host == "storage.googleapis.com" || host == "storage.mtls.googleapis.com"
}

// multipart returns the client's XML API multipart upload, made once.
func (c *Client) multipart() (xfer.Multipart, error) {
	x := &c.xml
	x.once.Do(func() {
		if x.json != nil && x.endpoint == "" {
			x.mp, _ = httpx.Multipart(x.json)
			return
		}
		endpoint, emulator := x.endpoint, false
		if endpoint == "" {
			endpoint = httpx.XMLEndpoint()
			emulator = endpoint != ""
		}
		if endpoint == "" {
			if target := grpcx.Target(x.grpc); os.Getenv(grpcEmulatorEnv) != "" || !gcsTarget(target) {
				x.err = noXMLEndpoint(target)
				return
			}
			endpoint = httpx.DefaultXMLEndpoint
		}
		x.mp, x.err = httpx.NewMultipart(context.Background(), x.apiOpts, endpoint, emulator)
	})
	return x.mp, x.err
}
