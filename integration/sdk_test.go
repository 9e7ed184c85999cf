package integration

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/option"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
)

// These tests check objup's uploads with readers written by others: the
// official client reads back over gRPC and JSON, and fake-gcs-server stores
// what objup's JSON transport sends. They live here, not in the uploader
// package, so the SDK module does not require the official client or
// fake-gcs-server.

// sdkSizes are the object sizes of the read-back tests: empty, one byte,
// around one 256 KiB quantum, and several messages.
var sdkSizes = []int{0, 1, pool.Quantum - 1, pool.Quantum, pool.Quantum + 1, 2*mib + 3, 20 * mib}

// newFake starts the project's fake with testBucket, closed when the test
// ends.
func newFake(t *testing.T) *fakes.Server {
	t.Helper()
	srv, err := fakes.New(fakes.WithBucket(testBucket))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestReadBackWithOfficialClient uploads with objup, over gRPC and over the
// JSON API, in uneven writes, and reads every object back byte for byte
// with the official client, over gRPC and over the JSON API, with the
// size, CRC32C and content type objup's Writer reported.
func TestReadBackWithOfficialClient(t *testing.T) {
	srv := newFake(t)
	writers := []struct {
		name string
		c    *uploader.Client
	}{{"grpc", objupClient(t, srv)}, {"json", objupHTTPClient(t, srv.HTTPURL())}}
	peers := []struct {
		name string
		c    *storage.Client
	}{{"grpc", officialGRPC(t, srv)}, {"json", officialHTTP(t, srv)}}
	ctx := context.Background()
	for _, wr := range writers {
		for _, size := range sdkSizes {
			name := "official/" + wr.name + "/" + sizeLabel(size)
			t.Run(wr.name+"/"+sizeLabel(size), func(t *testing.T) {
				data := payload(size, 21)
				w, err := wr.c.NewWriter(ctx, testBucket, name, uploader.WithAttrs(uploader.ObjectAttrs{ContentType: "application/octet-stream"}))
				if err != nil {
					t.Fatal(err)
				}
				for rest := data; len(rest) > 0; {
					n := min(len(rest), 100_003)
					if _, err := w.Write(rest[:n]); err != nil {
						t.Fatal(err)
					}
					rest = rest[n:]
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				for _, peer := range peers {
					o := peer.c.Bucket(testBucket).Object(name)
					sameBytes(t, peer.name+" read", readAll(t, o), data)
					a, err := o.Attrs(ctx)
					if err != nil {
						t.Fatalf("%s attrs: %v", peer.name, err)
					}
					if a.Size != int64(size) || a.ContentType != "application/octet-stream" ||
						(w.Attrs().HasCRC32C && a.CRC32C != w.Attrs().CRC32C) {
						t.Fatalf("%s attrs = size %d crc %08x type %q; writer said size %d crc %08x", peer.name, a.Size, a.CRC32C, a.ContentType, w.Attrs().Size, w.Attrs().CRC32C)
					}
				}
			})
		}
	}
}

// objupHTTPClient is an objup client on the JSON API at base, closed when
// the test ends.
func objupHTTPClient(t *testing.T, base string) *uploader.Client {
	t.Helper()
	c, err := uploader.NewClient(context.Background(), uploader.WithHTTP(), option.WithEndpoint(base+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestAttributesRoundTrip writes each attribute with objup, one-shot and
// resumable, and reads it back with objup's Attrs and with the official
// client over gRPC and over JSON.
func TestAttributesRoundTrip(t *testing.T) {
	srv := newFake(t)
	c := objupClient(t, srv)
	peers := map[string]*storage.Client{"grpc": officialGRPC(t, srv), "json": officialHTTP(t, srv)}
	custom := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	const kms = "projects/p/locations/us/keyRings/r/cryptoKeys/k"
	tests := []struct {
		name  string
		opt   uploader.WriterOption
		check func(a *storage.ObjectAttrs) bool
		ours  func(a *uploader.ObjectAttrs) bool
	}{
		{"custom time", uploader.WithAttrs(uploader.ObjectAttrs{CustomTime: custom}),
			func(a *storage.ObjectAttrs) bool { return a.CustomTime.Equal(custom) },
			func(a *uploader.ObjectAttrs) bool { return a.CustomTime.Equal(custom) }},
		{"kms key", uploader.WithAttrs(uploader.ObjectAttrs{KMSKeyName: kms}),
			func(a *storage.ObjectAttrs) bool { return a.KMSKeyName == kms },
			func(a *uploader.ObjectAttrs) bool { return a.KMSKeyName == kms }},
		{"predefined acl", uploader.WithAttrs(uploader.ObjectAttrs{PredefinedACL: "publicRead"}),
			func(a *storage.ObjectAttrs) bool { return hasRule(a.ACL, "allUsers", "READER") },
			func(a *uploader.ObjectAttrs) bool { return len(a.ACL) == 1 && a.ACL[0].Entity == "allUsers" }},
		{"acl", uploader.WithAttrs(uploader.ObjectAttrs{ACL: []uploader.ACLRule{{Entity: "user-a@example.com", Role: "OWNER"}, {Entity: "allAuthenticatedUsers", Role: "READER"}}}),
			func(a *storage.ObjectAttrs) bool {
				return hasRule(a.ACL, "user-a@example.com", "OWNER") && hasRule(a.ACL, "allAuthenticatedUsers", "READER")
			},
			func(a *uploader.ObjectAttrs) bool { return len(a.ACL) == 2 }},
		{"retention", uploader.WithAttrs(uploader.ObjectAttrs{Retention: &uploader.Retention{Mode: "Unlocked", RetainUntil: until}}),
			func(a *storage.ObjectAttrs) bool {
				return a.Retention != nil && a.Retention.Mode == "Unlocked" && a.Retention.RetainUntil.Equal(until)
			},
			func(a *uploader.ObjectAttrs) bool {
				return a.Retention != nil && a.Retention.Mode == "Unlocked" && a.Retention.RetainUntil.Equal(until)
			}},
		{"temporary hold", uploader.WithAttrs(uploader.ObjectAttrs{TemporaryHold: true}),
			func(a *storage.ObjectAttrs) bool { return a.TemporaryHold },
			func(a *uploader.ObjectAttrs) bool { return a.TemporaryHold }},
		{"event-based hold", uploader.WithAttrs(uploader.ObjectAttrs{EventBasedHold: true}),
			func(a *storage.ObjectAttrs) bool { return a.EventBasedHold },
			func(a *uploader.ObjectAttrs) bool { return a.EventBasedHold }},
		{"contexts", uploader.WithAttrs(uploader.ObjectAttrs{Contexts: map[string]string{"team": "storage", "tier": "hot"}}),
			func(a *storage.ObjectAttrs) bool {
				return a.Contexts != nil && a.Contexts.Custom["team"].Value == "storage" && a.Contexts.Custom["tier"].Value == "hot"
			},
			func(a *uploader.ObjectAttrs) bool {
				return maps.Equal(a.Contexts, map[string]string{"team": "storage", "tier": "hot"})
			}},
	}
	for _, tc := range tests {
		for _, size := range []int{kib, pool.Quantum + 1} {
			name := "attrs/" + tc.name + "/" + sizeLabel(size)
			t.Run(tc.name+"/"+sizeLabel(size), func(t *testing.T) {
				data := payload(size, 3)
				ours, err := c.Upload(context.Background(), testBucket, name, bytes.NewReader(data), tc.opt)
				if err != nil {
					t.Fatal(err)
				}
				if !tc.ours(ours) {
					t.Errorf("objup's Attrs: %+v", ours)
				}
				for peer, pc := range peers {
					if peer == "grpc" && tc.name == "retention" {
						// The official client v1.70.0 does not read
						// Object.retention from gRPC (newObjectFromProto
						// leaves Retention out); objup's Attrs and JSON
						// show it.
						continue
					}
					o := pc.Bucket(testBucket).Object(name)
					sameBytes(t, peer+" read", readAll(t, o), data)
					a, err := o.Attrs(context.Background())
					if err != nil {
						t.Fatalf("%s Attrs: %v", peer, err)
					}
					if !tc.check(a) {
						t.Errorf("%s reads %+v", peer, a)
					}
				}
			})
		}
	}
}

// sizeLabel names a size for a subtest and an object: 0B, 1KiB+0, 2MiB+3.
func sizeLabel(n int) string {
	switch {
	case n >= mib:
		return fmt.Sprintf("%dMiB+%d", n/mib, n%mib)
	case n >= kib:
		return fmt.Sprintf("%dKiB+%d", n/kib, n%kib)
	}
	return fmt.Sprintf("%dB", n)
}

// hasRule reports whether acl grants role to entity.
func hasRule(acl []storage.ACLRule, entity, role string) bool {
	for _, r := range acl {
		if string(r.Entity) == entity && string(r.Role) == role {
			return true
		}
	}
	return false
}

// TestHTTPUploadsOnFakeGCSServer: objup's JSON transport stores every size
// from 0 to 20 MiB, one-shot and resumable, byte-exact, on
// fsouza/fake-gcs-server, an implementation of the JSON API written
// independently of the project's fake.
func TestHTTPUploadsOnFakeGCSServer(t *testing.T) {
	var h http.Handler
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })) // on 127.0.0.1
	t.Cleanup(hs.Close)
	fs, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, Scheme: "http", ExternalURL: hs.URL, Writer: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fs.Stop) // after the server, which waits for its handlers
	fs.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: testBucket})
	h = fs.HTTPHandler()
	c := objupHTTPClient(t, hs.URL)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, size := range []int{0, 1, kib, pool.Quantum - 1, pool.Quantum, pool.Quantum + 1, 4*mib + 3, 20 * mib} {
		name := "http/" + sizeLabel(size)
		t.Run(sizeLabel(size), func(t *testing.T) {
			data := payload(size, uint64(size)+7)
			w, err := c.NewWriter(context.Background(), testBucket, name, uploader.WithAttrs(uploader.ObjectAttrs{ContentType: "application/x-test", Metadata: map[string]string{"k": "v"}}))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			o, err := fs.GetObject(testBucket, name)
			if err != nil {
				t.Fatalf("not stored: %v", err)
			}
			sameBytes(t, name, o.Content, data)
			if a := w.Attrs(); a.Size != int64(size) || a.ContentType != "application/x-test" || a.Metadata["k"] != "v" || (a.HasCRC32C && a.CRC32C != crc32.Checksum(data, castagnoli)) {
				t.Fatalf("attrs %+v", a)
			}
		})
	}
}
