package wire

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// AppendChatter appends a whole frame of a message rippled sends a peer
// unprompted, numbered n, for test peers that behave as a real one does:
// TypeStatusChange (the sender monitoring ledger n), TypeManifests (one
// manifest), TypeEndpoints (one endpoint) or TypePing (a Ping with seq n,
// which asks for a Pong). The payloads are well-formed protobuf with
// rippled's field numbers and plausible values; a receiver of this package
// decodes only the Ping and skips the rest. It fails, leaving dst as it was,
// with ErrUnknownType for any other type.
func AppendChatter(dst []byte, t Type, n uint32) ([]byte, error) {
	var p []byte
	switch t {
	case TypePing:
		return AppendMessage(dst, uint64(n), Ping{})
	case TypeStatusChange:
		// TMStatusChange: newStatus (1) nsMONITORING, ledgerSeq (3).
		p = protowire.AppendTag(p, 1, protowire.VarintType)
		p = protowire.AppendVarint(p, 3)
		p = protowire.AppendTag(p, 3, protowire.VarintType)
		p = protowire.AppendVarint(p, uint64(n))
	case TypeManifests:
		// TMManifests: list (1) of TMManifest, each an stobject (1).
		var manifest []byte
		manifest = protowire.AppendTag(manifest, 1, protowire.BytesType)
		manifest = protowire.AppendBytes(manifest, fmt.Appendf(nil, "manifest %d", n))
		p = protowire.AppendTag(p, 1, protowire.BytesType)
		p = protowire.AppendBytes(p, manifest)
	case TypeEndpoints:
		// TMEndpoints: version (1) 2, endpoints_v2 (3) of TMEndpointv2,
		// each an endpoint (1) and its hops (2).
		var ep []byte
		ep = protowire.AppendTag(ep, 1, protowire.BytesType)
		ep = protowire.AppendBytes(ep, fmt.Appendf(nil, "10.%d.%d.%d:51235", n>>16&0xff, n>>8&0xff, n&0xff))
		ep = protowire.AppendTag(ep, 2, protowire.VarintType)
		ep = protowire.AppendVarint(ep, 1)
		p = protowire.AppendTag(p, 1, protowire.VarintType)
		p = protowire.AppendVarint(p, 2)
		p = protowire.AppendTag(p, 3, protowire.BytesType)
		p = protowire.AppendBytes(p, ep)
	default:
		return dst, fmt.Errorf("%w: %v is not chatter", ErrUnknownType, t)
	}
	return AppendFrame(dst, Frame{Type: t, Payload: p})
}
