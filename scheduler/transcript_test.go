package scheduler

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Transcript tests: each file in testdata/transcripts is a script of
// commands, each followed by "----" and the output it must print. Run with
// -update to rewrite the expected output from what the scheduler does now.
//
// Commands:
//
//	connect <peer> <channels>
//	disconnect <peer>
//	fail <peer> on|off                      the host refuses sends to peer
//	schedule <sender> [prio=N] [timeout=D] [digest=D] [only=P,...] [avoid=P,...] [min=N] <plan>...
//	respond <peer> <request> [payload]
//	advance <duration>
//	withdraw <sender or request>
//	reoffer <sender>
//	stop
//	stats
//
// A sender's plan says what it does with each offer in turn; once the plan
// is used up it declines. A step aimed at a peer that the offer does not
// list is kept for the next offer. Steps: decline, request, request@<peer>,
// request-all, notify, notify@<peer>, and again (decline, asking for
// another offer from inside this one). Requests are named r1, r2, ... in
// the order they are sent. only, avoid and min are the sender's wants
// (offer.Options).
var update = flag.Bool("update", false, "rewrite the expected output of transcript tests")

func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			blocks := parseTranscript(t, file)
			synctest.Test(t, func(t *testing.T) {
				r := newTranscriptRunner(t)
				for i := range blocks {
					got := r.run(blocks[i].command)
					if *update {
						blocks[i].output = got
						continue
					}
					require.Equal(t, blocks[i].output, got, "%s:%d: %s", file, blocks[i].line, blocks[i].command)
				}
				r.s.Stop()
			})
			if *update {
				writeTranscript(t, file, blocks)
			}
		})
	}
}

type transcriptBlock struct {
	line    int
	command string
	output  string
}

func parseTranscript(t *testing.T, file string) []transcriptBlock {
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var blocks []transcriptBlock
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		b := transcriptBlock{line: n, command: line}
		require.True(t, sc.Scan(), "%s:%d: command without ----", file, n)
		n++
		require.Equal(t, "----", sc.Text(), "%s:%d", file, n)
		var out []string
		for sc.Scan() {
			n++
			if sc.Text() == "" {
				break
			}
			out = append(out, sc.Text())
		}
		b.output = strings.Join(out, "\n")
		blocks = append(blocks, b)
	}
	require.NoError(t, sc.Err())
	return blocks
}

// writeTranscript rewrites file with new outputs, keeping its comments at the top.
func writeTranscript(t *testing.T, file string, blocks []transcriptBlock) {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var b strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		b.WriteString(line + "\n")
	}
	for _, blk := range blocks {
		fmt.Fprintf(&b, "\n%s\n----\n", blk.command)
		if blk.output != "" {
			b.WriteString(blk.output + "\n")
		}
	}
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o644))
}

type transcriptRunner struct {
	t        *testing.T
	clock    *clock.Mock
	s        *Scheduler
	peers    map[peer.ID]*hostPeer
	senders  map[string]offer.Ticket
	requests map[string]peer.RequestID
	names    map[peer.RequestID]string
	out      []string
}

func newTranscriptRunner(t *testing.T) *transcriptRunner {
	mock := clock.NewMock()
	s, err := New(Config{Clock: mock, InlineCallbacks: true, RankSeed: testRankSeed})
	require.NoError(t, err)
	return &transcriptRunner{
		t: t, clock: mock, s: s,
		peers:    map[peer.ID]*hostPeer{},
		senders:  map[string]offer.Ticket{},
		requests: map[string]peer.RequestID{},
		names:    map[peer.RequestID]string{},
	}
}

func (r *transcriptRunner) printf(format string, args ...any) {
	r.out = append(r.out, fmt.Sprintf(format, args...))
}

func (r *transcriptRunner) run(command string) string {
	r.out = r.out[:0]
	args := strings.Fields(command)
	switch args[0] {
	case "connect":
		channels, err := strconv.Atoi(args[2])
		require.NoError(r.t, err)
		p := &hostPeer{id: peer.ID(args[1])}
		if err := r.s.Connect(p, channels); err != nil {
			r.printf("error: %v", err)
		} else {
			r.peers[p.id] = p
		}
	case "disconnect":
		if err := r.s.Disconnect(peer.ID(args[1])); err != nil {
			r.printf("error: %v", err)
		}
	case "fail":
		p := r.peers[peer.ID(args[1])]
		p.mu.Lock()
		p.fail = nil
		if args[2] == "on" {
			p.fail = errRefused
		}
		p.mu.Unlock()
	case "schedule":
		r.schedule(args[1], args[2:])
	case "respond":
		id, ok := r.requests[args[2]]
		if !ok {
			n, err := strconv.ParseUint(args[2], 10, 64)
			require.NoError(r.t, err, "unknown request %s", args[2])
			id = peer.RequestID(n)
		}
		payload := "ok"
		if len(args) > 3 {
			payload = strings.Join(args[3:], " ")
		}
		if err := r.s.Deliver(peer.ID(args[1]), id, payload); err != nil {
			r.printf("dropped: %v", err)
		}
	case "advance":
		d, err := time.ParseDuration(args[1])
		require.NoError(r.t, err)
		synctest.Wait()
		r.clock.Add(d)
		synctest.Wait()
	case "reoffer":
		r.printf("reoffered: %v", r.s.Reoffer(r.senders[args[1]]))
	case "withdraw":
		if t, ok := r.senders[args[1]]; ok {
			r.printf("withdrawn: %v", r.s.WithdrawSender(t))
		} else {
			r.printf("withdrawn: %v", r.s.WithdrawReceiver(r.requests[args[1]]))
		}
	case "stop":
		r.s.Stop()
	case "stats":
		st := r.s.Stats()
		r.printf("peers=%d open=%d closed=%d waiting=%d parked=%d inflight=%d", st.Peers, st.ChannelsOpen, st.ChannelsClosed,
			st.SendersWaiting, st.SendersParked, st.RequestsInFlight)
		r.printf("sent=%d notified=%d ok=%d timeout=%d disconnected=%d shutdown=%d late=%d unknown=%d wrong-peer=%d duplicate=%d",
			st.Sent, st.Notified, st.Succeeded, st.TimedOut, st.Disconnected, st.Shutdown, st.Late, st.Unknown, st.WrongPeer, st.Duplicate)
	default:
		r.t.Fatalf("unknown command %q", command)
	}
	return strings.Join(r.out, "\n")
}

