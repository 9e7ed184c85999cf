package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/internal/wire"
)

// killRoundsEnv sets the rounds of TestKillRestart (default 2; the
// measured figure is 20 rounds).
const killRoundsEnv = "OBJUP_KILL_ROUNDS"

// TestKillRestart checks that fakegcs -data loses nothing it acknowledged
// when killed with SIGKILL: each round starts fakegcs on the same
// directory, runs concurrent uploads through the JSON API (simple uploads
// of 1 to 200 KiB, so that some content is inline in Pebble and some in
// files, and resumable uploads in two requests) and over gRPC (one-shot
// WriteObject calls of 1 to 200 KiB), kills it at a random
// moment, and restarts it on the directory, which must then hold every
// object whose upload was answered 200, with its bytes, in gets and in the
// listing, and every resumable session whose first chunk was answered 308,
// with at least those bytes, to be completed.
func TestKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and kills it")
	}
	rounds := 2
	if v := os.Getenv(killRoundsEnv); v != "" {
		rounds, _ = strconv.Atoi(v)
	}
	bin := filepath.Join(t.TempDir(), "fakegcs")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 38))
	acked := map[string]int{} // object name -> size, answered 200
	var open []*killSession   // sessions whose first chunk was answered 308
	var total, lostTotal, sessions int
	for round := range rounds {
		p := startKillable(t, bin, dir)
		// Everything acknowledged before must be there.
		lost := p.verify(t, acked, open)
		lostTotal += lost
		open = nil
		// Load, then kill at a random moment.
		var mu sync.Mutex
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wr := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for i := 0; ctx.Err() == nil; i++ {
					name := fmt.Sprintf("r%02d/w%d/%05d", round, w, i)
					switch wr.IntN(4) {
					case 1:
						size := 1 + int(killHash(name)%(200<<10))
						if p.putGRPC(ctx, name, size) != nil {
							return
						}
						mu.Lock()
						acked[name] = size
						mu.Unlock()
						continue
					case 0:
						s, err := p.startResumable(ctx, name)
						if err != nil {
							return
						}
						mu.Lock()
						open = append(open, s)
						mu.Unlock()
						if p.finishResumable(ctx, s) != nil {
							return
						}
						mu.Lock()
						s.done = true
						acked[name] = s.size
						mu.Unlock()
						continue
					}
					size := 1 + int(killHash(name)%(200<<10))
					if p.put(ctx, name, size) != nil {
						return
					}
					mu.Lock()
					acked[name] = size
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond)
		p.kill(t)
		stop()
		wg.Wait()
		var still []*killSession
		for _, s := range open {
			if !s.done {
				still = append(still, s)
			}
		}
		open = still
		sessions += len(still)
		total = len(acked)
	}
	p := startKillable(t, bin, dir)
	lostTotal += p.verify(t, acked, open)
	p.kill(t)
	t.Logf("%d rounds of kill -9: %d objects acknowledged, %d resumable sessions open at a kill; %d lost", rounds, total, sessions, lostTotal)
	if lostTotal > 0 {
		t.Fatalf("%d acknowledged writes lost", lostTotal)
	}
}

// killHash is a hash of name, for its size and content.
func killHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// killContent returns the bytes of object name, of size bytes.
func killContent(name string, size int) []byte {
	b := make([]byte, size)
	rand.NewChaCha8([32]byte(append(binary8(killHash(name)), make([]byte, 24)...))).Read(b)
	return b
}

func binary8(x uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(x >> (8 * i))
	}
	return b
}

// killSession is a resumable upload: its id, size, and the bytes its first
// chunk had acknowledged.
type killSession struct {
	name  string
	id    string
	size  int
	acked int
	done  bool
}

type killProc struct {
	cmd    *exec.Cmd
	base   string
	cc     *grpc.ClientConn
	client *http.Client
	exited chan error
}

func startKillable(t *testing.T, bin, dir string) *killProc {
	t.Helper()
	cmd, _, lines, exited := startBin(t, bin, "-data", dir, "-bucket", "kill")
	p := &killProc{cmd: cmd, exited: exited,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.exited
		}
	})
	var grpcAddr string
	var err error
	grpcAddr, p.base = addrs(t, lines)
	if p.cc, err = grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *killProc) kill(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("fakegcs did not exit within 30 s of SIGKILL")
	}
	p.client.CloseIdleConnections()
	p.cc.Close()
}

// putGRPC uploads name in one WriteObject call.
func (p *killProc) putGRPC(ctx context.Context, name string, size int) error {
	st, err := wire.NewWriteObjectStream(ctx, p.cc)
	if err != nil {
		return err
	}
	c := killContent(name, size)
	crc := crc32.Checksum(c, crc32.MakeTable(crc32.Castagnoli))
	st.Send(&wire.WriteObjectRequest{
		FirstMessage: &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: &wire.WriteObjectSpec{
			Resource: &wire.Object{Bucket: "projects/_/buckets/kill", Name: name}}},
		Data:            &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: c, Crc32C: &crc}},
		FinishWrite:     true,
		ObjectChecksums: &wire.ObjectChecksums{Crc32C: &crc},
	})
	resp, err := st.CloseAndRecv()
	if err == nil && resp.GetResource().GetSize() != int64(size) {
		err = fmt.Errorf("WriteObject %s: %v", name, resp)
	}
	return err
}

