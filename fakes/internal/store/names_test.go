package store

import (
	"strings"
	"testing"
)

func TestCheckBucketName(t *testing.T) {
	for name, ok := range map[string]bool{
		"abc":                          true,
		"a-b_c.d":                      true,
		"0ab":                          true,
		strings.Repeat("a", 63):        true,
		strings.Repeat("a", 64):        false,
		strings.Repeat("a.", 40) + "a": true,
		"ab":                           false,
		"Abc":                          false,
		"-ab":                          false,
		"ab-":                          false,
		"a..b":                         false,
		"a/b":                          false,
		"goog-x":                       false,
		"projects/_/buckets/abc":       false,
	} {
		if err := CheckBucketName(name); (err == nil) != ok {
			t.Errorf("CheckBucketName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