func (r *transcriptRunner) schedule(name string, args []string) {
	priority, timeout, digest := 0, 10*time.Second, time.Second
	var opts offer.Options
	var plan []string
	for _, a := range args {
		key, value, isOption := strings.Cut(a, "=")
		var err error
		switch {
		case !isOption:
			plan = append(plan, a)
		case key == "prio":
			priority, err = strconv.Atoi(value)
		case key == "timeout":
			timeout, err = time.ParseDuration(value)
		case key == "digest":
			digest, err = time.ParseDuration(value)
		case key == "only":
			for _, id := range strings.Split(value, ",") {
				opts.Only = append(opts.Only, peer.ID(id))
			}
		case key == "avoid":
			for _, id := range strings.Split(value, ",") {
				opts.Avoid = append(opts.Avoid, peer.ID(id))
			}
		case key == "min":
			opts.MinChannels, err = strconv.Atoi(value)
		default:
			r.t.Fatalf("unknown option %q", a)
		}
		require.NoError(r.t, err)
	}
	snd := &transcriptSender{r: r, name: name, plan: plan, timeout: timeout, digest: digest}
	ticket, err := r.s.ScheduleWith(snd, priority, opts)
	if err != nil {
		r.printf("error: %v", err)
		return
	}
	r.senders[name] = ticket
}

// transcriptSender follows its plan and prints what it sees and does.
type transcriptSender struct {
	r               *transcriptRunner
	name            string
	plan            []string
	timeout, digest time.Duration
}

func (ts *transcriptSender) OnOffer(o offer.Offer) {
	r := ts.r
	var listed []string
	for i := range o.Len() {
		c, _ := o.Channel(i)
		listed = append(listed, string(c.Peer))
	}
	r.printf("offer to %s, size %d: %s", ts.name, o.Size(), strings.Join(listed, " "))
	step := "decline"
	if len(ts.plan) > 0 {
		step = ts.plan[0]
	}
	action, target, _ := strings.Cut(step, "@")
	switch action {
	case "decline":
		r.printf("  %s declines", ts.name)
	case "again":
		r.printf("  %s declines and asks again: %v", ts.name, r.s.Reoffer(r.senders[ts.name]))
	case "request", "notify":
		for i := range o.Len() {
			if c, _ := o.Channel(i); target == "" || string(c.Peer) == target {
				ts.send(o, i, action)
				ts.next()
				return
			}
		}
		// Waiting for a particular peer: the step stays for the next offer.
		r.printf("  %s finds no channel to %s and declines", ts.name, target)
		return
	case "request-all":
		for i := range o.Size() {
			ts.send(o, i, "request")
		}
	default:
		r.t.Fatalf("unknown plan step %q", step)
	}
	ts.next()
}

// next moves the sender on to the following step of its plan.
func (ts *transcriptSender) next() {
	if len(ts.plan) > 0 {
		ts.plan = ts.plan[1:]
	}
}

func (ts *transcriptSender) send(o offer.Offer, i int, action string) {
	r := ts.r
	c, _ := o.Channel(i)
	if action == "notify" {
		if err := o.Notify(i, "note from "+ts.name, ts.digest); err != nil {
			r.printf("  %s notify %s: error: %v", ts.name, c.Peer, err)
			return
		}
		r.printf("  %s notifies %s", ts.name, c.Peer)
		return
	}
	id, err := o.Request(i, "request from "+ts.name, ts, ts.timeout)
	if err != nil {
		r.printf("  %s request %s: error: %v", ts.name, c.Peer, err)
		return
	}
	name := fmt.Sprintf("r%d", len(r.requests)+1)
	r.requests[name], r.names[id] = id, name
	r.printf("  %s sends %s to %s", ts.name, name, c.Peer)
}

func (ts *transcriptSender) OnDiscard() { ts.r.printf("%s discarded", ts.name) }

func (ts *transcriptSender) OnResponse(id peer.RequestID, from peer.ID, response any) {
	ts.r.printf("%s: response from %s to %s: %v", ts.r.names[id], from, ts.name, response)
}

func (ts *transcriptSender) OnFailure(id peer.RequestID, from peer.ID, reason receiver.Reason) {
	ts.r.printf("%s: %s failed at %s: %v", ts.r.names[id], ts.name, from, reason)
}
