module github.com/objup/objup/cmd/objup

go 1.26.0

require (
	github.com/objup/objup v0.1.0
	github.com/objup/objup/fakes v0.1.0
)
