package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/objup/objup/uploader"
)

// gcsJSONAPI is the base URL of the real service's JSON API.
const gcsJSONAPI = "https://storage.googleapis.com"

// Verification methods.
const (
	verifyJSONAPI   = "json-api"  // listed through the JSON API
	verifyResponses = "responses" // checked against the upload responses only
	verifyNone      = "none"      // -verify=false
)

// maxProblems bounds the problems a summary lists.
const maxProblems = 20

// verification is the outcome of checking the stored objects.
type verification struct {
	Method string `json:"method"`
	// URL is the JSON API base that was listed.
	URL string `json:"url,omitempty"`
	// Expected is the number of objects that uploaded without error.
	Expected int `json:"expected"`
	// Listed is the number of objects under the prefix.
	Listed int `json:"listed"`
	// Verified objects have the size and CRC32C that were uploaded.
	Verified int `json:"verified"`
	// Missing were uploaded but not listed; Mismatched differ in size or
	// CRC32C; Unexpected are listed but were not uploaded by this run (a
	// failed upload must leave nothing).
	Missing    int      `json:"missing"`
	Mismatched int      `json:"mismatched"`
	Unexpected int      `json:"unexpected"`
	Passed     bool     `json:"passed"`
	Note       string   `json:"note,omitempty"`
	Problems   []string `json:"problems,omitempty"`
}

func (v *verification) problem(format string, args ...any) {
	if len(v.Problems) < maxProblems {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

// listedObject is the part of a JSON API object resource the check reads.
type listedObject struct {
	Name string `json:"name"`
	Size int64  `json:"size,string"`
	// CRC32C is base64 of the big-endian checksum.
	CRC32C string `json:"crc32c"`
}

type listPage struct {
	Items         []listedObject `json:"items"`
	NextPageToken string         `json:"nextPageToken"`
}

// listPageSize is the JSON API's largest page.
const listPageSize = 1000

// verifyListed lists bucket/prefix through the JSON API at base and checks
// that exactly the objects of results that succeeded are there, with the
// sizes and CRC32C that were read from their sources.
func verifyListed(ctx context.Context, hc *http.Client, base, bucket, prefix string, objects []object, results []uploader.Result) verification {
	v := verification{Method: verifyJSONAPI, URL: base}
	want := make(map[string]*object, len(results))
	for i := range results {
		if results[i].Err == nil {
			want[objects[i].name] = &objects[i]
		}
	}
	v.Expected = len(want)
	seen := make(map[string]bool, len(want))

	// One page per listPageSize objects, with slack for objects that are
	// not ours; a service that keeps returning pages beyond that is
	// broken.
	maxPages := len(want)/listPageSize + 1000
	token := ""
	for page := 0; ; page++ {
		if page == maxPages {
			v.Note = fmt.Sprintf("gave up listing after %d pages", maxPages)
			return v
		}
		p, err := listObjects(ctx, hc, base, bucket, prefix, token)
		if err != nil {
			v.Note = err.Error()
			return v
		}
		for _, o := range p.Items {
			v.Listed++
			w, ok := want[o.Name]
			if !ok || seen[o.Name] {
				v.Unexpected++
				v.problem("%s: listed but not uploaded by this run", o.Name)
				continue
			}
			seen[o.Name] = true
			crc, err := decodeCRC32C(o.CRC32C)
			switch {
			case !w.complete:
				v.Mismatched++
				v.problem("%s: the upload succeeded before its content was read to the end", o.Name)
			case err != nil:
				v.Mismatched++
				v.problem("%s: %v", o.Name, err)
			case o.Size != w.read:
				v.Mismatched++
				v.problem("%s: stored %d bytes, uploaded %d", o.Name, o.Size, w.read)
			case crc != w.crc:
				v.Mismatched++
				v.problem("%s: stored CRC32C %08x, uploaded %08x", o.Name, crc, w.crc)
			default:
				v.Verified++
			}
		}
		if p.NextPageToken == "" {
			break
		}
		if p.NextPageToken == token {
			v.Note = "the listing did not advance (same page token twice)"
			return v
		}
		token = p.NextPageToken
	}
	for name := range want {
		if !seen[name] {
			v.Missing++
			v.problem("%s: uploaded but not listed", name)
		}
	}
	v.Passed = v.Missing == 0 && v.Mismatched == 0 && v.Unexpected == 0
	return v
}

// listObjects fetches one page of GET /storage/v1/b/BUCKET/o.
func listObjects(ctx context.Context, hc *http.Client, base, bucket, prefix, token string) (*listPage, error) {
	q := url.Values{}
	q.Set("prefix", prefix)
	q.Set("maxResults", fmt.Sprint(listPageSize))
	q.Set("fields", "items(name,size,crc32c),nextPageToken")
	if token != "" {
		q.Set("pageToken", token)
	}
	u := base + "/storage/v1/b/" + url.PathEscape(bucket) + "/o?" + q.Encode()
	body, err := get(ctx, hc, u)
	if err != nil {
		return nil, fmt.Errorf("listing gs://%s/%s: %w", bucket, prefix, err)
	}
	var p listPage
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("listing gs://%s/%s: %w", bucket, prefix, err)
	}
	return &p, nil
}

// maxResponse bounds a JSON API response: a page of 1000 objects is about
// 1 MB with every field, far less with the fields the check asks for.
const maxResponse = 64 << 20

var errNotFound = errors.New("not found")

func get(ctx context.Context, hc *http.Client, u string) ([]byte, error) {
	return do(ctx, hc, http.MethodGet, u, nil)
}

func do(ctx context.Context, hc *http.Client, method, u string, body []byte) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%s %s: %w", method, u, errNotFound)
	case resp.StatusCode/100 != 2:
		return nil, fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, strings.TrimSpace(string(data)))
	}
	return data, nil
}

