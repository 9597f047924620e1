package periodic

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/structs"
)

type recorder struct {
	mu       sync.Mutex
	launches []string
	running  bool
}

func (r *recorder) launch(job *structs.Job, t time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.launches = append(r.launches, structs.PeriodicChildID(job.ID, t))
	return nil
}

func (r *recorder) childRunning(*structs.Job) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running, nil
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.launches...)
}

func periodicJob(id, spec, tz string, overlap bool) *structs.Job {
	return &structs.Job{Namespace: "default", ID: id, Type: structs.JobTypeBatch,
		Periodic: &structs.PeriodicConfig{Spec: &spec, TimeZone: &tz, ProhibitOverlap: &overlap}}
}

func newTest(t *testing.T, start time.Time) (*Dispatcher, *clock.Fake, *recorder) {
	t.Helper()
	fc := clock.NewFake(start)
	r := &recorder{}
	d := New(Config{Clock: fc, Launch: r.launch, ChildRunning: r.childRunning})
	d.SetEnabled(true)
	return d, fc, r
}

func equal(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("launches = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("launches = %v, want %v", got, want)
		}
	}
}

var t0 = time.Date(2030, 1, 1, 10, 0, 30, 0, time.UTC)

func TestEveryMinuteFires(t *testing.T) {
	d, fc, r := newTest(t, t0)
	d.Add(periodicJob("cron", "* * * * *", "", false))
	if next, ok := d.NextLaunch("default", "cron"); !ok || !next.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("next launch = %v %v, want 10:01:00", next, ok)
	}
	fc.Advance(29 * time.Second)
	equal(t, r.got())
	fc.Advance(time.Second)
	m1 := time.Date(2030, 1, 1, 10, 1, 0, 0, time.UTC).Unix()
	equal(t, r.got(), "cron/periodic-"+itoa(m1))
	fc.Advance(2 * time.Minute)
	equal(t, r.got(), "cron/periodic-"+itoa(m1), "cron/periodic-"+itoa(m1+60), "cron/periodic-"+itoa(m1+120))
}

func TestProhibitOverlapSkipsWhileChildRuns(t *testing.T) {
	d, fc, r := newTest(t, t0)
	d.Add(periodicJob("batch", "* * * * *", "", true))
	r.running = true
	fc.Advance(90 * time.Second) // 10:01 and 10:02 are due; a child still runs
	equal(t, r.got())
	r.running = false
	fc.Advance(time.Minute) // 10:03
	equal(t, r.got(), "batch/periodic-"+itoa(time.Date(2030, 1, 1, 10, 3, 0, 0, time.UTC).Unix()))

	// Without prohibit_overlap a running child does not hold launches back.
	d.Add(periodicJob("free", "* * * * *", "", false))
	r.running = true
	fc.Advance(time.Minute)
	if got := r.got(); len(got) != 2 || got[1] != "free/periodic-"+itoa(time.Date(2030, 1, 1, 10, 4, 0, 0, time.UTC).Unix()) {
		t.Fatalf("launches = %v", got)
	}
}

func TestTimeZoneRespected(t *testing.T) {
	// 09:00 every day in New York is 14:00 UTC in January.
	d, fc, r := newTest(t, time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	d.Add(periodicJob("ny", "0 9 * * *", "America/New_York", false))
	want := time.Date(2030, 1, 1, 14, 0, 0, 0, time.UTC)
	if next, _ := d.NextLaunch("default", "ny"); !next.Equal(want) {
		t.Fatalf("next launch = %v, want %v", next.UTC(), want)
	}
	fc.Advance(2*time.Hour - time.Second)
	equal(t, r.got())
	fc.Advance(time.Second)
	equal(t, r.got(), "ny/periodic-"+itoa(want.Unix()))
}

func TestMultipleSpecsTakeEarliest(t *testing.T) {
	d, _, _ := newTest(t, t0)
	j := periodicJob("multi", "", "", false)
	j.Periodic.Spec = nil
	j.Periodic.Specs = []string{"0 12 * * *", "15 10 * * *"}
	d.Add(j)
	if next, _ := d.NextLaunch("default", "multi"); !next.Equal(time.Date(2030, 1, 1, 10, 15, 0, 0, time.UTC)) {
		t.Fatalf("next launch = %v", next)
	}
}

func TestRemoveStopAndDisable(t *testing.T) {
	d, fc, r := newTest(t, t0)
	d.Add(periodicJob("a", "* * * * *", "", false))
	b := periodicJob("b", "* * * * *", "", false)
	d.Add(b)
	d.Remove("default", "a")
	stopped := b.Copy()
	stopped.Stop = true
	d.Add(stopped) // a stopped parent is forgotten
	if n := len(d.Tracked()); n != 0 {
		t.Fatalf("tracked %d jobs after remove and stop", n)
	}
	d.Add(periodicJob("c", "* * * * *", "", false))
	d.SetEnabled(false)
	fc.Advance(5 * time.Minute)
	equal(t, r.got())
	if fc.Pending() != 0 {
		t.Fatalf("%d timers left armed after disable", fc.Pending())
	}
	d.Add(periodicJob("d", "* * * * *", "", false)) // disabled: ignored
	if n := len(d.Tracked()); n != 0 {
		t.Fatalf("disabled dispatcher tracks %d jobs", n)
	}
}

// A new leader catches up a launch missed while no leader ran: once, now.
func TestRestoreCatchesUpMissedLaunch(t *testing.T) {
	d, fc, r := newTest(t, t0)
	job := periodicJob("cron", "*/5 * * * *", "", false)
	// Last launch at 09:50; 09:55 and 10:00 were missed.
	launched, err := d.Restore(job, time.Date(2030, 1, 1, 9, 50, 0, 0, time.UTC))
	if err != nil || !launched {
		t.Fatalf("restore launched=%v err=%v, want a catch-up launch", launched, err)
	}
	equal(t, r.got(), "cron/periodic-"+itoa(t0.Unix()))
	// Then the regular schedule resumes at 10:05.
	fc.Advance(4*time.Minute + 30*time.Second)
	equal(t, r.got(), "cron/periodic-"+itoa(t0.Unix()), "cron/periodic-"+itoa(time.Date(2030, 1, 1, 10, 5, 0, 0, time.UTC).Unix()))

	// Last launch at 10:00, next at 10:05: nothing missed.
	d2, _, r2 := newTest(t, t0)
	if launched, _ := d2.Restore(job, time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)); launched {
		t.Fatalf("restore launched though the next launch (10:00) is not past (10:05)")
	}
	equal(t, r2.got())
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
