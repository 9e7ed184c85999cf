// Command peertool holds the helpers of integration/peers/run.sh, which
// compares objup's tree upload with other tools against fakegcs:
//
//	peertool mktree -dir D -n 10000 -min 1024 -max 8192 [-large 3 -large-size 67108864] -seed 1
//	peertool proxy -target HOST:PORT [-count FILE] # prints "listen HOST:PORT"; at SIGTERM, the bytes it forwarded
//	peertool many -dir D -bucket B -prefix P -concurrency 64 [-http] [-each]
//	peertool verify -host HOST:PORT -bucket B -prefix P -dir D
//
// mktree writes a seeded tree of files of random sizes (and random bytes).
// proxy forwards connections to the target through a faults.Proxy without
// faults, to count the bytes each way. many uploads the tree with
// uploader.Client.UploadMany and no journal (the SDK under the command),
// or with -each as the command's tree upload sends each file
// (Client.Upload of a section of the file, DoesNotExist) without its
// journal and manifest.
// verify lists the bucket through the JSON API, every generation, and
// checks that each file of the tree is stored once, with its size and
// CRC32C; any other live object in the bucket counts as extra (a
// temporary object left behind, say).
package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/objup/objup/fakes/faultproxy"
	"github.com/objup/objup/uploader"
	"google.golang.org/api/option"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peertool mktree|proxy|many|verify [flags]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{"mktree": mktree, "proxy": proxy, "many": many, "verify": verify}
	f, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "peertool: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := f(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "peertool %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// mktree writes n files of min to max bytes in directories of 100, and
// large files of large-size bytes, all from seed.
func mktree(args []string) error {
	fl := flag.NewFlagSet("mktree", flag.ExitOnError)
	dir := fl.String("dir", "", "the tree's directory (created)")
	n := fl.Int("n", 10000, "small files")
	minSize := fl.Int("min", 1024, "smallest small file")
	maxSize := fl.Int("max", 8192, "largest small file")
	large := fl.Int("large", 0, "large files")
	largeSize := fl.Int64("large-size", 64<<20, "size of each large file")
	seed := fl.Uint64("seed", 1, "seed")
	fl.Parse(args)
	if *dir == "" || *minSize < 0 || *maxSize < *minSize {
		return fmt.Errorf("bad flags")
	}
	r := rand.New(rand.NewPCG(*seed, 0x9e3779b97f4a7c15))
	buf := make([]byte, *maxSize)
	var total int64
	for i := 0; i < *n; i++ {
		d := filepath.Join(*dir, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		size := *minSize + r.IntN(*maxSize-*minSize+1)
		fill(r, buf[:size])
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.bin", i)), buf[:size], 0o644); err != nil {
			return err
		}
		total += int64(size)
	}
	if *large > 0 {
		d := filepath.Join(*dir, "large")
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		chunk := make([]byte, 1<<20)
		for i := 0; i < *large; i++ {
			f, err := os.Create(filepath.Join(d, fmt.Sprintf("big%d.bin", i)))
			if err != nil {
				return err
			}
			for left := *largeSize; left > 0; {
				c := chunk[:min(left, int64(len(chunk)))]
				fill(r, c)
				if _, err := f.Write(c); err != nil {
					f.Close()
					return err
				}
				left -= int64(len(c))
			}
			if err := f.Close(); err != nil {
				return err
			}
			total += *largeSize
		}
	}
	fmt.Printf("files %d bytes %d\n", *n+*large, total)
	return nil
}

func fill(r *rand.Rand, b []byte) {
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, r.Uint64())
		b = b[8:]
	}
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// proxy forwards to target until SIGTERM or SIGINT, then prints what it
// forwarded as one JSON line.
func proxy(args []string) error {
	fl := flag.NewFlagSet("proxy", flag.ExitOnError)
	target := fl.String("target", "", "HOST:PORT to forward to")
	count := fl.String("count", "", "FILE to keep the bytes forwarded up in, rewritten every 50ms")
	fl.Parse(args)
	p, err := faultproxy.New(*target)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Printf("listen %s\n", p.Addr())
	if *count != "" {
		go func() {
			for range time.Tick(50 * time.Millisecond) {
				tmp := *count + ".tmp"
				if os.WriteFile(tmp, []byte(strconv.FormatInt(p.Stats().BytesUp, 10)+"\n"), 0o644) == nil {
					os.Rename(tmp, *count)
				}
			}
		}()
	}
	<-sig
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	p.Settle(ctx)
	cancel()
	s := p.Stats()
	p.Close()
	return json.NewEncoder(os.Stdout).Encode(map[string]int64{"conns": s.Conns, "bytesUp": s.BytesUp, "bytesDown": s.BytesDown})
}

// files lists the regular files under dir, as slash-separated relative
// paths, sorted.
func files(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	sort.Strings(out)
	return out, err
}

