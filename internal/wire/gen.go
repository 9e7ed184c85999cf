package wire

// The generated code is committed; neither the build nor the tests need protoc.
// Regenerating needs protoc (3.21 or later) and protoc-gen-go v1.36.12.
//go:generate protoc --proto_path=../.. --go_out=../.. --go_opt=paths=source_relative internal/wire/storage.proto
