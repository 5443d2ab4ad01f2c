package main

import (
	"strings"
	"testing"

	"github.com/peersched/peersched/xrpl/fetch"
)

// TestReportPrintsRefusals: the failures line counts the requests busy
// peers refused (fetch.Report.Refused) next to the timeouts, apart from
// the sends the transport refused.
func TestReportPrintsRefusals(t *testing.T) {
	var out strings.Builder
	writeReport(&out, result{Report: fetch.Report{Strategy: "scheduler", Timeouts: 3, Refused: 1234, Disconnects: 5,
		BadResponses: 2, SendErrors: 1}})
	const want = "  failures     3 timed out, 1,234 refused by busy peers, 5 by disconnection, 2 of the wrong type, 1 sends refused\n"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("report lacks\n%s\nin\n%s", want, out.String())
	}
}

// TestReportPrintsWrongTypesDropped: the dropped line counts the responses
// the scheduler refused for their type (fetch.Dropped.WrongType), apart
// from the failures, since their requests went on.
func TestReportPrintsWrongTypesDropped(t *testing.T) {
	var out strings.Builder
	writeReport(&out, result{Report: fetch.Report{Strategy: "scheduler",
		Dropped: fetch.Dropped{Duplicate: 1, Late: 2, WrongType: 3, Spoofed: 9, WrongPeer: 4, Unknown: 5}}})
	const want = "  dropped      1 duplicate, 2 late, 3 of the wrong type, 9 spoofed (4 wrong peer, 5 unknown ID) responses\n"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("report lacks\n%s\nin\n%s", want, out.String())
	}
}
