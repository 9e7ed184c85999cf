package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
)

// startFake starts an in-process fake GCS with bucket "demo" and returns a
// client dialled to it. A real program passes credentials options instead (or
// none, for Application Default Credentials).
func startFake() (*fakes.Server, *uploader.Client) {
	srv, err := fakes.New(fakes.WithBucket("demo"))
	if err != nil {
		log.Fatal(err)
	}
	c, err := uploader.NewClient(context.Background(),
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		log.Fatal(err)
	}
	return srv, c
}

func Example_clientUpload() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()

	attrs, err := c.Upload(context.Background(), "demo", "greeting.txt", strings.NewReader("hello, objects"),
		uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attrs.Name, attrs.Size, attrs.ContentType)
	// Output: greeting.txt 14 text/plain; charset=utf-8
}

func Example_withBuffer() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()

	// The caller's own buffer, reused across writers.
	buf := make([]byte, 64<<10)
	for i := range 3 {
		w, err := c.NewWriter(context.Background(), "demo", fmt.Sprintf("log/%d", i), uploader.WithBuffer(buf))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(w, "line %d\n", i)
		if err := w.Close(); err != nil { // buf is free again once Close returns
			log.Fatal(err)
		}
		fmt.Println(w.Attrs().Name, w.Attrs().Size)
	}
	// Output:
	// log/0 7
	// log/1 7
	// log/2 7
}

func Example_clientUploadMany() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()

	items := []uploader.Item{
		{Name: "a.json", Data: []byte(`{"a":1}`), Tenant: "acme"},
		{Name: "b.json", Data: []byte(`{"b":2}`), Tenant: "globex"},
	}
	results, err := c.UploadMany(context.Background(), "demo", items, uploader.WithConcurrency(2))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		fmt.Println(r.Name, r.Attrs.Size)
	}
	for _, call := range srv.Calls() {
		fmt.Println(call.Method, call.Object, call.Tenant)
	}
	// Unordered output:
	// a.json 7
	// b.json 7
	// WriteObject a.json acme
	// WriteObject b.json globex
}

func Example_withConditions() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()

	ctx, err := header.WithTenant(context.Background(), "acme")
	if err != nil {
		log.Fatal(err)
	}
	for range 2 {
		_, err := c.Upload(ctx, "demo", "once", bytes.NewReader([]byte("x")), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
		fmt.Println(err == nil, uploader.CodeOf(err) == codes.FailedPrecondition)
	}
	// Output:
	// true false
	// false true
}

func Example_withRetry() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()
	// One slow attempt costs at most 5 s; a failure episode gives up after
	// 20 s with the last attempt's error, and only UNAVAILABLE is retried.
	w, err := c.NewWriter(context.Background(), "demo", "retried.txt",
		uploader.WithRetry(uploader.Retry{AttemptTimeout: 5 * time.Second, Deadline: 20 * time.Second, ErrorFunc: func(err error) bool { return status.Code(err) == codes.Unavailable }}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprint(w, "hello")
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(w.Attrs().Size)
	// Output: 5
}

func Example_codeOf() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()
	_, err := c.Upload(context.Background(), "no-such-bucket", "a.txt", strings.NewReader("x"))
	fmt.Println(uploader.CodeOf(err), errors.Is(err, fs.ErrNotExist))
	// Output: NotFound true
}

func Example_withSendCRC32C() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()
	data := []byte("content whose checksum the caller already has")
	crc := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	_, err := c.Upload(context.Background(), "demo", "checked.txt", bytes.NewReader(data), uploader.WithSendCRC32C(crc^1))
	fmt.Println(uploader.CodeOf(err) == codes.DataLoss)
	// Output: true
}

