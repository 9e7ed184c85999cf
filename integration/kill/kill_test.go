// Package kill_test kills uploaders: a child process uploads a file
// through objup with a journal, to fakegcs with its store on disk, through
// a fault proxy that also resets, cuts and stalls connections at random,
// and is killed with SIGKILL at a random moment; a new
// child resumes from the journal; and so on until one finishes. In some
// rounds fakegcs is killed too and started again on its data. At the end
// the object must be exact (size and CRC32C), written once (the bucket
// keeps every generation: there is one), with no temporary object left,
// and the bytes sent again after the kills bounded.
//
// OBJUP_KILL_ROUNDS sets the rounds per scenario (default 4),
// OBJUP_KILL_SIZE the file's size in MiB (default 48), and OBJUP_KILL_SEED
// the seed of the kills' moments (default: the clock's; the test logs it).
package kill_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes/faultproxy"
	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
)

const (
	mib    = 1 << 20
	bucket = "kills"
)

// The child's environment.
const (
	envChild   = "OBJUP_KILL_CHILD" // the scenario: resumable, parallel, appendable
	envAddr    = "OBJUP_KILL_ADDR"  // host:port of the API to upload to
	envAPI     = "OBJUP_KILL_API"   // grpc or json
	envSrc     = "OBJUP_KILL_SRC"
	envJournal = "OBJUP_KILL_JOURNAL"
	envObject  = "OBJUP_KILL_OBJECT"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		if err := child(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			if uploader.IsSourceChanged(err) {
				os.Exit(3)
			}
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child uploads the source as the scenario says, resuming the journal's
// handle if it has one.
func child(mode string) error {
	object := os.Getenv(envObject)
	ctx := context.Background()
	ctx, err := header.WithTenant(ctx, "kill-"+mode)
	if err != nil {
		return err
	}
	opts := []option.ClientOption{option.WithoutAuthentication(), uploader.WithRetry(uploader.Retry{Deadline: 20 * time.Second})}
	if os.Getenv(envAPI) == "json" {
		opts = append(opts, uploader.WithHTTP(), option.WithEndpoint("http://"+os.Getenv(envAddr)+"/storage/v1/"))
	} else {
		opts = append(opts, option.WithEndpoint(os.Getenv(envAddr)), option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	c, err := uploader.NewClient(ctx, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	j, err := uploader.OpenJournal(os.Getenv(envJournal))
	if err != nil {
		return err
	}
	f, err := os.Open(os.Getenv(envSrc))
	if err != nil {
		return err
	}
	defer f.Close()
	if h, ok, err := j.Lookup(bucket, object); err != nil {
		return err
	} else if ok {
		var extra []uploader.WriterOption
		if h.Kind == uploader.KindParallel || h.Kind == uploader.KindMultipart {
			extra = append(extra, uploader.WithParallelUpload(uploader.ParallelUpload{Parts: 4}))
		}
		_, err := c.Resume(ctx, h, f, append(extra, uploader.WithJournal(j))...)
		return settled(ctx, c, j, object, f, err)
	}
	// A fresh upload creates the object: a run killed after its upload
	// ended (the journal entry gone, the exit not yet made) must not
	// write it again, so the precondition finds it, and its bytes are
	// compared with the file's.
	create := uploader.WithConditions(uploader.Conditions{DoesNotExist: true})
	switch mode {
	case "parallel":
		_, err = c.Upload(ctx, bucket, object, f, uploader.WithJournal(j), create, uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 4 * mib, Parts: 4}))
	case "multipart":
		// The XML API's multipart upload takes no precondition: a run
		// killed after its upload ended finds the object by its bytes.
		if a, aerr := c.Attrs(ctx, bucket, object); aerr == nil && sameAsFile(a, f) {
			return nil
		}
		_, err = c.Upload(ctx, bucket, object, f, uploader.WithJournal(j), uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 5 * mib, Parts: 4, Method: uploader.ViaMultipart}))
	case "appendable":
		err = appendFile(ctx, c, j, f, object)
	default:
		_, err = c.Upload(ctx, bucket, object, f, uploader.WithJournal(j), create)
	}
	return settled(ctx, c, j, object, f, err)
}

// settled returns nil when err is the failed precondition of an object
// that holds the file's bytes: a run whose answer was lost with it (or a
// session's last message delivered after its run was killed) stored it.
// The journal's entry, kept for an outcome the Writer could not know, is
// removed then.
func settled(ctx context.Context, c *uploader.Client, j *uploader.Journal, object string, f *os.File, err error) error {
	if uploader.CodeOf(err) == codes.FailedPrecondition {
		a, aerr := c.Attrs(ctx, bucket, object)
		if aerr == nil && !a.Finalized.IsZero() && sameAsFile(a, f) {
			return j.Remove(bucket, object)
		}
		if aerr == nil {
			return fmt.Errorf("%w (the object: generation %d, %d bytes, CRC32C %08x, finalized %v)", err, a.Generation, a.Size, a.CRC32C, a.Finalized)
		}
		return errors.Join(err, aerr)
	}
	return err
}

// sameAsFile reports whether a holds f's bytes.
func sameAsFile(a *uploader.ObjectAttrs, f *os.File) bool {
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
	return err == nil && a.HasCRC32C && a.Size == int64(len(data)) && a.CRC32C == crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
}

// appendFile writes f to an appendable object, flushing every 4 MiB. An
// object that a killed run created before its journal named it (the
// create's answer was lost with the process) is found by its
// precondition, and taken over once the service's checksum of what it
// holds matches the file's first bytes.
func appendFile(ctx context.Context, c *uploader.Client, j *uploader.Journal, f *os.File, object string) error {
	w, err := c.NewWriter(ctx, bucket, object, uploader.WithAppendable(), uploader.WithJournal(j), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	if err != nil {
		return err
	}
	buf := make([]byte, 4*mib)
	for {
		n, rerr := io.ReadFull(f, buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				break
			}
			if _, err := w.Flush(ctx); err != nil {
				break
			}
		}
		if rerr != nil {
			break
		}
	}
	err = w.Close()
	if uploader.CodeOf(err) != codes.FailedPrecondition {
		return err
	}
	a, aerr := c.Attrs(ctx, bucket, object)
	if aerr != nil {
		return errors.Join(err, aerr)
	}
	if !a.Finalized.IsZero() {
		return err // finalized: the caller compares its bytes
	}
	_, err = c.Resume(ctx, uploader.Handle{Version: 1, Kind: uploader.KindAppendable, API: "grpc", Bucket: bucket, Object: object, Generation: a.Generation}, f, uploader.WithJournal(j))
	return err
}

// fake is fakegcs running on its data directory, killed and started
// again on fixed ports.
type fake struct {
	t          *testing.T
	bin, data  string
	grpc, http string
	cmd        *exec.Cmd
}

func (f *fake) start() {
	f.t.Helper()
	// A path like a user's (100 MB/s, 10 ms away), so an upload lasts long
	// enough to be killed in the middle.
	args := []string{"-data", f.data, "-grpc", f.grpc, "-http", f.http, "-bandwidth", "100MB/s", "-rtt", "10ms"}
	for try := 0; ; try++ {
		cmd := exec.Command(f.bin, args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			f.t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			f.t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		var lines []string
		for len(lines) < 2 && sc.Scan() {
			lines = append(lines, sc.Text())
		}
		if len(lines) == 2 {
			go io.Copy(io.Discard, out)
			f.cmd = cmd
			f.grpc = strings.TrimPrefix(lines[0], "grpc ")
			f.http = strings.TrimPrefix(strings.TrimPrefix(lines[1], "http "), "http://")
			return
		}
		_ = cmd.Wait()
		if try == 50 {
			f.t.Fatalf("fakegcs did not start on %s and %s", f.grpc, f.http)
		}
		time.Sleep(100 * time.Millisecond) // the killed one's ports are still being released
	}
}

func (f *fake) kill() {
	_ = f.cmd.Process.Signal(syscall.SIGKILL)
	_ = f.cmd.Wait()
}

// build builds fakegcs once per test binary.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakegcs")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/objup/objup/fakes/cmd/fakegcs")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build fakegcs: %v\n%s", err, out)
	}
	return bin
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestKillRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	rounds := envInt("OBJUP_KILL_ROUNDS", 4)
	size := envInt("OBJUP_KILL_SIZE", 48) * mib
	bin := build(t)
	for _, sc := range []struct{ mode, api string }{
		{"resumable", "grpc"},
		{"resumable", "json"},
		{"parallel", "grpc"},
		{"parallel", "json"},
		{"multipart", "json"},
		{"appendable", "grpc"},
	} {
		t.Run(sc.mode+"-"+sc.api, func(t *testing.T) {
			killRounds(t, bin, sc.mode, sc.api, rounds, size)
		})
	}
}

