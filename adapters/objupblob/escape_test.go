package objupblob

import "testing"

// TestEscapeKey: keys are escaped as gcsblob escapes them (its
// escapeKey over the Go CDK's HexEscape), byte for byte.
func TestEscapeKey(t *testing.T) {
	tests := []struct{ key, want string }{
		{"plain/key.txt", "plain/key.txt"},
		{"", ""},
		{"line\nfeed", "line__0xa__feed"},
		{"carriage\rreturn", "carriage__0xd__return"},
		{"../foo/../bar/../../baz../", "..__0x2f__foo/..__0x2f__bar/..__0x2f__..__0x2f__baz..__0x2f__"},
		{"..", ".."},
		{"./a/.b/", "./a/.b/"},
		{"a__0x41__b", "a__0x5f___0x41__b"},
		{"a__0x__b", "a__0x__b"},
		{"a__0xzz__b", "a__0xzz__b"},
		{"a__0x41_", "a__0x41_"},
		{"__0x1__", "__0x5f___0x1__"},
		{"ünïcödé/日本", "ünïcödé/日本"},
		{"foo//bar///baz", "foo//bar///baz"},
	}
	for _, tc := range tests {
		if got := escapeKey(tc.key); got != tc.want {
			t.Errorf("escapeKey(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}
