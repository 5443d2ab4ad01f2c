// Package readme holds no code: its test keeps the README's embedding example
// true. It extracts the README's one Go program, builds it as a module of its
// own that requires the library (replaced by this checkout), vets it and runs
// it, so that the text a newcomer copies compiles and does what it says.
package readme