// killRounds uploads files, one object each, killing each upload's
// children at random moments until rounds kills were made in all; every
// few kills fakegcs is killed too, and once the source is changed between
// two runs, which must be refused before a byte of it is sent.
func killRounds(t *testing.T, bin, mode, api string, rounds, size int) {
	dir := t.TempDir()
	f := &fake{t: t, bin: bin, data: filepath.Join(dir, "data"), grpc: "127.0.0.1:0", http: "127.0.0.1:0"}
	f.start()
	t.Cleanup(f.kill)
	makeBucket(t, f.http)
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("OBJUP_KILL_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("OBJUP_KILL_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, uint64(len(mode)+len(api))))
	target := f.grpc
	if api == "json" {
		target = f.http
	}
	// Besides the kills, the path resets, cuts and stalls connections at
	// random, and delivers or drops what it held from a sender that reset
	// (a killed process's last bytes among them).
	p, err := faultproxy.New(target, faultproxy.WithRandom(int64(seed), faultproxy.Random{
		MeanBytes: 48 << 20, StallMin: 50 * time.Millisecond, StallMax: 400 * time.Millisecond, Held: [2]int{1, 1},
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "journal")
	src := filepath.Join(dir, "src.bin")
	expected := time.Duration(size) * time.Second / (100 << 20) // at 100 MB/s
	var r runs
	start := time.Now()
	changed := false
	for n := 0; r.kills < rounds; n++ {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if err := os.WriteFile(src, data, 0o600); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("big/file-%d.bin", n)
		before := p.Stats().BytesUp
		killsBefore := r.kills + r.fakeKills
		var trail []string // what the journal said after each kill
		for round := 0; ; round++ {
			if round > 60 {
				t.Fatalf("%s not done after %d runs; the journal after each kill: %s", name, round, strings.Join(trail, " "))
			}
			kill := r.kills < rounds
			var d time.Duration
			if kill {
				d = 50*time.Millisecond + time.Duration(rng.Int64N(int64(expected)))
			}
			killed, stderr, err := r.run(exe, d, mode, api, p.Addr(), src, journal, name)
			if killed {
				trail = append(trail, fmt.Sprintf("%v:%s", d.Round(time.Millisecond), said(journal, name)))
				if r.kills%5 == 4 {
					f.kill()
					f.start()
					r.fakeKills++
				}
				if off, ok := verified(journal, name); !changed && ok {
					changed = true
					refuseChanged(t, &r, exe, p, mode, api, src, journal, name, data, off)
				}
				continue
			}
			if err != nil {
				t.Logf("%s run %d failed (after %d kills, %d of fakegcs): %v\n%s", name, round, r.kills, r.fakeKills, err, stderr)
				r.failed++
				continue
			}
			break
		}
		check(t, f.http, name, data)
		if entry(journal, name) {
			t.Errorf("%s: journal entry left after the upload finished", name)
		}
		resent := p.Stats().BytesUp - before - int64(size)
		r.resent += resent
		// A kill loses at most what was in flight: the window (at most 64
		// MiB) or, in parallel, the parts in flight (4 of 4 or 5 MiB), and
		// a restarted fake loses no acknowledged byte.
		if limit := int64(r.kills+r.fakeKills-killsBefore+1) * (64*mib + 5*mib); resent > limit {
			t.Errorf("%s: %d bytes sent again after %d kills, more than %d", name, resent, r.kills+r.fakeKills-killsBefore, limit)
		}
		r.uploads++
	}
	empty, withParts := uploadsLeft(t, f.http)
	if withParts > 0 {
		t.Errorf("%d multipart uploads with parts left neither completed nor aborted", withParts)
	}
	t.Logf("%s over %s: %d uploads of %d MiB, %d kills of the uploader, %d of fakegcs, %d runs failed and were run again, %.1f MiB sent again in all (%.1f MiB a kill), %d empty multipart uploads left (an initiate whose answer went with a killed run), %v",
		mode, api, r.uploads, size/mib, r.kills, r.fakeKills, r.failed, float64(r.resent)/mib, float64(r.resent)/mib/float64(max(1, r.kills+r.fakeKills)), empty, time.Since(start).Round(time.Millisecond))
}

// runs counts what a scenario did.
type runs struct {
	kills, fakeKills, failed, uploads int
	resent                            int64
}

// run runs one child on object name, killed after d if d is not 0, and
// returns how it ended.
func (r *runs) run(exe string, d time.Duration, mode, api, addr, src, journal, name string) (killed bool, stderr string, err error) {
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envAddr+"="+addr, envAPI+"="+api, envSrc+"="+src, envJournal+"="+journal, envObject+"="+name)
	var buf bytes.Buffer
	cmd.Stderr = &buf
	if err := cmd.Start(); err != nil {
		return false, "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if d == 0 {
		err := <-done
		return false, buf.String(), err
	}
	select {
	case err := <-done:
		return false, buf.String(), err
	case <-time.After(d):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		r.kills++
		return true, buf.String(), nil
	}
}