func (p *killProc) do(ctx context.Context, method, u string, body []byte, h map[string]string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// put uploads name in one request.
func (p *killProc) put(ctx context.Context, name string, size int) error {
	resp, b, err := p.do(ctx, "POST", p.base+"/upload/storage/v1/b/kill/o?uploadType=media&name="+url.QueryEscape(name),
		killContent(name, size), nil)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("upload %s: %s: %s", name, resp.Status, b)
	}
	return err
}

// startResumable opens a session for name and sends its first 256 KiB.
func (p *killProc) startResumable(ctx context.Context, name string) (*killSession, error) {
	s := &killSession{name: name, size: 256<<10 + int(killHash(name)%(100<<10))}
	resp, b, err := p.do(ctx, "POST", p.base+"/upload/storage/v1/b/kill/o?uploadType=resumable&name="+url.QueryEscape(name), nil, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("start %s: %s: %s", name, resp.Status, b)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	s.id = loc.Query().Get("upload_id")
	const first = 256 << 10
	resp, b, err = p.do(ctx, "PUT", p.sessionURL(s), killContent(name, s.size)[:first],
		map[string]string{"Content-Range": fmt.Sprintf("bytes 0-%d/*", first-1)})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 308 {
		return nil, fmt.Errorf("chunk %s: %s: %s", name, resp.Status, b)
	}
	s.acked = first
	return s, nil
}

func (p *killProc) sessionURL(s *killSession) string {
	return p.base + "/upload/storage/v1/b/kill/o?uploadType=resumable&name=" + url.QueryEscape(s.name) + "&upload_id=" + s.id
}

// finishResumable sends the rest of s from the size the session reports.
func (p *killProc) finishResumable(ctx context.Context, s *killSession) error {
	resp, b, err := p.do(ctx, "PUT", p.sessionURL(s), nil, map[string]string{"Content-Range": fmt.Sprintf("bytes */%d", s.size)})
	if err != nil {
		return err
	}
	switch resp.StatusCode {
	case 200:
		return nil // finalized before
	case 308:
	default:
		return fmt.Errorf("query %s: %s: %s", s.name, resp.Status, b)
	}
	from := 0
	if r := resp.Header.Get("Range"); r != "" {
		end, err := strconv.Atoi(strings.TrimPrefix(r, "bytes=0-"))
		if err != nil {
			return fmt.Errorf("query %s: Range %q", s.name, r)
		}
		from = end + 1
	}
	if from < s.acked {
		return fmt.Errorf("session %s of %s: persisted %d bytes, %d were acknowledged: %w", s.id, s.name, from, s.acked, errLost)
	}
	resp, b, err = p.do(ctx, "PUT", p.sessionURL(s), killContent(s.name, s.size)[from:],
		map[string]string{"Content-Range": fmt.Sprintf("bytes %d-%d/%d", from, s.size-1, s.size)})
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("finish %s: %s: %s", s.name, resp.Status, b)
	}
	return err
}

var errLost = fmt.Errorf("acknowledged bytes lost")

// verify checks that every acknowledged object is there with its bytes,
// in gets and in the listing, and completes the open sessions (which then
// count as acknowledged objects). It returns the count of losses.
func (p *killProc) verify(t *testing.T, acked map[string]int, open []*killSession) int {
	t.Helper()
	ctx := context.Background()
	lost := 0
	for _, s := range open {
		if s.done {
			continue
		}
		if err := p.finishResumable(ctx, s); err != nil {
			t.Errorf("open session: %v", err)
			lost++
			continue
		}
		s.done = true
		acked[s.name] = s.size
	}
	listed := map[string]int64{}
	for tok := ""; ; {
		u := p.base + "/storage/v1/b/kill/o?maxResults=1000&fields=nextPageToken,items(name,size)"
		if tok != "" {
			u += "&pageToken=" + url.QueryEscape(tok)
		}
		resp, b, err := p.do(ctx, "GET", u, nil, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("list: %v %s", err, b)
		}
		var page struct {
			NextPageToken string
			Items         []struct {
				Name string
				Size string
			}
		}
		if err := json.Unmarshal(b, &page); err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			listed[it.Name], _ = strconv.ParseInt(it.Size, 10, 64)
		}
		if tok = page.NextPageToken; tok == "" {
			break
		}
	}
	for name, size := range acked {
		if listed[name] != int64(size) {
			t.Errorf("%s: listed with size %d, want %d", name, listed[name], size)
			lost++
			continue
		}
		resp, b, err := p.do(ctx, "GET", p.base+"/storage/v1/b/kill/o/"+url.PathEscape(name)+"?alt=media", nil, nil)
		if err != nil || resp.StatusCode != 200 || !bytes.Equal(b, killContent(name, size)) {
			t.Errorf("%s: get: %v %v, %d bytes, not those written", name, err, resp.Status, len(b))
			lost++
		}
	}
	return lost
}
