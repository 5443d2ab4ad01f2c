package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/peersched/peersched/xrpl/fetch"
)

// progressEvery is how often the fetch reports progress; a terminal shows
// every report, a file or pipe one line a second.
const progressEvery = 250 * time.Millisecond

// progressPrinter shows a fetch's progress on w: one line rewritten in place
// with \r on a terminal, plain lines once a second otherwise.
type progressPrinter struct {
	w      io.Writer
	tty    bool
	label  string // the strategy, when several run
	peers  int
	next   time.Duration // plain mode: when the next line is due
	shown  bool
	maxLen int
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progressPrinter) show(pr fetch.Progress) {
	total := pr.Expected
	if total == 0 {
		total = pr.Known
	}
	pct := 0.0
	if total > 0 {
		pct = 100 * float64(pr.Verified) / float64(total)
	}
	line := fmt.Sprintf("[%5.1fs] %s%s/%s objects %5.1f%%  %s obj/s  in flight %d of %d channels  peers %d/%d  retries %s",
		pr.Elapsed.Seconds(), p.label, commas(pr.Verified), commas(total), pct, commas(int(pr.Rate)), pr.InFlight, pr.Channels, pr.Peers, p.peers, commas(pr.Retries))
	if p.tty {
		pad := max(p.maxLen-len(line), 0)
		p.maxLen = max(p.maxLen, len(line))
		fmt.Fprintf(p.w, "\r%s%*s", line, pad, "")
		if pr.Done {
			fmt.Fprintln(p.w)
		}
		return
	}
	if pr.Elapsed >= p.next || (pr.Done && !p.shown) {
		fmt.Fprintln(p.w, line)
		p.next = pr.Elapsed.Truncate(time.Second) + time.Second
		p.shown = true
	}
}

// commas formats n with thousands separators.
func commas(n int) string {
	s := strconv.Itoa(n)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return neg + s
}
