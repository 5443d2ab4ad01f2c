// Package flatstore keeps a read-only copy of a node store in one file laid
// out for lookups by hash: each lookup is one pread of a few kilobytes and
// a scan of what it read, with no cache, no index blocks and no checksums
// to check. A peer that serves a large ledger from its node store answers
// every request with lookups at random across the whole store; through
// Pebble (nodestore/pebblestore) each one at 19 million entries cost about
// 9 µs of CPU (its block cache, its index and data blocks, a pread of a 4
// KiB block), most of what the peer spent on a node it sent.
//
// The file is the nodes sorted by hash, split into 2^bits buckets by the
// top bits of the hash, and a table of where each bucket starts, which Open
// reads into memory (8 bytes a bucket: 32 MiB at 19 million entries, with
// 2^22 buckets of about six nodes each). Node hashes are SHA-512-half, so
// the buckets fill evenly. Layout, all integers little-endian:
//
//	header (headerSize bytes):
//	  magic "XRPLFLAT", version (uint32), bucket bits (uint32),
//	  node count (uint64), data bytes (uint64), tag (32 bytes),
//	  CRC-32C of the table (uint32), CRC-32C of the header before it (uint32)
//	data (data bytes): entries in ascending order of hash, each
//	  hash (32 bytes), length (uint32), node (length bytes)
//	table (2^bits + 1 uint64): table[b] is the offset in data of the first
//	  entry whose bucket is b or later; the last is data bytes
//
// The tag is the caller's: ledgerpeer records the ledger's root there, and
// with the node count it tells a file built from the store it serves from
// a stale one. Open checks the header, the file's size against it, and the
// table. A bucket damaged since is caught only where its entries' lengths
// no longer fit it: the lookup that reads it then fails with an error
// wrapping ErrFormat. A damaged hash reads as one not held, and a damaged
// node is returned as it is: the nodes themselves are not checked, and
// whoever reads them verifies them, as a fetch does every node it
// receives.
//
// Build writes a file atomically: to a temporary name beside it, synced,
// then renamed, so a file that Open accepts was written whole.
package flatstore
