package tree

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestManifest(t *testing.T) {
	dir := t.TempDir()
	dest := record{Dir: "/data", Bucket: "b", Prefix: "p"}
	m, err := openManifest(dir, dest)
	if err != nil {
		t.Fatal(err)
	}
	recs := []record{
		{Op: opStart, Path: "a", Size: 1, MTime: 10},
		{Op: opDone, Path: "a", Size: 1, MTime: 10, CRC32C: 7, Gen: 100},
		{Op: opStart, Path: "b", Size: 2, MTime: 20, IfGen: 0},
		{Op: opStart, Path: "c", Size: 3, MTime: 30},
		{Op: opDone, Path: "c", Size: 3, MTime: 30, Gen: 300},
		{Op: opStart, Path: "c", Size: 4, MTime: 40, IfGen: 300}, // c changed, and is being sent again
	}
	for _, r := range recs {
		if err := m.append(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := openManifest(dir, dest); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a second open of a manifest in use: %v", err)
	}
	if err := m.close(false); err != nil {
		t.Fatal(err)
	}
	// A crash tore the last line.
	f, err := os.OpenFile(m.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"op":"done","path":"b","si`)
	f.Close()

	check := func(m *manifest) {
		t.Helper()
		for path, want := range map[string]fileState{
			"a": {done: true, doneRec: recs[1]},
			"b": {started: true, startRec: recs[2]},
			"c": {done: true, doneRec: recs[4], started: true, startRec: recs[5]},
		} {
			if got := m.get(path); got != want {
				t.Errorf("%s: %+v, want %+v", path, got, want)
			}
		}
	}
	m, err = openManifest(dir, dest)
	if err != nil {
		t.Fatal(err)
	}
	check(m)
	// The torn line is cut off, and the next record starts a line.
	if err := m.append(record{Op: opDone, Path: "d", Size: 5, Gen: 500}); err != nil {
		t.Fatal(err)
	}
	if err := m.close(true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(m.path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	// Compacted: the destination, a done, b start, c done and start, d done.
	if len(lines) != 6 || !strings.Contains(lines[0], `"op":"dest"`) {
		t.Errorf("compacted manifest:\n%s", b)
	}
	m, err = openManifest(dir, dest)
	if err != nil {
		t.Fatal(err)
	}
	check(m)
	if got := m.get("d"); !got.done || got.doneRec.Gen != 500 {
		t.Errorf("d: %+v", got)
	}
	if err := m.close(false); err != nil {
		t.Fatal(err)
	}
	// Another destination has a manifest of its own.
	other, err := openManifest(dir, record{Dir: "/data", Bucket: "b", Prefix: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if other.path == m.path || len(other.paths()) != 0 {
		t.Errorf("the manifest of another prefix: %s, %q", other.path, other.paths())
	}
	_ = other.close(false)
}

func TestAppendRecord(t *testing.T) {
	for _, path := range []string{"a", "d/é/ü.txt", `q"uote\back`, "tab\tnl", "<&>", "\u2028", "emoji 🙂"} {
		for _, r := range []record{
			{Op: opStart, Path: path, Size: 12, MTime: -5, IfGen: 1 << 60},
			{Op: opDone, Path: path, Size: 1 << 40, MTime: 1700000000123456789, CRC32C: 0xffffffff, Gen: 42},
		} {
			line := appendRecord(nil, &r)
			want, _ := json.Marshal(r)
			var got, back record
			if err := json.Unmarshal(line, &got); err != nil || got != r {
				t.Errorf("%q: decoded %+v, %v; want %+v", line, got, err, r)
			}
			_ = json.Unmarshal(want, &back)
			if got != back || line[len(line)-1] != '\n' {
				t.Errorf("%q differs from json.Marshal's %s", line, want)
			}
		}
	}
}