// decodeCRC32C decodes the JSON API's crc32c: base64 of 4 big-endian bytes.
func decodeCRC32C(s string) (uint32, error) {
	if s == "" {
		return 0, errors.New("the listing has no crc32c")
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != 4 {
		return 0, fmt.Errorf("crc32c %q is not base64 of 4 bytes", s)
	}
	return binary.BigEndian.Uint32(b), nil
}

// ensureBucket creates bucket through the JSON API at base unless it exists:
// an emulator starts empty.
func ensureBucket(ctx context.Context, hc *http.Client, base, bucket string) error {
	_, err := get(ctx, hc, base+"/storage/v1/b/"+url.PathEscape(bucket))
	if !errors.Is(err, errNotFound) {
		return err
	}
	body, _ := json.Marshal(map[string]string{"name": bucket})
	_, err = do(ctx, hc, http.MethodPost, base+"/storage/v1/b?project=objup", body)
	return err
}

// verifyAgainstResponses checks each successful result's attributes, as the service
// reported them when the upload finished, against what was read: the check
// left when no JSON API is at hand.
func verifyAgainstResponses(objects []object, results []uploader.Result) verification {
	v := verification{Method: verifyResponses}
	for i, r := range results {
		if r.Err != nil {
			continue
		}
		v.Expected++
		o := &objects[i]
		switch a := r.Attrs; {
		case a == nil:
			v.Missing++
			v.problem("%s: no attributes in the response", o.name)
		case !o.complete:
			v.Mismatched++
			v.problem("%s: the upload succeeded before its content was read to the end", o.name)
		case a.Size != o.read:
			v.Mismatched++
			v.problem("%s: stored %d bytes, uploaded %d", o.name, a.Size, o.read)
		case a.HasCRC32C && a.CRC32C != o.crc:
			v.Mismatched++
			v.problem("%s: stored CRC32C %08x, uploaded %08x", o.name, a.CRC32C, o.crc)
		default:
			v.Verified++
		}
	}
	v.Passed = v.Missing == 0 && v.Mismatched == 0
	return v
}
