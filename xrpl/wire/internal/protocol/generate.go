// Package protocol is the Go code protoc-gen-go generates from ripple.proto:
// the rippled peer-protocol messages package wire encodes and decodes.
//
// Regenerating needs protoc (apt-get install protobuf-compiler; 3.21.12 made
// the committed file) and protoc-gen-go at the version of
// google.golang.org/protobuf in go.mod:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
//	go generate ./xrpl/wire/...
package protocol

//go:generate protoc --go_out=. --go_opt=paths=source_relative ripple.proto
