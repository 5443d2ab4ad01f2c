//go:build osfaults

package osfaults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"
)

// fetchReport is the part of ledgerfetch -json's report that the harness
// checks. Unknown fields are ignored, so the report may grow.
type fetchReport struct {
	Strategy    string       `json:"strategy"`
	Root        string       `json:"root"`
	Complete    bool         `json:"complete"`
	Objects     int          `json:"objects"`
	Known       int          `json:"known"`
	Expected    int          `json:"expected"`
	Requests    int          `json:"requests"`
	Timeouts    int          `json:"timeouts"`
	Disconnects int          `json:"disconnects"`
	Retries     int          `json:"retries"`
	Hedges      int          `json:"hedges"`
	SendErrors  int          `json:"send_errors"`
	Error       string       `json:"error"`
	Peers       []peerReport `json:"peers"`
	// PeerEvents counts, by peer, the connections the fetch saw end; a peer
	// with none may be left out.
	PeerEvents map[string]peerEvents `json:"peer_events"`
}

type peerEvents struct {
	Disconnections int `json:"disconnections"`
}

type peerReport struct {
	ID       string `json:"id"`
	Requests int    `json:"requests"`
	Answered int    `json:"answered"`
	Failures int    `json:"failures"`
	Objects  int    `json:"objects"`
}

// peer returns the row of the peer named id (ledgerfetch -connect names a
// peer by its address), or a zero row.
func (r fetchReport) peer(id string) peerReport {
	for _, p := range r.Peers {
		if p.ID == id {
			return p
		}
	}
	return peerReport{ID: id}
}

// parseReport decodes ledgerfetch -json's output holding one fetch, in any
// of the shapes it has had: the report itself, a list of reports (one per
// strategy), or an object whose "runs" list holds them.
func parseReport(b []byte) (fetchReport, error) {
	b = bytes.TrimSpace(b)
	var runs []json.RawMessage
	switch {
	case len(b) == 0:
		return fetchReport{}, errors.New("no JSON report on stdout")
	case b[0] == '[':
		if err := json.Unmarshal(b, &runs); err != nil {
			return fetchReport{}, err
		}
	default:
		var wrapper struct {
			Runs []json.RawMessage `json:"runs"`
		}
		if err := json.Unmarshal(b, &wrapper); err != nil {
			return fetchReport{}, err
		}
		runs = wrapper.Runs
		if runs == nil {
			runs = []json.RawMessage{b}
		}
	}
	if len(runs) != 1 {
		return fetchReport{}, fmt.Errorf("want the report of one fetch, got %d", len(runs))
	}
	var r fetchReport
	err := json.Unmarshal(runs[0], &r)
	return r, err
}

// progress is what the harness reads from one of ledgerfetch's progress
// lines on stderr: how far the fetch is, and how many peers are connected.
type progress struct {
	percent float64
	peers   int
}

var (
	percentRE = regexp.MustCompile(`(\d+(?:\.\d+)?)%`)
	peersRE   = regexp.MustCompile(`peers (\d+)/\d+`)
)

// parseProgress reads a progress line; ok is false for any other line.
func parseProgress(line string) (p progress, ok bool) {
	pm, cm := percentRE.FindStringSubmatch(line), peersRE.FindStringSubmatch(line)
	if pm == nil || cm == nil {
		return progress{}, false
	}
	p.percent, _ = strconv.ParseFloat(pm[1], 64)
	p.peers, _ = strconv.Atoi(cm[1])
	return p, true
}

func TestParseReport(t *testing.T) {
	one := `{"strategy":"scheduler","complete":true,"objects":7,"timeouts":2,"disconnects":1,"retries":9,
		"peers":[{"id":"10.213.1.2:7001","failures":3}],"something_new":{"x":1},
		"peer_events":{"10.213.1.2:7001":{"disconnections":1,"kills":0}}}`
	for name, in := range map[string]string{
		"report":  one,
		"list":    "[" + one + "]",
		"wrapped": `{"runs":[` + one + `],"version":2}`,
	} {
		r, err := parseReport([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !r.Complete || r.Objects != 7 || r.Timeouts != 2 || r.Disconnects != 1 || r.Retries != 9 || r.peer("10.213.1.2:7001").Failures != 3 ||
			r.PeerEvents["10.213.1.2:7001"].Disconnections != 1 {
			t.Errorf("%s: decoded %+v", name, r)
		}
	}
	for _, bad := range []string{"", "[]", `{"runs":[]}`, "[" + one + "," + one + "]", "not json"} {
		if _, err := parseReport([]byte(bad)); err == nil {
			t.Errorf("parseReport(%q) succeeded", bad)
		}
	}
}

func TestParseProgress(t *testing.T) {
	for _, line := range []string{
		"[  4.0s] 25,169/81,351 objects  30.9%  5,636 obj/s  in flight 5  peers 2/3  retries 192",
		"[  4.0s] 25,169/81,351 objects  30.9%  5,636 obj/s  in flight 5 of 12 channels  peers 2/3  retries 192",
	} {
		p, ok := parseProgress(line)
		if !ok || p.percent != 30.9 || p.peers != 2 {
			t.Errorf("%q: got %+v, %v", line, p, ok)
		}
	}
	if _, ok := parseProgress("ledgerfetch: only 2 of 3 peers connected within 5s; fetching from those"); ok {
		t.Error("a warning read as progress")
	}
}