// many uploads the files under dir as prefix + their relative path, with
// UploadMany and no journal.
func many(args []string) error {
	fl := flag.NewFlagSet("many", flag.ExitOnError)
	dir := fl.String("dir", "", "the tree")
	bucket := fl.String("bucket", "", "bucket")
	prefix := fl.String("prefix", "", "object name prefix (with its slash)")
	conc := fl.Int("concurrency", 64, "items at once")
	each := fl.Bool("each", false, "Client.Upload of each file (as the command's tree upload, without journal and manifest) instead of UploadMany")
	useHTTP := fl.Bool("http", false, "the JSON API (STORAGE_EMULATOR_HOST) instead of gRPC (STORAGE_EMULATOR_HOST_GRPC)")
	fl.Parse(args)
	ctx := context.Background()
	start := time.Now()
	names, err := files(*dir)
	if err != nil {
		return err
	}
	items := make([]uploader.Item, len(names))
	for i, n := range names {
		p := filepath.Join(*dir, filepath.FromSlash(n))
		items[i] = uploader.Item{Name: *prefix + n, Open: func() (io.ReadCloser, error) { return os.Open(p) }}
	}
	var copts []option.ClientOption
	if *useHTTP {
		copts = append(copts, uploader.WithHTTP())
	}
	c, err := uploader.NewClient(ctx, copts...)
	if err != nil {
		return err
	}
	defer c.Close()
	var res []uploader.Result
	if *each {
		res, err = uploadEach(ctx, c, *bucket, *prefix, *dir, names, *conc)
	} else {
		res, err = c.UploadMany(ctx, *bucket, items, uploader.WithConcurrency(*conc))
	}
	el := time.Since(start)
	failed := 0
	for _, r := range res {
		if r.Err != nil {
			failed++
		}
	}
	fmt.Printf("many: %d files, %d failed, %s, %.1f objects/s\n", len(items), failed, el.Round(time.Millisecond), float64(len(items)-failed)/el.Seconds())
	return err
}

// uploadEach uploads each file as the command's tree upload does, minus
// its journal and manifest: Client.Upload of an io.SectionReader of the
// open file, under DoesNotExist, conc files at once.
func uploadEach(ctx context.Context, c *uploader.Client, bucket, prefix, dir string, names []string, conc int) ([]uploader.Result, error) {
	res := make([]uploader.Result, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := time.Now()
				res[i].Name = prefix + names[i]
				f, err := os.Open(filepath.Join(dir, filepath.FromSlash(names[i])))
				if err != nil {
					res[i].Err = err
					continue
				}
				fi, err := f.Stat()
				if err == nil {
					res[i].Attrs, err = c.Upload(ctx, bucket, res[i].Name, io.NewSectionReader(f, 0, fi.Size()),
						uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
				}
				f.Close()
				res[i].Err, res[i].Duration = err, time.Since(t)
			}
		}()
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	var errs []error
	for _, r := range res {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return res, errors.Join(errs...)
}

type object struct {
	Name        string `json:"name"`
	Generation  string `json:"generation"`
	Size        string `json:"size"`
	CRC32C      string `json:"crc32c"`
	TimeDeleted string `json:"timeDeleted"`
}

// verify checks the bucket against the tree and prints one JSON line:
// files, exact (one live object of the file's size and CRC32C), missing,
// wrong, rewritten (names with more than one generation), extra (live
// objects that are no file of the tree: temporary objects).
func verify(args []string) error {
	fl := flag.NewFlagSet("verify", flag.ExitOnError)
	host := fl.String("host", "", "the fake's JSON API HOST:PORT")
	bucket := fl.String("bucket", "", "bucket")
	prefix := fl.String("prefix", "", "object name prefix of the tree")
	dir := fl.String("dir", "", "the tree")
	fl.Parse(args)
	var objs []object
	token := ""
	for page := 0; page < 100000; page++ {
		q := url.Values{"versions": {"true"}, "maxResults": {"1000"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		resp, err := http.Get(fmt.Sprintf("http://%s/storage/v1/b/%s/o?%s", *host, url.PathEscape(*bucket), q.Encode()))
		if err != nil {
			return err
		}
		var l struct {
			Items         []object `json:"items"`
			NextPageToken string   `json:"nextPageToken"`
		}
		err = json.NewDecoder(resp.Body).Decode(&l)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("list: %s", resp.Status)
		}
		objs = append(objs, l.Items...)
		if token = l.NextPageToken; token == "" {
			break
		}
	}
	live := map[string]object{}
	gens := map[string]int{}
	for _, o := range objs {
		gens[o.Name]++
		if o.TimeDeleted == "" {
			live[o.Name] = o
		}
	}
	names, err := files(*dir)
	if err != nil {
		return err
	}
	out := map[string]any{"files": len(names)}
	var exact, missing, wrong, rewritten int
	var wrongNames []string
	tab := crc32.MakeTable(crc32.Castagnoli)
	inTree := map[string]bool{}
	for _, n := range names {
		name := *prefix + n
		inTree[name] = true
		if gens[name] > 1 {
			rewritten++
		}
		o, ok := live[name]
		if !ok {
			missing++
			continue
		}
		data, err := os.ReadFile(filepath.Join(*dir, filepath.FromSlash(n)))
		if err != nil {
			return err
		}
		var sum [4]byte
		binary.BigEndian.PutUint32(sum[:], crc32.Checksum(data, tab))
		if o.Size != strconv.Itoa(len(data)) || o.CRC32C != base64.StdEncoding.EncodeToString(sum[:]) {
			wrong++
			if len(wrongNames) < 5 {
				wrongNames = append(wrongNames, name)
			}
			continue
		}
		exact++
	}
	extra := 0
	for n := range live {
		if !inTree[n] {
			extra++
		}
	}
	out["exact"], out["missing"], out["wrong"], out["rewritten"], out["extra"], out["generations"] = exact, missing, wrong, rewritten, extra, len(objs)
	if len(wrongNames) > 0 {
		out["wrongNames"] = wrongNames
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return err
	}
	if missing+wrong > 0 {
		return fmt.Errorf("%d missing, %d wrong", missing, wrong)
	}
	return nil
}
