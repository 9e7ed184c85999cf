package fakes_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/objup/objup/fakes"
)

// exchange is one request a tool sent and the fake's answer, as
// fakes/internal/toolcapture records them.
type exchange struct {
	Method     string      `json:"method"`
	URI        string      `json:"uri"`
	Header     http.Header `json:"header"`
	Body       []byte      `json:"body"`
	Status     int         `json:"status"`
	RespHeader http.Header `json:"respHeader"`
	RespBody   []byte      `json:"respBody"`
	RespLen    int64       `json:"respLen"`
	RespSHA256 string      `json:"respSHA256"`
}

// TestToolSessions replays, request by request, what gcloud storage (over
// HTTP) and gsutil (over HTTPS) sent in the sessions of
// conformance/gcloud.sh, recorded with its -capture flag into
// testdata/tools: the exact methods, URIs, headers and bodies (multipart
// uploads with Python's single-quoted boundary, resumable sessions started
// on /resumable/upload/storage/v1, parallel composite uploads composed and
// their components deleted, listings with includeFoldersAsPrefixes,
// buckets.getStorageLayout, managedFolders.list, bucket insert and
// delete). The values a tool took from an earlier answer (session ids,
// generations) are replaced by those of the replay's answers. Every answer
// must have the recorded status, the same object names, sizes, checksums
// and component counts, and the same content. To record again, after a
// change the tools would see: conformance/gcloud.sh -capture
// fakes/testdata/tools.
func TestToolSessions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "tools", "*.jsonl.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded sessions in testdata/tools: %v", err)
	}
	for _, file := range files {
		tool := strings.TrimSuffix(filepath.Base(file), ".jsonl.gz")
		t.Run(tool, func(t *testing.T) {
			xs := readExchanges(t, file)
			// The buckets conformance/gcloud.sh has fakegcs create.
			srv := fakes.NewTest(t, fakes.WithBucket("gcloud-bucket"), fakes.WithBucket("gsutil-bucket"),
				fakes.WithBucket("gsutil-pypi-bucket"), fakes.WithHTTPSAddr(fakes.DefaultAddr))
			base, client := srv.HTTPURL(), &http.Client{}
			if tool == "gsutil" { // gsutil's JSON mode speaks only HTTPS
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(srv.CertPEM())
				tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
				t.Cleanup(tr.CloseIdleConnections)
				base, client = srv.HTTPSURL(), &http.Client{Transport: tr}
			}
			r := &replayer{t: t, base: base, client: client, subst: map[string]string{}}
			for i, x := range xs {
				r.replay(i, x)
			}
		})
	}
}

// readExchanges reads a recorded session.
func readExchanges(t *testing.T, file string) []*exchange {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var xs []*exchange
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		x := new(exchange)
		if err := json.Unmarshal(sc.Bytes(), x); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		xs = append(xs, x)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return xs
}

// replayer sends recorded requests to a fake and checks its answers.
type replayer struct {
	t      *testing.T
	base   string
	client *http.Client
	subst  map[string]string // recorded value -> the replay's (session ids, generations)
}

// hopHeaders are the headers a replay leaves to its own connection.
var hopHeaders = []string{"Connection", "Content-Length", "Keep-Alive", "Transfer-Encoding"}

func (r *replayer) replace(s string) string {
	for from, to := range r.subst {
		s = strings.ReplaceAll(s, from, to)
	}
	return s
}

// replay sends request i and compares the answer with the recorded one.
func (r *replayer) replay(i int, x *exchange) {
	t := r.t
	t.Helper()
	what := x.Method + " " + x.URI
	body := []byte(r.replace(string(x.Body)))
	req, err := http.NewRequestWithContext(ctxT(t), x.Method, r.base+r.replace(x.URI), bytes.NewReader(body))
	if err != nil {
		t.Fatalf("request %d, %s: %v", i, what, err)
	}
	for k, vs := range x.Header {
		if !slices.Contains(hopHeaders, http.CanonicalHeaderKey(k)) {
			req.Header[k] = vs
		}
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatalf("request %d, %s: %v", i, what, err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("request %d, %s: reading the answer: %v", i, what, err)
	}
	if resp.StatusCode != x.Status {
		t.Fatalf("request %d, %s: status %d, recorded %d: %s", i, what, resp.StatusCode, x.Status, got)
	}
	r.learn(x, resp, got)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && x.RespBody != nil {
		if g, w := jsonSummary(got), jsonSummary(x.RespBody); g != w {
			t.Fatalf("request %d, %s: answer\n%s\nrecorded\n%s", i, what, g, w)
		}
		return
	}
	sum := sha256.Sum256(got)
	if int64(len(got)) != x.RespLen || hex.EncodeToString(sum[:]) != x.RespSHA256 {
		t.Fatalf("request %d, %s: %d bytes of content, recorded %d (or their SHA-256 differs)", i, what, len(got), x.RespLen)
	}
}

// learn maps the recorded session id and generations of an answer to the
// replay's, for the requests that follow.
func (r *replayer) learn(x *exchange, resp *http.Response, got []byte) {
	if loc := resp.Header.Get("Location"); loc != "" {
		if old := uploadID(x.RespHeader.Get("Location")); old != "" {
			r.subst[old] = uploadID(loc)
		}
	}
	var was, now objectsJSON
	if json.Unmarshal(x.RespBody, &was) != nil || json.Unmarshal(got, &now) != nil {
		return
	}
	gens := map[string]string{}
	for _, o := range append(now.Items, now.objectJSON) {
		gens[o.Name] = o.Generation
	}
	for _, o := range append(was.Items, was.objectJSON) {
		if g := gens[o.Name]; o.Generation != "" && g != "" {
			r.subst[o.Generation] = g
		}
	}
}

// uploadID returns the upload_id parameter of a session URI.
func uploadID(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return ""
	}
	return u.Query().Get("upload_id")
}

// objectJSON holds the fields of an object resource a replay compares.
type objectJSON struct {
	Kind           string `json:"kind"`
	Name           string `json:"name"`
	Bucket         string `json:"bucket"`
	Generation     string `json:"generation"`
	Size           string `json:"size"`
	CRC32C         string `json:"crc32c"`
	MD5            string `json:"md5Hash"`
	ComponentCount int    `json:"componentCount"`
	ContentType    string `json:"contentType"`
}

// objectsJSON is an object, a bucket, or a list of either.
type objectsJSON struct {
	objectJSON
	Items    []objectJSON `json:"items"`
	Prefixes []string     `json:"prefixes"`
}

// jsonSummary returns what a replay compares of a JSON answer: every
// field but the generations, times and links, which differ from run to
// run.
func jsonSummary(b []byte) string {
	var v objectsJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return "not JSON: " + string(b)
	}
	v.Generation = ""
	for i := range v.Items {
		v.Items[i].Generation = ""
	}
	out, _ := json.Marshal(v)
	return string(out)
}
