// Command modtool is the release scripts' helper (.ci/release,
// .ci/consumer): it writes module zips into a file:// module proxy, in the
// layout the go command reads (GOPROXY=file:///dir), and it compares
// versions by SemVer.
//
//	modtool zipdir -proxy DIR -module PATH -version V -dir MODDIR
//	modtool zipvcs -proxy DIR -repo REPO TAG...
//	modtool check V [LAST]
//	modtool latest TAG...
//	modtool testversion [LAST]
//	modtool requires PREFIX GOMOD
//	modtool samezips PROXY1 PROXY2 PATH VERSION
//
// zipdir zips a directory as the module PATH at V (a nested module's files
// are left out, as the go command leaves them out); zipvcs zips each tag
// of REPO: the tag vX.Y.Z is the root module, DIR/vX.Y.Z the module in
// DIR, the path read from that go.mod. check fails unless V is a canonical
// SemVer version newer than LAST; latest prints the newest of the tags'
// versions (none: nothing); testversion prints a prerelease version newer
// than LAST, for a trial release; requires prints the paths that GOMOD
// requires or replaces and that start with PREFIX; samezips fails unless
// the two proxies' zips of PATH at VERSION have the same go.sum hash.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: modtool zipdir|zipvcs|check|latest|testversion ...")
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "zipdir":
		err = zipDir(args)
	case "zipvcs":
		err = zipVCS(args)
	case "check":
		err = check(args)
	case "latest":
		if v := latest(args); v != "" {
			fmt.Println(v)
		}
	case "testversion":
		last := ""
		if len(args) > 0 {
			last = args[0]
		}
		fmt.Println(testVersion(last))
	case "requires":
		err = requires(args)
	case "samezips":
		err = sameZips(args)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "modtool:", msg)
	os.Exit(1)
}

func zipDir(args []string) error {
	fs := flag.NewFlagSet("zipdir", flag.ExitOnError)
	proxy := fs.String("proxy", "", "proxy directory")
	mod := fs.String("module", "", "module path")
	version := fs.String("version", "", "version")
	dir := fs.String("dir", "", "module directory")
	fs.Parse(args)
	m := module.Version{Path: *mod, Version: *version}
	gomod, err := os.ReadFile(filepath.Join(*dir, "go.mod"))
	if err != nil {
		return err
	}
	return write(*proxy, m, gomod, func(f *os.File) error { return zip.CreateFromDir(f, m, *dir) })
}

func zipVCS(args []string) error {
	fs := flag.NewFlagSet("zipvcs", flag.ExitOnError)
	proxy := fs.String("proxy", "", "proxy directory")
	repo := fs.String("repo", ".", "git repository")
	fs.Parse(args)
	for _, tag := range fs.Args() {
		subdir, version := "", tag
		if i := strings.LastIndex(tag, "/"); i >= 0 {
			subdir, version = tag[:i], tag[i+1:]
		}
		gomod, err := git(*repo, "show", tag+":"+path.Join(subdir, "go.mod"))
		if err != nil {
			return err
		}
		mf, err := modfile.ParseLax("go.mod", gomod, nil)
		if err != nil || mf.Module == nil {
			return fmt.Errorf("%s: go.mod: %v", tag, err)
		}
		m := module.Version{Path: mf.Module.Mod.Path, Version: version}
		if err := write(*proxy, m, gomod, func(f *os.File) error {
			return zip.CreateFromVCS(f, m, *repo, tag, subdir)
		}); err != nil {
			return fmt.Errorf("%s: %v", tag, err)
		}
	}
	return nil
}

// write puts m's .info, .mod and .zip into the proxy and adds m's version to
// the module's list.
func write(proxy string, m module.Version, gomod []byte, zipTo func(*os.File) error) error {
	if !semver.IsValid(m.Version) {
		return fmt.Errorf("%s: not a SemVer version", m.Version)
	}
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	dir := filepath.Join(proxy, esc, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, m.Version+".zip"))
	if err != nil {
		return err
	}
	if err := zipTo(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, m.Version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, _ := json.Marshal(struct{ Version, Time string }{m.Version, time.Now().UTC().Format(time.RFC3339)})
	if err := os.WriteFile(filepath.Join(dir, m.Version+".info"), info, 0o644); err != nil {
		return err
	}
	list, _ := os.ReadFile(filepath.Join(dir, "list"))
	versions := strings.Fields(string(list))
	if !slices.Contains(versions, m.Version) {
		versions = append(versions, m.Version)
	}
	return os.WriteFile(filepath.Join(dir, "list"), []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

func check(args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("usage: modtool check VERSION [LAST]")
	}
	v := args[0]
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return fmt.Errorf("%q is not a SemVer version in canonical form (vMAJOR.MINOR.PATCH[-PRERELEASE])", v)
	}
	if len(args) > 1 && args[1] != "" && semver.Compare(v, args[1]) <= 0 {
		return fmt.Errorf("%s is not newer than the last release, %s", v, args[1])
	}
	return nil
}

// latest returns the newest version among tags (a tag DIR/vX names vX).
func latest(tags []string) string {
	best := ""
	for _, t := range tags {
		v := path.Base(t)
		if semver.IsValid(v) && semver.Canonical(v) == v && (best == "" || semver.Compare(v, best) > 0) {
			best = v
		}
	}
	return best
}

// testVersion is a prerelease of the patch after last (of v0.1.0 with no
// release yet), newer than last, older than the next real release.
func testVersion(last string) string {
	if last == "" {
		return "v0.1.0-0.check"
	}
	var major, minor, patch int
	fmt.Sscanf(semver.Canonical(last), "v%d.%d.%d", &major, &minor, &patch)
	if semver.Prerelease(last) != "" {
		return last + ".check"
	}
	return fmt.Sprintf("v%d.%d.%d-0.check", major, minor, patch+1)
}

func requires(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: modtool requires PREFIX GOMOD")
	}
	data, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	mf, err := modfile.ParseLax(args[1], data, nil)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	print := func(p string) {
		if (p == args[0] || strings.HasPrefix(p, args[0]+"/")) && !seen[p] {
			seen[p] = true
			fmt.Println(p)
		}
	}
	for _, r := range mf.Require {
		print(r.Mod.Path)
	}
	for _, r := range mf.Replace {
		print(r.Old.Path)
	}
	return nil
}

func sameZips(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("usage: modtool samezips PROXY1 PROXY2 PATH VERSION")
	}
	esc, err := module.EscapePath(args[2])
	if err != nil {
		return err
	}
	var hashes [2]string
	for i, proxy := range args[:2] {
		if hashes[i], err = dirhash.HashZip(filepath.Join(proxy, esc, "@v", args[3]+".zip"), dirhash.Hash1); err != nil {
			return err
		}
	}
	if hashes[0] != hashes[1] {
		return fmt.Errorf("%s@%s: zip %s in %s, %s in %s", args[2], args[3], hashes[0], args[0], hashes[1], args[1])
	}
	return nil
}

func git(repo string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}