// One client for many tenants, with a memory ceiling: when the pool's
// budget is spent, waiting uploads are served tenant by tenant, and no
// tenant holds more than 4 uploads or 8 MiB of buffers at once. A tenant at
// a limit waits; it never fails for it.
func Example_withTenantLimits() {
	srv, err := fakes.New(fakes.WithBucket("demo"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	budget, err := pool.New(pool.WithBudget(32 << 20))
	if err != nil {
		log.Fatal(err)
	}
	c, err := uploader.NewClient(context.Background(),
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		uploader.WithPool(budget),
		uploader.WithTenantLimits(uploader.TenantLimits{Uploads: 4, Bytes: 8 << 20}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, err := header.WithTenant(context.Background(), "acme")
	if err != nil {
		log.Fatal(err)
	}
	attrs, err := c.Upload(ctx, "demo", "acme/report.csv", strings.NewReader("a,b\n1,2\n"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attrs.Name, attrs.Size)
	// Output: acme/report.csv 8
}

// A large object as a parallel composite upload: 8 MiB parts, up to 8 at
// once over the client's connections, composed into one object whose
// CRC32C is checked against what was written; the temporary parts are
// deleted before Close returns.
func Example_withParallelUpload() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()

	data := bytes.Repeat([]byte("0123456789abcdef"), 2<<20) // 32 MiB
	attrs, err := c.Upload(context.Background(), "demo", "backup.tar", bytes.NewReader(data),
		uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 8 << 20, Parts: 8}),
		uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attrs.Size, attrs.CRC32C == crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	temps, err := srv.ListObjects("demo", "objup-tmp/")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(temps), "temporary objects left")
	// Output:
	// 33554432 true
	// 0 temporary objects left
}

// An upload whose answer is lost after the service stored the object (here
// the fake drops it on purpose) still reports the truth: objup looks the
// object up before it reports a failure. When it cannot find out in time,
// IsOutcomeUnknown says that the object may have been stored.
func Example_isOutcomeUnknown() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()

	// The service stores each object, and its answer is lost. A one-shot
	// write has no identity left to ask for; a resumable session
	// (WithResumable) is asked, and knows.
	for _, up := range []struct {
		method string // the call that carries the object
		opts   []uploader.WriterOption
	}{
		{fakes.MethodWriteObject, nil},
		{fakes.MethodBidiWriteObject, []uploader.WriterOption{uploader.WithResumable()}},
	} {
		srv.LoseAnswer(up.method)
		_, err := c.Upload(context.Background(), "demo", "report.json", strings.NewReader(`{"ok":true}`), up.opts...)
		switch {
		case err == nil:
			fmt.Println("stored")
		case uploader.IsOutcomeUnknown(err):
			fmt.Println("may have been stored: read it to find out")
		default:
			fmt.Println("not stored:", err)
		}
	}
	// Output:
	// may have been stored: read it to find out
	// stored
}

// A log writer on an appendable object, as a zonal (Rapid) bucket takes
// them: each Flush makes the records durable and readable, and Close
// finalizes the object.
func Example_writerFlush() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()
	ctx := context.Background()

	w, err := c.NewWriter(ctx, "demo", "app.log", uploader.WithAppendable())
	if err != nil {
		log.Fatal(err)
	}
	for _, rec := range []string{"started\n", "serving\n", "stopped\n"} {
		if _, err := w.Write([]byte(rec)); err != nil {
			log.Fatal(err)
		}
		persisted, err := w.Flush(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("persisted", persisted)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("finalized:", !w.Attrs().Finalized.IsZero())
	// Output:
	// persisted 8
	// persisted 16
	// persisted 24
	// finalized: true
}

// A second writer takes an unfinalized appendable object over at its
// generation (after a crash of the first, for instance) and finishes it.
func Example_clientTakeOver() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()
	ctx := context.Background()

	first, err := c.NewWriter(ctx, "demo", "journal", uploader.WithAppendable(), uploader.WithoutFinalize())
	if err != nil {
		log.Fatal(err)
	}
	first.Write([]byte("entry 1\n"))
	if err := first.Close(); err != nil { // flushed, left unfinalized
		log.Fatal(err)
	}

	w, offset, err := c.TakeOver(ctx, "demo", "journal", first.Attrs().Generation)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("appending at", offset)
	w.Write([]byte("entry 2\n"))
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(w.Attrs().Size, "bytes, CRC32C checked:", w.Attrs().CRC32C == crc32.Checksum([]byte("entry 1\nentry 2\n"), crc32.MakeTable(crc32.Castagnoli)))
	// Output:
	// appending at 8
	// 16 bytes, CRC32C checked: true
}

// Exactly once: a session (WithResumable) and a precondition
// (DoesNotExist). The service stores the object and the answer is
// lost; the upload asks its session and knows. A second upload of the
// same name cannot make a second object.
func Example_withResumable() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()
	ctx := context.Background()

	srv.LoseAnswer(fakes.MethodBidiWriteObject)
	attrs, err := c.Upload(ctx, "demo", "invoice-42.json", strings.NewReader(`{"total":42}`),
		uploader.WithResumable(), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored, generation known:", attrs.Generation != 0)

	_, err = c.Upload(ctx, "demo", "invoice-42.json", strings.NewReader(`{"total":42}`),
		uploader.WithResumable(), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	fmt.Println("a second upload:", uploader.CodeOf(err) == codes.FailedPrecondition)
	// Output:
	// stored, generation known: true
	// a second upload: true
}