// refuseChanged changes the source's byte at off, one the journal says
// the service holds, and runs a child, which must fail with
// IsSourceChanged before sending a byte of data; the source is then put
// back.
func refuseChanged(t *testing.T, r *runs, exe string, p *faultproxy.Proxy, mode, api, src, journal, name string, data []byte, off int64) {
	t.Helper()
	bad := append([]byte(nil), data...)
	bad[off] ^= 0xff
	if err := os.WriteFile(src, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	// What the proxy still holds of the killed run is delivered first, and
	// not counted as this run's.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = p.Settle(ctx)
	cancel()
	before := p.Stats().BytesUp
	_, stderr, err := r.run(exe, 0, mode, api, p.Addr(), src, journal, name)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("a run on a changed source ended with %v, want the exit of IsSourceChanged\n%s", err, stderr)
	}
	// A client's connection set-up and look-ups are small; a chunk is
	// 256 KiB.
	if sent := p.Stats().BytesUp - before; sent >= 64<<10 {
		t.Errorf("a run on a changed source sent %d bytes", sent)
	}
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// verified returns the offset of a byte that the journal's entry for name
// says the service holds, if there is one.
func verified(journal, name string) (int64, bool) {
	j, err := uploader.OpenJournal(journal)
	if err != nil {
		return 0, false
	}
	h, ok, _ := j.Lookup(bucket, name)
	switch {
	case !ok:
		return 0, false
	case h.Kind == uploader.KindParallel || h.Kind == uploader.KindMultipart:
		for _, p := range h.Parts {
			if p.Generation != 0 || p.ETag != "" {
				return p.Offset + p.Size/2, true
			}
		}
		return 0, false
	}
	return h.Persisted / 2, h.Persisted > 0
}

// said returns what the journal holds of name's upload, in a few words.
func said(journal, name string) string {
	j, err := uploader.OpenJournal(journal)
	if err != nil {
		return err.Error()
	}
	h, ok, err := j.Lookup(bucket, name)
	switch {
	case err != nil:
		return err.Error()
	case !ok:
		return "-"
	}
	stored := 0
	for _, p := range h.Parts {
		if p.Generation != 0 || p.ETag != "" {
			stored++
		}
	}
	return fmt.Sprintf("%s/%d/%d", h.Kind, h.Persisted>>20, stored)
}

// entry reports whether the journal holds name's upload.
func entry(journal, name string) bool {
	j, err := uploader.OpenJournal(journal)
	if err != nil {
		return false
	}
	_, ok, _ := j.Lookup(bucket, name)
	return ok
}

// makeBucket creates the test bucket with versioning, so that every
// generation of a name stays to be counted.
func makeBucket(t *testing.T, host string) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"versioning":{"enabled":true}}`, bucket)
	resp, err := http.Post("http://"+host+"/storage/v1/b?project=p", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("create bucket: %s: %s", resp.Status, b)
	}
}

// listed is an objects.list answer.
type listed struct {
	Items []struct {
		Name       string `json:"name"`
		Generation string `json:"generation"`
		Size       string `json:"size"`
		CRC32C     string `json:"crc32c"`
		TimeDelete string `json:"timeDeleted"`
	} `json:"items"`
}

func list(t *testing.T, host, prefix string, versions bool) listed {
	t.Helper()
	u := fmt.Sprintf("http://%s/storage/v1/b/%s/o?prefix=%s&versions=%v", host, bucket, prefix, versions)
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l listed
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	return l
}

// check checks the object: one generation, exact, and no temporary
// object live.
func check(t *testing.T, host, object string, data []byte) {
	t.Helper()
	all := list(t, host, object, true)
	if len(all.Items) != 1 || all.Items[0].Name != object {
		t.Fatalf("%d generations of %s, want 1: %+v", len(all.Items), object, all.Items)
	}
	o := all.Items[0]
	crc := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	want := make([]byte, 4)
	want[0], want[1], want[2], want[3] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	if o.Size != strconv.Itoa(len(data)) || o.CRC32C != base64.StdEncoding.EncodeToString(want) {
		t.Fatalf("stored %s bytes with CRC32C %s, want %d bytes with %s", o.Size, o.CRC32C, len(data), base64.StdEncoding.EncodeToString(want))
	}
	if tmp := list(t, host, "objup-tmp/", false); len(tmp.Items) != 0 {
		t.Fatalf("%d temporary objects left: %+v", len(tmp.Items), tmp.Items)
	}
}

// uploadsLeft counts the bucket's multipart uploads that were neither
// completed nor aborted, those without parts and those with some, as the
// XML API lists them.
func uploadsLeft(t *testing.T, host string) (empty, withParts int) {
	t.Helper()
	var l struct {
		Uploads []struct {
			Key      string
			UploadID string `xml:"UploadId"`
		} `xml:"Upload"`
	}
	getXML(t, fmt.Sprintf("http://%s/%s?uploads", host, bucket), &l)
	for _, u := range l.Uploads {
		var parts struct {
			Parts []struct{ PartNumber int } `xml:"Part"`
		}
		getXML(t, fmt.Sprintf("http://%s/%s/%s?uploadId=%s", host, bucket, u.Key, url.QueryEscape(u.UploadID)), &parts)
		if len(parts.Parts) == 0 {
			empty++
		} else {
			withParts++
		}
	}
	return empty, withParts
}

// getXML decodes the XML answer to a GET of u into v.
func getXML(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", u, resp.Status, b)
	}
	if err := xml.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
